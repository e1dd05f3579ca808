import os
import queue
import threading

from webhook_receiver import receiver  # the lines below

from sluice_sdk import Config, Sluice, WebhookEvent, new_key

sluice = Sluice(Config.from_env())  # SLUICE_API_URL, SLUICE_SANDBOX_KEY=sk_test_...
port, events = int(os.environ.get("RECEIVER_PORT", "8787")), queue.Queue[WebhookEvent]()
hook = sluice.webhooks.create(endpoint_url=f"http://127.0.0.1:{port}/hooks")
server = receiver(port, hook["signing_secret"], events.put)
threading.Thread(target=server.serve_forever, daemon=True).start()
ca, cb = [
    sluice.customers.create(
        account_type="individual",
        email="ada@example.com",
        country_code="US",
        full_name="Ada",
        service_user_id=new_key(),
    )
    for _ in "ab"
]
a, b = [sluice.wallets.create(customer_id=c["customer_id"], symbol="USDC", chain="BASE") for c in (ca, cb)]
va = sluice.virtual_accounts.create(
    customer_id=ca["customer_id"],
    currency="USD",
    destination={"rail": "stablecoin", "currency": "USDC", "address": a["deposit_address"]},
)
sluice.sandbox_deposits.create(virtual_account_id=va["virtual_account_id"], amount="100.00")
tr = sluice.transfers.create(
    source={
        "payment_rail": "provider_wallet",
        "currency": "USDC",
        "amount": "25.00",
        "provider_wallet_id": a["wallet_id"],
    },
    destination={"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": b["wallet_id"]},
    options={"idempotency_key": new_key()},  # keep it with the order: one key, reused on every retry
)
print("transfer", sluice.transfers.retrieve(tr["transfer_id"])["state"])
for w in (a, b):
    print("balance", sluice.wallets.retrieve(w["wallet_id"]).get("available_balance"))
event = events.get(timeout=60)  # every event type, delivered by the suite, verified by the receiver
while event["type"] != "transfer.created":
    event = events.get(timeout=60)
if event["type"] == "transfer.created":  # typed from here: event["data"] is a Transfer
    print("webhook", event["type"], event["data"]["transfer_id"] == tr["transfer_id"])
