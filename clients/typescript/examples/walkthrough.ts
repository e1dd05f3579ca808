import { Sluice, configFromEnv, newKey, ok } from "@sluice/sdk";
import { receiver } from "./receiver.js"; // the ten lines below

const sluice = new Sluice(configFromEnv()); // SLUICE_API_URL, SLUICE_SANDBOX_KEY=sk_test_...
const { POST, GET } = sluice.api;
const port = Number(process.env["RECEIVER_PORT"] ?? 8787);
const hook = (await ok(POST("/v1/webhooks", { body: { endpoint_url: `http://127.0.0.1:${port}/hooks` } }))).data;
const events: { type: string; data: { transfer_id?: string } }[] = [];
const server = receiver(hook.signing_secret, (e) => events.push(e as (typeof events)[number])).listen(port);
const ada = { account_type: "individual", email: "ada@example.com", country_code: "US", full_name: "Ada" } as const;
const customer = async () => (await ok(POST("/v1/customers", { body: { ...ada, service_user_id: newKey() } }))).data;
const wallet = async (customer_id: string) =>
  (await ok(POST("/v1/wallets", { body: { customer_id, symbol: "USDC", chain: "BASE" } }))).data;
const [ca, cb] = [await customer(), await customer()];
const [a, b] = [await wallet(ca.customer_id), await wallet(cb.customer_id)];
const to = { rail: "stablecoin", currency: "USDC", address: a.deposit_address } as const;
const va = (await ok(POST("/v1/virtual-accounts", { body: { customer_id: ca.customer_id, currency: "USD", destination: to } }))).data;
await ok(POST("/v1/sandbox/deposits", { body: { virtual_account_id: va.virtual_account_id, amount: "100.00" } }));
const rail = { payment_rail: "provider_wallet", currency: "USDC" } as const;
const move = { source: { ...rail, amount: "25.00", provider_wallet_id: a.wallet_id }, destination: { ...rail, provider_wallet_id: b.wallet_id } };
const tr = (await ok(POST("/v1/transfers", { body: { ...move, idempotency_key: newKey() } }))).data; // one key, reused on retries
const read = await ok(GET("/v1/transfers/{transfer_id}", { params: { path: { transfer_id: tr.transfer_id } } }));
console.log("transfer", read.data.state);
for (const w of [a, b]) {
  const got = await ok(GET("/v1/wallets/{wallet_id}", { params: { path: { wallet_id: w.wallet_id } } }));
  console.log("balance", got.data.available_balance);
}
const deadline = Date.now() + 60_000; // every event type is delivered; wait for the transfer's
while (!events.some((e) => e.type === "transfer.created") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
const event = events.find((e) => e.type === "transfer.created");
console.log("webhook", event?.type, event?.data.transfer_id === tr.transfer_id);
server.close();
