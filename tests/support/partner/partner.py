"""A partner's script, type-checked (mypy --strict) and run from the installed wheel by
tests/integration/test_sdk_packaging.py: nothing of this repository is on its path."""

import os

from sluice_api.api.customers import post_v1_customers
from sluice_api.models import CustomerCreate, CustomerCreateAccountType
from sluice_sdk import Config, Sluice, new_key

config = Config(api_key=os.environ["SLUICE_SANDBOX_KEY"], base_url=os.environ["SLUICE_API_URL"])
with Sluice(config) as sluice:
    body = CustomerCreate(
        account_type=CustomerCreateAccountType.INDIVIDUAL,
        email="ada@example.com",
        country_code="US",
        service_user_id=new_key(),
        full_name="Ada",
    )
    customer = sluice.call(post_v1_customers.sync_detailed, body=body).data
    name: str = customer.customer_id
    print("customer", name.startswith("cus_"))
