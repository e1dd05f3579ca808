"""A partner's script, type-checked (mypy --strict) and run from the installed wheel by
tests/integration/test_sdk_packaging.py: nothing of this repository is on its path."""

import os

from sluice_sdk import Config, Sluice, new_key, sign_test_event, verify_webhook

config = Config(api_key=os.environ["SLUICE_SANDBOX_KEY"], base_url=os.environ["SLUICE_API_URL"])
with Sluice(config) as sluice:
    customer = sluice.customers.create(
        account_type="individual",
        email="ada@example.com",
        country_code="US",
        service_user_id=new_key(),
        full_name="Ada",
        options={"timeout": 60, "max_attempts": 4},
    )
    name: str = customer["customer_id"]
    listed = [c["customer_id"] for c in sluice.customers.list(limit=100)]
    print("customer", name.startswith("cus_") and name in listed)
    page = sluice.customers.list_page(limit=1)  # one page, with its cursor
    first: list[str] = [c["customer_id"] for c in page.data]
    print("page", first == listed[:1], page.has_more == (len(listed) > 1))
    hook = sluice.webhooks.create(endpoint_url="http://127.0.0.1:9/hook")
    paused = sluice.webhooks.update(hook["webhook_id"], status="disabled")
    gone = sluice.webhooks.delete(hook["webhook_id"])
    print("endpoint", paused["status"], gone["status"])

secret = "whsec_" + "a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U="
delivery = sign_test_event(
    secret, {"type": "transfer.updated", "data": {"transfer_id": "tr_1", "state": "completed"}}
)
event = verify_webhook(delivery.body, delivery.headers, secret)
if event["type"] == "transfer.updated":
    state: str = event["data"]["state"]
    print("event", event["type"], state)
