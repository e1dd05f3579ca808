"""POST /v1/customers."""

from __future__ import annotations

from common.contracts.commands import CreateCustomer
from common.ids import new_id
from common.topics import Topic
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import body_of, stamp
from gateway.schemas import Customer, CustomerCreate, customer_fields


def build_create(call: Call) -> CreateCustomer:
    # An individual's full_name and a business's company_name are required by the union's
    # cases (gateway.schemas), so the document states the rule the server applies.
    p: CustomerCreate = body_of(call, CustomerCreate)  # type: ignore[arg-type]  # a union is not a type[T] (PEP 747)
    # The request's fields are the command's, as they are (as onboarding's signup sends them).
    return CreateCustomer(**stamp(call), customer_id=new_id("cus"), **customer_fields(p))


ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/customers",
        "customers:write",
        build_create,
        Topic.COMPLIANCE_COMMANDS,
        summary="Create a customer (individual or business)",
        request=CustomerCreate,
        response=Customer,
        status=201,
    ),
]
