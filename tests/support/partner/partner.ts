// A partner's script, type-checked (tsc --strict, no skipLibCheck) and run from the installed
// npm tarball by tests/integration/test_sdk_packaging.py.
import { Sluice, newKey, signTestEvent, verifyWebhook } from "@sluice/sdk";

// The project installs nothing but the package and TypeScript (no @types/node): Node's one
// global it reads is declared here, as a partner's own code would.
declare const process: { env: Record<string, string | undefined> };

const sluice = new Sluice({ apiKey: process.env["SLUICE_SANDBOX_KEY"] ?? "", baseUrl: process.env["SLUICE_API_URL"] ?? "" });
const customer = await sluice.customers.create(
  { account_type: "individual", email: "ada@example.com", country_code: "US", service_user_id: newKey(), full_name: "Ada" },
  { timeoutMs: 60_000, maxAttempts: 4 },
);
const name: string = customer.customer_id;
const listed: string[] = [];
for await (const c of sluice.customers.list({ limit: 100 })) listed.push(c.customer_id);
console.log("customer", name.startsWith("cus_") && listed.includes(name) ? "True" : "False");
const page = await sluice.customers.listPage({ limit: 1 }); // one page, with its cursor
const first: string[] = page.data.map((c) => c.customer_id);
const said = (b: boolean) => (b ? "True" : "False");
console.log("page", said(first[0] === listed[0]), said(page.has_more === (listed.length > 1)));
const hook = await sluice.webhooks.create({ endpoint_url: "http://127.0.0.1:9/hook" });
const paused = await sluice.webhooks.update(hook.webhook_id, { status: "disabled" });
const gone = await sluice.webhooks.delete(hook.webhook_id);
console.log("endpoint", paused.status, gone.status);

const secret = "whsec_" + "a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U=";
const delivery = signTestEvent(secret, { type: "transfer.updated", data: { transfer_id: "tr_1", state: "completed" } });
const event = verifyWebhook(new TextEncoder().encode(delivery.body), delivery.headers, secret); // the raw bytes
if (event.type === "transfer.updated") {
  const state: string = event.data.state;
  console.log("event", event.type, state);
}
