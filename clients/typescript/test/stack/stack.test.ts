// The TypeScript SDK against the real stack, run by tests/integration/test_sdk_stack.py with
// SLUICE_API_URL, SLUICE_SANDBOX_KEY, DROPPING_PROXY_URL (loses the first answer),
// SHEDDING_GATEWAY_URL (admits one command at a time) and RECEIVER_PORT in the environment.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import { type AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import { Webhook } from "standardwebhooks";

import {
  ConnectionFailed,
  InvalidRequest,
  Sluice,
  type SluiceConfig,
  Throttled,
  WebhookRefused,
  configFromEnv,
  newKey,
  ok,
  responseOf,
  verifyWebhook,
} from "../../src/index.js";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run through tests/integration/test_sdk_stack.py`);
  return value;
};
const base = configFromEnv();
const client = (over: Partial<SluiceConfig> = {}) => new Sluice({ ...base, ...over });
const cents = (s: string | undefined) => Math.round(Number(s) * 100);

async function funded(sluice: Sluice, amount: string): Promise<string> {
  const { POST } = sluice.api;
  const person = { account_type: "individual", email: "g@example.com", country_code: "US", full_name: "G" } as const;
  const c = (await ok(POST("/v1/customers", { body: { ...person, service_user_id: newKey() } }))).data;
  const w = (await ok(POST("/v1/wallets", { body: { customer_id: c.customer_id, symbol: "USDC", chain: "BASE" } }))).data;
  const to = { rail: "stablecoin", currency: "USDC", address: w.deposit_address } as const;
  const va = (await ok(POST("/v1/virtual-accounts", { body: { customer_id: c.customer_id, currency: "USD", destination: to } }))).data;
  await ok(POST("/v1/sandbox/deposits", { body: { virtual_account_id: va.virtual_account_id, amount } }));
  return w.wallet_id;
}

function book(src: string, dst: string, amount: string) {
  const rail = { payment_rail: "provider_wallet", currency: "USDC" } as const;
  return {
    source: { ...rail, amount, provider_wallet_id: src },
    destination: { ...rail, provider_wallet_id: dst },
    idempotency_key: newKey(),
  };
}

async function balance(sluice: Sluice, wallet_id: string): Promise<string | undefined> {
  return (await ok(sluice.api.GET("/v1/wallets/{wallet_id}", { params: { path: { wallet_id } } }))).data.available_balance;
}

test("the README walkthrough runs", () => {
  const script = fileURLToPath(new URL("../../examples/walkthrough.js", import.meta.url));
  const run = spawnSync(process.execPath, [script], { encoding: "utf8", timeout: 180_000 });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const lines = run.stdout.trim().split("\n");
  assert.ok(lines.includes("transfer completed"), lines.join("|"));
  assert.deepEqual(lines.filter((l) => l.startsWith("balance ")).map((l) => cents(l.split(" ")[1])), [7500, 2500]);
  assert.ok(lines.includes("webhook transfer.created true"), lines.join("|"));
});

test("a transfer whose answer is lost is retried and made once", async () => {
  const direct = client();
  const [src, dst] = [await funded(direct, "10.00"), await funded(direct, "1.00")];
  const lossy = client({ baseUrl: env("DROPPING_PROXY_URL"), retry: { maxAttempts: 4, baseMs: 50 } });
  const body = book(src, dst, "1.50");
  const created = (await ok(lossy.api.POST("/v1/transfers", { body }))).data;
  assert.equal(lossy.stats.retries, 1);
  assert.equal(lossy.stats.unreached, 1); // a lost answer is no refusal by the gateway
  const listed = (await ok(direct.api.GET("/v1/transfers", { params: { query: { limit: 100 } } }))).data.items;
  assert.deepEqual(listed.filter((t) => t.transfer_id === created.transfer_id).length, 1);
  assert.equal(cents(await balance(direct, src)), 850);
});

test("a shedding gateway sees the clients back off and every operation done once", async () => {
  const direct = client();
  const [src, dst] = [await funded(direct, "50.00"), await funded(direct, "1.00")];
  const waits: { reason: string | undefined; delay: number; after: number | undefined }[] = [];
  const clients = Array.from({ length: 4 }, () =>
    client({
      baseUrl: env("SHEDDING_GATEWAY_URL"),
      retry: { maxAttempts: 60, baseMs: 50, capMs: 1000 },
      onRetry: (f, _n, delay) => void waits.push({ reason: f.reason, delay, after: f.retryAfterMs }),
    }),
  );
  const done = await Promise.all(
    clients.map(async (c) => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await ok(c.api.POST("/v1/transfers", { body: book(src, dst, "0.25") }))).data.transfer_id);
      return ids;
    }),
  );
  const ids = done.flat();
  assert.equal(new Set(ids).size, 12);
  const shed = waits.filter((w) => w.reason === "overloaded");
  assert.ok(shed.length > 0, JSON.stringify(waits));
  assert.ok(shed.every((w) => w.delay >= (w.after ?? 0)));
  assert.equal(cents(await balance(direct, src)), 5000 - 25 * 12);
});

test("a webhook from the stack verifies; a tampered or stale one is refused", async () => {
  const got: { body: Buffer; headers: Record<string, string | string[] | undefined> }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      got.push({ body: Buffer.concat(chunks), headers: req.headers });
      res.writeHead(200).end("ok");
    });
  }).listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const port = (server.address() as AddressInfo).port;
  try {
    const sluice = client();
    const hook = (await ok(sluice.api.POST("/v1/webhooks", { body: { endpoint_url: `http://127.0.0.1:${port}/hooks` } }))).data;
    const person = { account_type: "individual", email: "w@example.com", country_code: "US", full_name: "W" } as const;
    const c = (await ok(sluice.api.POST("/v1/customers", { body: { ...person, service_user_id: newKey() } }))).data;
    // The tenant is shared with the tests before: an event of theirs stored after the
    // endpoint was enabled is delivered to it too (the events consumer stores in batches),
    // so look for this customer's event, not the first delivery.
    const mine = (d: { body: Buffer }) => (JSON.parse(d.body.toString()) as { data?: { customer_id?: string } }).data?.customer_id === c.customer_id;
    const deadline = Date.now() + 60_000;
    while (!got.some(mine) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const first = got.find(mine);
    assert.ok(first, `no delivery of the customer's event (${got.length} others)`);
    const event = verifyWebhook(first.body, first.headers, hook.signing_secret) as { type: string; data: { customer_id: string } };
    assert.equal(event.type, "customer.created");
    assert.equal(event.data.customer_id, c.customer_id);
    const tampered = Buffer.from(first.body.toString().replace("customer", "c0stomer"));
    assert.throws(() => verifyWebhook(tampered, first.headers, hook.signing_secret), WebhookRefused);
    const at = new Date(Date.now() - 600_000);
    const id = String(first.headers["x-service-webhook-id"]);
    const stale = {
      ...first.headers,
      "x-service-timestamp": String(Math.floor(at.getTime() / 1000)),
      "x-service-signature": new Webhook(hook.signing_secret).sign(id, at, first.body),
    };
    assert.throws(() => verifyWebhook(first.body, stale, hook.signing_secret), WebhookRefused);
  } finally {
    server.close();
  }
});

test("errors in words: request id and replay flag, a sentence per refusal, a dead address is ConnectionFailed", async () => {
  const sluice = client();
  const person = { account_type: "individual", email: "r@example.com", country_code: "US", full_name: "R" } as const;
  const body = { ...person, service_user_id: newKey() };
  const key = newKey();
  const first = await sluice.customers.create(body, { idempotencyKey: key });
  const again = await sluice.customers.create(body, { idempotencyKey: key });
  assert.equal(again.customer_id, first.customer_id);
  assert.equal(responseOf(first).replayed, false);
  assert.equal(responseOf(again).replayed, true);
  assert.ok(responseOf(first).requestId && responseOf(again).requestId);
  assert.notEqual(responseOf(first).requestId, responseOf(again).requestId);
  assert.equal(responseOf(again).status, 201);
  await assert.rejects(sluice.customers.create({ ...body, service_user_id: newKey(), country_code: "us" }), (err: unknown) => {
    assert.ok(err instanceof InvalidRequest);
    assert.equal(err.field, "country_code");
    assert.equal(err.details["pattern"], "^[A-Z]{2}$(?!\\n)");
    assert.match(err.message, /^country_code must be a two-letter ISO 3166-1 country code/);
    return true;
  });
  // the stack's own gateway address with a port nothing listens on: the network refuses
  const dead = new URL(base.baseUrl ?? "http://127.0.0.1:8000");
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  dead.port = String((server.address() as AddressInfo).port);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const unreachable = client({ baseUrl: dead.origin, retry: { maxAttempts: 1 } });
  await assert.rejects(unreachable.customers.create(body), (err: unknown) => {
    assert.ok(err instanceof ConnectionFailed && !(err instanceof Throttled));
    assert.ok(err.cause instanceof Error);
    assert.match(err.message, /ECONNREFUSED/);
    return true;
  });
});
