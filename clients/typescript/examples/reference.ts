// Every operation of the API once, in the order a partner meets them. The API reference shows
// the lines between `// [<operationId>]` and `// [end]` as that operation's TypeScript sample;
// the project's tests run this file against a sandbox. Set SLUICE_API_URL, SLUICE_SANDBOX_KEY
// (sk_test_...) and, for the payout, SLUICE_EXTERNAL_ACCOUNT_ID (a customer's bank account an
// operator approved) and SLUICE_PAYOUT_WALLET_ID (a funded wallet of that customer).
import { Sluice, configFromEnv, newKey } from "@sluice/sdk";

const externalAccountId = process.env["SLUICE_EXTERNAL_ACCOUNT_ID"] ?? "";
const payoutWalletId = process.env["SLUICE_PAYOUT_WALLET_ID"] ?? "";
// [get_v1_health]
const sluice = new Sluice(configFromEnv()); // SLUICE_API_URL, SLUICE_SANDBOX_KEY=sk_test_...
const health = await sluice.health.retrieve();
console.log(health.mode, health.tenant_id);
// [end]
// [post_v1_customers]
const created = await sluice.customers.create({
  account_type: "individual",
  email: "ada@example.com",
  country_code: "US",
  full_name: "Ada Lovelace",
  service_user_id: "user-1815", // your own id for this person
});
// [end]
// [get_v1_customers_by_customer_id]
const customer = await sluice.customers.retrieve(created.customer_id);
// [end]
// [get_v1_customers]
for await (const listed of sluice.customers.list({ limit: 100 })) console.log(listed.customer_id, listed.email); // every page
// [end]
// [post_v1_wallets]
const wallet = await sluice.wallets.create({ customer_id: customer.customer_id, symbol: "USDC", chain: "BASE" });
// [end]
const other = await sluice.wallets.create({ customer_id: customer.customer_id, symbol: "USDC", chain: "SOL" });
// [get_v1_wallets_by_wallet_id]
const fresh = await sluice.wallets.retrieve(wallet.wallet_id);
console.log(fresh.available_balance, fresh.deposit_address);
// [end]
// [get_v1_wallets]
const page = await sluice.wallets.listPage({ limit: 10 }); // one page: page.data, page.has_more, page.next_cursor
// [end]
// [post_v1_virtual_accounts]
const account = await sluice.virtualAccounts.create({
  customer_id: customer.customer_id,
  currency: "USD",
  destination: { rail: "stablecoin", currency: "USDC", address: wallet.deposit_address },
});
// [end]
// [get_v1_virtual_accounts_by_virtual_account_id]
const accountNow = await sluice.virtualAccounts.retrieve(account.virtual_account_id);
// [end]
// [get_v1_virtual_accounts]
for await (const va of sluice.virtualAccounts.list()) console.log(va.virtual_account_id, va.currency);
// [end]
// [post_v1_sandbox_deposits]
const deposit = await sluice.sandboxDeposits.create({ virtual_account_id: account.virtual_account_id, amount: "100.00" });
// [end]
// [post_v1_transfers]
const sent = await sluice.transfers.create(
  {
    source: { payment_rail: "provider_wallet", currency: "USDC", amount: "25.00", provider_wallet_id: wallet.wallet_id },
    destination: { payment_rail: "provider_wallet", currency: "USDC", provider_wallet_id: other.wallet_id },
  },
  { idempotencyKey: newKey() }, // keep it with your order: one key, reused on every retry
);
// [end]
// [get_v1_transfers_by_transfer_id]
const transfer = await sluice.transfers.retrieve(sent.transfer_id);
console.log(transfer.state);
// [end]
// [get_v1_transfers]
for await (const t of sluice.transfers.list()) console.log(t.transfer_id, t.state);
// [end]
// [get_v1_wallets_by_wallet_id_transactions]
for await (const tx of sluice.wallets.listTransactions(wallet.wallet_id)) console.log(tx.amount, tx.balance_after); // newest first
// [end]
// [post_v1_payouts]
const paid = await sluice.payouts.create(
  {
    source: { payment_rail: "provider_wallet", currency: "USDC", amount: "10.00", provider_wallet_id: payoutWalletId }, // the account holder's
    destination: { payment_rail: "ach", currency: "USD", external_account_id: externalAccountId },
  },
  { idempotencyKey: newKey() },
);
// [end]
// [get_v1_payouts_by_transfer_id]
const payout = await sluice.payouts.retrieve(paid.transfer_id);
// [end]
// [get_v1_payouts]
for await (const p of sluice.payouts.list()) console.log(p.transfer_id, p.state);
// [end]
// [get_v1_fee_balances]
for await (const fees of sluice.feeBalances.list()) console.log(fees.currency, fees.available_balance);
// [end]
// [get_v1_events]
let last = "";
for await (const event of sluice.events.list({ order: "asc" })) { // oldest first, by sequence
  console.log(event.sequence, event.type);
  last = event.id;
}
// [end]
// [get_v1_events_by_event_id]
const event = await sluice.events.retrieve(last);
// [end]
// [post_v1_webhooks]
const endpoint = await sluice.webhooks.create({ endpoint_url: "http://127.0.0.1:8787/hooks" }); // your receiver (live: https)
let secret = endpoint.signing_secret; // shown once: keep it to verify deliveries
// [end]
// [get_v1_webhooks_by_webhook_id]
const endpointNow = await sluice.webhooks.retrieve(endpoint.webhook_id);
// [end]
// [get_v1_webhooks]
for await (const hook of sluice.webhooks.list()) console.log(hook.webhook_id, hook.endpoint_url, hook.status);
// [end]
// [patch_v1_webhooks_by_webhook_id]
const paused = await sluice.webhooks.update(endpoint.webhook_id, { status: "disabled" });
// [end]
// [post_v1_webhooks_by_webhook_id_rotate_secret]
const rotated = await sluice.webhooks.rotateSecret(endpoint.webhook_id, {});
secret = rotated.signing_secret; // the old one keeps signing alongside for a while
// [end]
// [delete_v1_webhooks_by_webhook_id]
const deleted = await sluice.webhooks.delete(endpoint.webhook_id);
// [end]
// [post_v1_onboarding_authorizations]
const link = await sluice.onboardingAuthorizations.create({ service_user_id: "user-1816", email: "grace@example.com" });
console.log(link.url); // send your user there; single use, short-lived
// [end]
// [routed]
const answer = await sluice.routed.send("/v1/health", { method: "GET" }); // any endpoint through POST /
// [end]
const seen = [page.data.length > 0, accountNow.currency, deposit, event.id === last, endpointNow.webhook_id, secret.length > 0];
console.log("done", transfer.state, payout.state, paused.status, deleted.status, answer["mode"], seen.length);
