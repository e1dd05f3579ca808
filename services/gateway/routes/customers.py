"""POST /v1/customers."""

from __future__ import annotations

from common.contracts.commands import CreateCustomer
from common.errors import invalid
from common.ids import new_id
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import body_of
from gateway.schemas import CustomerCreate, CustomerCreated


def build_create(call: Call) -> CreateCustomer:
    p = body_of(call, CustomerCreate)
    if p.account_type == "individual" and not p.full_name:
        raise invalid("full_name", "full_name is required when account_type is individual")
    if p.account_type == "business" and not p.company_name:
        raise invalid("company_name", "company_name is required when account_type is business")
    return CreateCustomer(
        command_id=new_id("cmd"),
        ctx=call.ctx,
        customer_id=new_id("cus"),
        account_type=p.account_type,
        email=p.email,
        country_code=p.country_code,
        service_user_id=p.service_user_id,
        full_name=p.full_name,
        company_name=p.company_name,
        registration_number=p.registration_number,
        phone_e164=p.phone_e164,
    )


ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/customers",
        "customers:write",
        build_create,
        "compliance_commands",
        summary="Create a customer (individual or business)",
        request=CustomerCreate,
        response=CustomerCreated,
        status=201,
    ),
]
