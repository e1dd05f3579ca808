"""Every operation of the API once, in the order a partner meets them. The API reference shows
the lines between ``# [<operationId>]`` and ``# [end]`` as that operation's Python sample; the
project's tests run this file against a sandbox. Set SLUICE_API_URL, SLUICE_SANDBOX_KEY
(sk_test_...) and, for the payout, SLUICE_EXTERNAL_ACCOUNT_ID (a customer's bank account an
operator approved) and SLUICE_PAYOUT_WALLET_ID (a funded wallet of that customer)."""

import os

from sluice_sdk import Config, Sluice, new_key

external_account_id = os.environ["SLUICE_EXTERNAL_ACCOUNT_ID"]
payout_wallet_id = os.environ["SLUICE_PAYOUT_WALLET_ID"]
# [get_v1_health]
sluice = Sluice(Config.from_env())  # SLUICE_API_URL, SLUICE_SANDBOX_KEY=sk_test_...
health = sluice.health.retrieve()
print(health["mode"], health["tenant_id"])
# [end]
# [post_v1_customers]
created = sluice.customers.create(
    account_type="individual",
    email="ada@example.com",
    country_code="US",
    full_name="Ada Lovelace",
    service_user_id="user-1815",  # your own id for this person
)
# [end]
# [get_v1_customers_by_customer_id]
customer = sluice.customers.retrieve(created["customer_id"])
# [end]
# [get_v1_customers]
for listed in sluice.customers.list(limit=100):  # every page, newest first
    print(listed["customer_id"], listed["email"])
# [end]
# [post_v1_wallets]
wallet = sluice.wallets.create(customer_id=customer["customer_id"], symbol="USDC", chain="BASE")
# [end]
other = sluice.wallets.create(customer_id=customer["customer_id"], symbol="USDC", chain="SOL")
# [get_v1_wallets_by_wallet_id]
wallet = sluice.wallets.retrieve(wallet["wallet_id"])
print(wallet["available_balance"], wallet["deposit_address"])
# [end]
# [get_v1_wallets]
page = sluice.wallets.list_page(limit=10)  # one page: page.data, page.has_more, page.next_cursor
# [end]
# [post_v1_virtual_accounts]
account = sluice.virtual_accounts.create(
    customer_id=customer["customer_id"],
    currency="USD",
    destination={"rail": "stablecoin", "currency": "USDC", "address": wallet["deposit_address"]},
)
# [end]
# [get_v1_virtual_accounts_by_virtual_account_id]
account = sluice.virtual_accounts.retrieve(account["virtual_account_id"])
# [end]
# [get_v1_virtual_accounts]
for va in sluice.virtual_accounts.list():
    print(va["virtual_account_id"], va["currency"])
# [end]
# [post_v1_sandbox_deposits]
deposit = sluice.sandbox_deposits.create(virtual_account_id=account["virtual_account_id"], amount="100.00")
# [end]
# [post_v1_transfers]
sent = sluice.transfers.create(
    source={
        "payment_rail": "provider_wallet",
        "currency": "USDC",
        "amount": "25.00",
        "provider_wallet_id": wallet["wallet_id"],
    },
    destination={
        "payment_rail": "provider_wallet",
        "currency": "USDC",
        "provider_wallet_id": other["wallet_id"],
    },
    options={"idempotency_key": new_key()},  # keep it with your order: one key, reused on every retry
)
# [end]
# [get_v1_transfers_by_transfer_id]
transfer = sluice.transfers.retrieve(sent["transfer_id"])
print(transfer["state"])
# [end]
# [get_v1_transfers]
for t in sluice.transfers.list():
    print(t["transfer_id"], t["state"])
# [end]
# [get_v1_wallets_by_wallet_id_transactions]
for tx in sluice.wallets.list_transactions(wallet["wallet_id"]):  # the statement, newest first
    print(tx["amount"], tx["balance_after"])
# [end]
# [post_v1_payouts]
paid = sluice.payouts.create(
    source={
        "payment_rail": "provider_wallet",
        "currency": "USDC",
        "amount": "10.00",
        "provider_wallet_id": payout_wallet_id,
    },
    destination={"payment_rail": "ach", "currency": "USD", "external_account_id": external_account_id},
    options={"idempotency_key": new_key()},  # the account holder's wallet pays
)
# [end]
# [get_v1_payouts_by_transfer_id]
payout = sluice.payouts.retrieve(paid["transfer_id"])
# [end]
# [get_v1_payouts]
for p in sluice.payouts.list():
    print(p["transfer_id"], p["state"])
# [end]
# [get_v1_fee_balances]
for fees in sluice.fee_balances.list():
    print(fees["currency"], fees["available_balance"])
# [end]
# [get_v1_events]
for event in sluice.events.list(order="asc"):  # oldest first, by sequence
    print(event["sequence"], event["type"])
# [end]
# [get_v1_events_by_event_id]
event = sluice.events.retrieve(event["id"])
# [end]
# [post_v1_webhooks]
endpoint = sluice.webhooks.create(endpoint_url="http://127.0.0.1:8787/hooks")  # your receiver (live: https)
secret = endpoint["signing_secret"]  # shown once: keep it to verify deliveries
# [end]
# [get_v1_webhooks_by_webhook_id]
endpoint_now = sluice.webhooks.retrieve(endpoint["webhook_id"])
# [end]
# [get_v1_webhooks]
for hook in sluice.webhooks.list():
    print(hook["webhook_id"], hook["endpoint_url"], hook["status"])
# [end]
# [patch_v1_webhooks_by_webhook_id]
paused = sluice.webhooks.update(endpoint["webhook_id"], status="disabled")
# [end]
# [post_v1_webhooks_by_webhook_id_rotate_secret]
rotated = sluice.webhooks.rotate_secret(endpoint["webhook_id"])
secret = rotated["signing_secret"]  # the old one keeps signing alongside for a while
# [end]
# [delete_v1_webhooks_by_webhook_id]
deleted = sluice.webhooks.delete(endpoint["webhook_id"])
# [end]
# [post_v1_onboarding_authorizations]
link = sluice.onboarding_authorizations.create(service_user_id="user-1816", email="grace@example.com")
print(link["url"])  # send your user there; single use, short-lived
# [end]
# [routed]
answer = sluice.routed.send("/v1/health", {"method": "GET"})  # any endpoint through POST /
# [end]
print("done", transfer["state"], payout["state"], paused["status"], deleted["status"], answer["mode"])
