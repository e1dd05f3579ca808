import os
import queue
import threading

import uvicorn
from webhook_receiver import receiver  # the ten lines below

from sluice_api.api.customers import post_v1_customers as customers
from sluice_api.api.sandbox import post_v1_sandbox_deposits as deposits
from sluice_api.api.transfers import get_v1_transfers_by_transfer_id as transfer_by_id
from sluice_api.api.transfers import post_v1_transfers as transfers
from sluice_api.api.virtual_accounts import post_v1_virtual_accounts as virtual_accounts
from sluice_api.api.wallets import get_v1_wallets_by_wallet_id as wallet_by_id
from sluice_api.api.wallets import post_v1_wallets as wallets
from sluice_api.api.webhooks import post_v1_webhooks as webhooks
from sluice_sdk import Config, Sluice, new_key

sluice = Sluice(Config.from_env())  # SLUICE_API_URL, SLUICE_SANDBOX_KEY=sk_test_...
port, events = int(os.environ.get("RECEIVER_PORT", "8787")), queue.Queue()
hook = sluice.call(webhooks.sync_detailed, body={"endpoint_url": f"http://127.0.0.1:{port}/hooks"}).data
app = receiver(hook.signing_secret, events.put)
threading.Thread(target=uvicorn.run, args=(app,), kwargs={"port": port}, daemon=True).start()
ada = {"account_type": "individual", "email": "ada@example.com", "country_code": "US", "full_name": "Ada"}
ids = [sluice.call(customers.sync_detailed, body={**ada, "service_user_id": new_key()}).data for _ in "ab"]
usdc = {"symbol": "USDC", "chain": "BASE"}
a, b = [sluice.call(wallets.sync_detailed, body={"customer_id": c.customer_id, **usdc}).data for c in ids]
to_a = {"rail": "stablecoin", "currency": "USDC", "address": a.deposit_address}
va_body = {"customer_id": ids[0].customer_id, "currency": "USD", "destination": to_a}
va = sluice.call(virtual_accounts.sync_detailed, body=va_body).data
sluice.call(deposits.sync_detailed, body={"virtual_account_id": va.virtual_account_id, "amount": "100.00"})
rail = {"payment_rail": "provider_wallet", "currency": "USDC"}
move = {"source": {**rail, "amount": "25.00", "provider_wallet_id": a.wallet_id}}
move["idempotency_key"] = new_key()  # one per transfer, reused on every retry
move["destination"] = {**rail, "provider_wallet_id": b.wallet_id}
tr = sluice.call(transfers.sync_detailed, body=move).data
print("transfer", sluice.call(transfer_by_id.sync_detailed, transfer_id=tr.transfer_id).data.state)
for w in (a, b):
    print("balance", sluice.call(wallet_by_id.sync_detailed, wallet_id=w.wallet_id).data.available_balance)
event = events.get(timeout=60)  # every event type, delivered by the suite, verified by the receiver
while event["type"] != "transfer.created":
    event = events.get(timeout=60)
print("webhook", event["type"], event["data"]["transfer_id"] == tr.transfer_id)
