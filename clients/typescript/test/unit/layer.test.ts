// The TypeScript layer against a scripted fetch: the same cases as tests/unit/test_sdk_python.py.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Webhook } from "standardwebhooks";

import {
  AdaptiveThrottle,
  ConnectionFailed,
  InvalidRequest,
  ProviderUnavailable,
  Sluice,
  type SluiceConfig,
  Throttled,
  WebhookRefused,
  configFromEnv,
  ok,
  pages,
  verifyWebhook,
} from "../../src/index.js";

const KEY = "sk_test_" + "a".repeat(43);
const CUSTOMER = { customer_id: "cus_1", provider: "service" };
type Answer = Response | Error;

function envelope(data: unknown): Response {
  return Response.json({ success: true, data }, { status: 201 });
}

function failure(code: string, status: number, headers: Record<string, string> = {}, details = {}): Response {
  const body = { success: false, error: { code, message: code, details } };
  return Response.json(body, { status, headers: { "X-Request-Id": "req_1", ...headers } });
}

function scripted(answers: Answer[], over: Partial<SluiceConfig> = {}) {
  const requests: Request[] = [];
  const sleeps: number[] = [];
  let seed = 7;
  const sluice = new Sluice({
    apiKey: KEY,
    baseUrl: "http://gw.test",
    random: () => ((seed = (seed * 16807) % 2147483647) / 2147483647),
    sleep: async (ms) => void sleeps.push(ms),
    fetch: async (request) => {
      requests.push(request);
      const next = answers.shift();
      if (next === undefined) throw new Error("no answer scripted");
      if (next instanceof Error) throw next;
      return next;
    },
    ...over,
  });
  return { sluice, requests, sleeps };
}

const customer = {
  account_type: "individual" as const,
  email: "ada@example.com",
  country_code: "US",
  service_user_id: "u-1",
  full_name: "Ada Lovelace",
};

test("one key per operation, reused on every retry; Retry-After honoured", async () => {
  const overloaded = failure("provider_unavailable", 503, { "Retry-After": "1" }, { reason: "overloaded" });
  const dropped = new TypeError("fetch failed");
  const second = envelope({ ...CUSTOMER, customer_id: "cus_2" });
  const { sluice, requests, sleeps } = scripted([overloaded, dropped, envelope(CUSTOMER), second]);
  const first = await ok(sluice.api.POST("/v1/customers", { body: customer }));
  assert.equal(first.data.customer_id, "cus_1");
  const keys = requests.map((r) => r.headers.get("idempotency-key"));
  assert.equal(new Set(keys).size, 1);
  assert.match(keys[0] ?? "", /^sdk_/);
  assert.ok((sleeps[0] ?? 0) >= 1000 && (sleeps[0] ?? 0) <= 1250, `${sleeps[0]}`);
  assert.ok((sleeps[1] ?? 99) <= 500);
  assert.deepEqual({ ...sluice.stats }, { attempts: 3, retries: 2, refused: 1, unreached: 1, throttled: 0 });
  const next = await ok(sluice.api.POST("/v1/customers", { body: customer }));
  assert.equal(next.data.customer_id, "cus_2");
  assert.notEqual(requests.at(-1)?.headers.get("idempotency-key"), keys[0]);
  assert.equal(requests[0]?.headers.get("authorization"), `Bearer ${KEY}`);
  assert.equal(requests[0]?.headers.get("x-service-mode"), "sandbox");
});

test("a transfer's body key is its header key", async () => {
  const { sluice, requests } = scripted([envelope({ transfer_id: "tr_1", state: "completed" })]);
  const party = { payment_rail: "provider_wallet" as const, currency: "USDC", provider_wallet_id: "wal_1" };
  await sluice.api.POST("/v1/transfers", {
    body: { source: { ...party, amount: "1" }, destination: party, idempotency_key: "order-42-payment" },
  });
  assert.equal(requests[0]?.headers.get("idempotency-key"), "order-42-payment");
  await assert.rejects(
    sluice.api.POST("/v1/transfers", {
      params: { header: { "Idempotency-Key": "other-key" } },
      body: { source: { ...party, amount: "1" }, destination: party, idempotency_key: "order-42-payment" },
    }),
    TypeError,
  );
});

test("non-retryable answers stop at once with a typed error", async () => {
  const { sluice, requests, sleeps } = scripted([failure("invalid_request", 400, {}, { field: "email" })]);
  await assert.rejects(sluice.api.POST("/v1/customers", { body: customer }), (err: unknown) => {
    assert.ok(err instanceof InvalidRequest);
    assert.equal(err.code, "invalid_request");
    assert.equal(err.field, "email");
    assert.equal(err.status, 400);
    assert.equal(err.requestId, "req_1");
    return true;
  });
  assert.equal(requests.length, 1);
  assert.deepEqual(sleeps, []);
});

test("retries are bounded and the last error is thrown", async () => {
  const shed = () => failure("provider_unavailable", 503, { "Retry-After": "0" }, { reason: "overloaded" });
  const { sluice, requests, sleeps } = scripted([shed(), shed(), shed()], {
    retry: { maxAttempts: 3 },
    throttle: new AdaptiveThrottle({ k: 1e9 }),
  });
  await assert.rejects(sluice.api.POST("/v1/customers", { body: customer }), (err: unknown) => {
    assert.ok(err instanceof ProviderUnavailable);
    assert.equal(err.reason, "overloaded");
    return true;
  });
  assert.equal(requests.length, 3);
  assert.equal(sleeps.length, 2);
});

test("a proxy page and a network failure are retried; network failures end as ConnectionFailed", async () => {
  const html = new Response("<html>bad gateway</html>", { status: 503, headers: { "Retry-After": "0" } });
  const first = scripted([html, new TypeError("fetch failed"), envelope(CUSTOMER)]);
  assert.equal((await ok(first.sluice.api.POST("/v1/customers", { body: customer }))).data.customer_id, "cus_1");
  const second = scripted([new TypeError("fetch failed"), new TypeError("fetch failed")], { retry: { maxAttempts: 2 } });
  await assert.rejects(second.sluice.api.POST("/v1/customers", { body: customer }), ConnectionFailed);
});

test("the throttle follows the SRE formula", () => {
  let now = 0;
  const throttle = new AdaptiveThrottle({ k: 2, windowMs: 120_000, clock: () => now });
  assert.equal(throttle.probability(), 0);
  for (let i = 0; i < 10; i++) {
    assert.ok(throttle.admit(() => 0.999));
    throttle.record(true);
  }
  for (let i = 0; i < 30; i++) {
    throttle.admit(() => 0.999);
    throttle.record(false);
  }
  assert.ok(Math.abs(throttle.probability() - (40 - 2 * 10) / 41) < 1e-9);
  let refused = 0;
  for (let i = 0; i < 1000; i++) if (!throttle.admit(Math.random)) refused++;
  assert.ok(refused > 400, `${refused}`);
  now += 121_000;
  assert.equal(throttle.probability(), 0);
});

test("a throttled attempt sends nothing and is retried", async () => {
  let calls = 0;
  const refuseOnce = new AdaptiveThrottle();
  refuseOnce.admit = () => ++calls > 1;
  const { sluice, requests, sleeps } = scripted([envelope(CUSTOMER)], { throttle: refuseOnce });
  await ok(sluice.api.POST("/v1/customers", { body: customer }));
  assert.equal(requests.length, 1);
  assert.equal(sluice.stats.throttled, 1);
  assert.equal(sleeps.length, 1);
  const refuseAll = new AdaptiveThrottle();
  refuseAll.admit = () => false;
  const never = scripted([], { throttle: refuseAll, retry: { maxAttempts: 1 } });
  await assert.rejects(never.sluice.api.POST("/v1/customers", { body: customer }), Throttled);
});

test("pages follow next_cursor", async () => {
  const item = (n: number) => ({ customer_id: `cus_${n}`, account_type: "individual", service_user_id: `u-${n}` });
  const page = (items: unknown[], next: string | null) =>
    Response.json({ success: true, data: { items, next_cursor: next } });
  const { sluice, requests } = scripted([page([item(1), item(2)], "cus_2"), page([item(3)], null)]);
  const ids: string[] = [];
  for await (const c of pages((after) =>
    sluice.api.GET("/v1/customers", { params: { query: { limit: 2, starting_after: after } } }),
  )) {
    ids.push(c.customer_id);
  }
  assert.deepEqual(ids, ["cus_1", "cus_2", "cus_3"]);
  assert.equal(new URL(requests[0]?.url ?? "").searchParams.get("starting_after"), null);
  assert.equal(new URL(requests[1]?.url ?? "").searchParams.get("starting_after"), "cus_2");
});

test("sandbox and live keys by configuration", () => {
  const env = { SLUICE_SANDBOX_KEY: KEY, SLUICE_LIVE_KEY: "sk_live_" + "b".repeat(43), SLUICE_API_URL: "http://x" };
  assert.equal(configFromEnv(env).apiKey, KEY);
  const live = configFromEnv({ ...env, SLUICE_MODE: "live" });
  assert.equal(live.mode, "live");
  assert.ok(live.apiKey.startsWith("sk_live_"));
  assert.throws(() => new Sluice({ apiKey: KEY, mode: "live" }), RangeError);
  assert.throws(() => new Sluice({ apiKey: "sk_live_" + "b".repeat(43) }), RangeError);
  assert.throws(() => configFromEnv({ SLUICE_MODE: "live", SLUICE_SANDBOX_KEY: KEY }), RangeError);
});

const SECRET = "whsec_" + Buffer.alloc(32, "k").toString("base64");
const OTHER = "whsec_" + Buffer.alloc(32, "o").toString("base64");

function signed(body: string, at: Date, secret = SECRET): Record<string, string> {
  return {
    "X-Service-Webhook-Id": "evt_1",
    "X-Service-Timestamp": String(Math.floor(at.getTime() / 1000)),
    "X-Service-Signature": new Webhook(secret).sign("evt_1", at, body),
  };
}

test("webhook verification accepts its own and refuses the rest", () => {
  const body = JSON.stringify({ id: "evt_1", type: "customer.created", data: {} });
  const now = new Date();
  assert.equal((verifyWebhook(body, signed(body, now), SECRET) as { type: string }).type, "customer.created");
  assert.throws(() => verifyWebhook(body.replace("customer", "wallet"), signed(body, now), SECRET), WebhookRefused);
  assert.throws(() => verifyWebhook(body, signed(body, new Date(now.getTime() - 301_000)), SECRET), WebhookRefused);
  assert.throws(() => verifyWebhook(body, signed(body, new Date(now.getTime() + 301_000)), SECRET), WebhookRefused);
  assert.throws(() => verifyWebhook(body, signed(body, now, OTHER), SECRET), WebhookRefused);
  const both = signed(body, now);
  both["X-Service-Signature"] += " " + (signed(body, now, OTHER)["X-Service-Signature"] ?? "");
  assert.equal((verifyWebhook(body, both, OTHER) as { id: string }).id, "evt_1");
  assert.equal((verifyWebhook(body, new Headers(signed(body, now, OTHER)), [SECRET, OTHER]) as { id: string }).id, "evt_1");
  assert.throws(() => verifyWebhook(body, { "x-service-signature": "garbage" }, SECRET), WebhookRefused);
});
