"""POST /v1/customers."""

from __future__ import annotations

import msgspec

from common.contracts.commands import CreateCustomer
from common.errors import invalid
from common.ids import new_id
from common.topics import Topic
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import body_of, stamp
from gateway.schemas import CustomerCreate, CustomerCreated


def build_create(call: Call) -> CreateCustomer:
    p = body_of(call, CustomerCreate)
    if p.account_type == "individual" and not p.full_name:
        raise invalid("full_name", "full_name is required when account_type is individual")
    if p.account_type == "business" and not p.company_name:
        raise invalid("company_name", "company_name is required when account_type is business")
    # The request's fields are the command's, as they are (as onboarding's signup sends them).
    return CreateCustomer(**stamp(call), customer_id=new_id("cus"), **msgspec.structs.asdict(p))


ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/customers",
        "customers:write",
        build_create,
        Topic.COMPLIANCE_COMMANDS,
        summary="Create a customer (individual or business)",
        request=CustomerCreate,
        response=CustomerCreated,
        status=201,
    ),
]
