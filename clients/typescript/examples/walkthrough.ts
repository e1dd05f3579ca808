import { Sluice, type WebhookEvent, configFromEnv, newKey } from "@sluice/sdk";
import { receiver } from "./receiver.js"; // the ten lines below

const sluice = new Sluice(configFromEnv()); // SLUICE_API_URL, SLUICE_SANDBOX_KEY=sk_test_...
const port = Number(process.env["RECEIVER_PORT"] ?? 8787);
const hook = await sluice.webhooks.create({ endpoint_url: `http://127.0.0.1:${port}/hooks` });
const events: WebhookEvent[] = [];
const server = receiver(hook.signing_secret, (e) => events.push(e)).listen(port);
const ada = { account_type: "individual", email: "ada@example.com", country_code: "US", full_name: "Ada" } as const;
const customer = () => sluice.customers.create({ ...ada, service_user_id: newKey() });
const [ca, cb] = [await customer(), await customer()];
const wallet = (customer_id: string) => sluice.wallets.create({ customer_id, symbol: "USDC", chain: "BASE" });
const [a, b] = [await wallet(ca.customer_id), await wallet(cb.customer_id)];
const to = { rail: "stablecoin", currency: "USDC", address: a.deposit_address } as const;
const va = await sluice.virtualAccounts.create({ customer_id: ca.customer_id, currency: "USD", destination: to });
await sluice.sandboxDeposits.create({ virtual_account_id: va.virtual_account_id, amount: "100.00" });
const rail = { payment_rail: "provider_wallet", currency: "USDC" } as const;
const move = { source: { ...rail, amount: "25.00", provider_wallet_id: a.wallet_id }, destination: { ...rail, provider_wallet_id: b.wallet_id } };
const tr = await sluice.transfers.create(move, { idempotencyKey: newKey() }); // keep it with the order: one key, reused on retries
console.log("transfer", (await sluice.transfers.retrieve(tr.transfer_id)).state);
for (const w of [a, b]) console.log("balance", (await sluice.wallets.retrieve(w.wallet_id)).available_balance);
const deadline = Date.now() + 60_000; // every event type is delivered; wait for the transfer's
const created = () => events.find((e) => e.type === "transfer.created");
while (!created() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
const event = created();
console.log("webhook", event?.type, event?.type === "transfer.created" && event.data.transfer_id === tr.transfer_id);
server.close();
