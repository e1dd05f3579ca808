#!/usr/bin/env bash
# Every operation of the API once, with curl (and jq to read the answers), in the order a partner
# meets them. The API reference shows the lines between `# [<operationId>]` and `# [end]` as
# that operation's curl sample; the project's tests run this file against a sandbox. Set
# SLUICE_API_URL, SLUICE_SANDBOX_KEY (sk_test_...) and, for the payout,
# SLUICE_EXTERNAL_ACCOUNT_ID (a customer's bank account an operator approved) and
# SLUICE_PAYOUT_WALLET_ID (a funded wallet of that customer). Every POST carries an
# Idempotency-Key: a new one per operation, the same one on every retry of it (openssl makes
# one here).
set -euo pipefail
: "${SLUICE_API_URL:?}" "${SLUICE_SANDBOX_KEY:?}" "${SLUICE_EXTERNAL_ACCOUNT_ID:?}" "${SLUICE_PAYOUT_WALLET_ID:?}"
# [get_v1_health]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/health" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [post_v1_customers]
customer=$(curl -sS --fail-with-body "$SLUICE_API_URL/v1/customers" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $(openssl rand -hex 16)" \
  -d '{"account_type": "individual", "email": "ada@example.com", "country_code": "US",
       "full_name": "Ada Lovelace", "service_user_id": "user-1815"}')
CUSTOMER_ID=$(jq -r .data.customer_id <<<"$customer")
# [end]
# [get_v1_customers_by_customer_id]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/customers/$CUSTOMER_ID" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [get_v1_customers]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/customers?limit=100" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# next page: ?limit=100&starting_after=<data.next_cursor>, until next_cursor is null
# [end]
# [post_v1_wallets]
wallet=$(curl -sS --fail-with-body "$SLUICE_API_URL/v1/wallets" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $(openssl rand -hex 16)" \
  -d "{\"customer_id\": \"$CUSTOMER_ID\", \"symbol\": \"USDC\", \"chain\": \"BASE\"}")
WALLET_ID=$(jq -r .data.wallet_id <<<"$wallet")
DEPOSIT_ADDRESS=$(jq -r .data.deposit_address <<<"$wallet")
# [end]
other=$(curl -sS --fail-with-body "$SLUICE_API_URL/v1/wallets" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $(openssl rand -hex 16)" \
  -d "{\"customer_id\": \"$CUSTOMER_ID\", \"symbol\": \"USDC\", \"chain\": \"SOL\"}")
OTHER_WALLET_ID=$(jq -r .data.wallet_id <<<"$other")
# [get_v1_wallets_by_wallet_id]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/wallets/$WALLET_ID" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [get_v1_wallets]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/wallets?limit=10" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [post_v1_virtual_accounts]
account=$(curl -sS --fail-with-body "$SLUICE_API_URL/v1/virtual-accounts" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $(openssl rand -hex 16)" \
  -d "{\"customer_id\": \"$CUSTOMER_ID\", \"currency\": \"USD\",
       \"destination\": {\"rail\": \"stablecoin\", \"currency\": \"USDC\", \"address\": \"$DEPOSIT_ADDRESS\"}}")
VIRTUAL_ACCOUNT_ID=$(jq -r .data.virtual_account_id <<<"$account")
# [end]
# [get_v1_virtual_accounts_by_virtual_account_id]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/virtual-accounts/$VIRTUAL_ACCOUNT_ID" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [get_v1_virtual_accounts]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/virtual-accounts" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [post_v1_sandbox_deposits]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/sandbox/deposits" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $(openssl rand -hex 16)" \
  -d "{\"virtual_account_id\": \"$VIRTUAL_ACCOUNT_ID\", \"amount\": \"100.00\"}"
# [end]
# [post_v1_transfers]
KEY=$(openssl rand -hex 16)  # keep it with your order: the same key in the header and the body, on every retry
transfer=$(curl -sS --fail-with-body "$SLUICE_API_URL/v1/transfers" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $KEY" \
  -d "{\"idempotency_key\": \"$KEY\",
       \"source\": {\"payment_rail\": \"provider_wallet\", \"currency\": \"USDC\", \"amount\": \"25.00\",
                  \"provider_wallet_id\": \"$WALLET_ID\"},
       \"destination\": {\"payment_rail\": \"provider_wallet\", \"currency\": \"USDC\",
                       \"provider_wallet_id\": \"$OTHER_WALLET_ID\"}}")
TRANSFER_ID=$(jq -r .data.transfer_id <<<"$transfer")
# [end]
# [get_v1_transfers_by_transfer_id]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/transfers/$TRANSFER_ID" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [get_v1_transfers]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/transfers" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [get_v1_wallets_by_wallet_id_transactions]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/wallets/$WALLET_ID/transactions" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [post_v1_payouts]
KEY=$(openssl rand -hex 16)
payout=$(curl -sS --fail-with-body "$SLUICE_API_URL/v1/payouts" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $KEY" \
  -d "{\"idempotency_key\": \"$KEY\",
       \"source\": {\"payment_rail\": \"provider_wallet\", \"currency\": \"USDC\", \"amount\": \"10.00\",
                  \"provider_wallet_id\": \"$SLUICE_PAYOUT_WALLET_ID\"},
       \"destination\": {\"payment_rail\": \"ach\", \"currency\": \"USD\",
                       \"external_account_id\": \"$SLUICE_EXTERNAL_ACCOUNT_ID\"}}")
PAYOUT_ID=$(jq -r .data.transfer_id <<<"$payout")
# [end]
# [get_v1_payouts_by_transfer_id]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/payouts/$PAYOUT_ID" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [get_v1_payouts]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/payouts" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [get_v1_fee_balances]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/fee-balances" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [get_v1_events]
events=$(curl -sS --fail-with-body "$SLUICE_API_URL/v1/events?order=asc&limit=100" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY")  # oldest first, by sequence
EVENT_ID=$(jq -r '.data.items[-1].id' <<<"$events")
# [end]
# [get_v1_events_by_event_id]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/events/$EVENT_ID" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [post_v1_webhooks]
endpoint=$(curl -sS --fail-with-body "$SLUICE_API_URL/v1/webhooks" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $(openssl rand -hex 16)" \
  -d '{"endpoint_url": "http://127.0.0.1:8787/hooks"}')  # your receiver (live: https)
WEBHOOK_ID=$(jq -r .data.webhook_id <<<"$endpoint")
SECRET=$(jq -r .data.signing_secret <<<"$endpoint")  # shown once: keep it to verify deliveries
# [end]
# [get_v1_webhooks_by_webhook_id]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/webhooks/$WEBHOOK_ID" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [get_v1_webhooks]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/webhooks" -H "Authorization: Bearer $SLUICE_SANDBOX_KEY"
# [end]
# [patch_v1_webhooks_by_webhook_id]
curl -sS --fail-with-body -X PATCH "$SLUICE_API_URL/v1/webhooks/$WEBHOOK_ID" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $(openssl rand -hex 16)" \
  -d '{"status": "disabled"}'
# [end]
# [post_v1_webhooks_by_webhook_id_rotate_secret]
rotated=$(curl -sS --fail-with-body -X POST "$SLUICE_API_URL/v1/webhooks/$WEBHOOK_ID/rotate-secret" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $(openssl rand -hex 16)" -d '{}')
SECRET=$(jq -r .data.signing_secret <<<"$rotated")  # the old one keeps signing alongside for a while
# [end]
# [delete_v1_webhooks_by_webhook_id]
curl -sS --fail-with-body -X DELETE "$SLUICE_API_URL/v1/webhooks/$WEBHOOK_ID" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Idempotency-Key: $(openssl rand -hex 16)"
# [end]
# [post_v1_onboarding_authorizations]
curl -sS --fail-with-body "$SLUICE_API_URL/v1/onboarding-authorizations" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "Idempotency-Key: $(openssl rand -hex 16)" \
  -d '{"service_user_id": "user-1816", "email": "grace@example.com"}'
# [end]
# [routed]
curl -sS --fail-with-body -X POST "$SLUICE_API_URL/" \
  -H "Authorization: Bearer $SLUICE_SANDBOX_KEY" -H "Content-Type: application/json" \
  -H "x-service-route: /v1/health" -d '{"method": "GET"}'
# [end]
echo
echo "done ${#SECRET}"
