// The TypeScript SDK's resources and per-request options (issue 46) against a scripted fetch:
// the same cases as tests/unit/test_sdk_resources.py. Each test names the broken behaviour that
// fails it.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  DeadlineExceeded,
  IdempotencyConflict,
  InternalError,
  ProviderUnavailable,
  RateLimited,
  Sluice,
  type SluiceConfig,
  Throttled,
  AdaptiveThrottle,
  WebhookRefused,
  ok,
  resolve,
  signTestEvent,
  verifyWebhook,
} from "../../src/index.js";

const KEY = "sk_test_" + "a".repeat(43);
const LIVE = "sk_live_" + "b".repeat(43);
type Answer = Response | Error | ((request: Request) => Response | Promise<Response>);

function envelope(data: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return Response.json({ success: true, data }, { status, headers });
}

function failure(code: string, status: number, headers: Record<string, string> = {}): Response {
  const body = { success: false, error: { code, message: code, details: {} } };
  return Response.json(body, { status, headers: { "X-Request-Id": "req_1", ...headers } });
}

function scripted(answers: Answer[], over: Partial<SluiceConfig> = {}) {
  const requests: Request[] = [];
  const sleeps: number[] = [];
  const bodies: Record<string, unknown>[] = [];
  const sluice = new Sluice({
    apiKey: KEY,
    baseUrl: "http://gw.test",
    retry: { maxAttempts: 4, baseMs: 100, capMs: 1000 },
    random: () => 0.5,
    sleep: async (ms) => void sleeps.push(ms),
    fetch: async (request) => {
      requests.push(request);
      const text = request.method === "GET" ? "" : await request.clone().text();
      if (text) bodies.push(JSON.parse(text) as Record<string, unknown>);
      const next = answers.shift();
      if (next === undefined) throw new Error("no answer scripted");
      if (next instanceof Error) throw next;
      return typeof next === "function" ? next(request) : next;
    },
    ...over,
  });
  return { sluice, requests, sleeps, bodies };
}

const party = { payment_rail: "provider_wallet", currency: "USDC" } as const;
const book = {
  source: { ...party, amount: "1.50", provider_wallet_id: "w_1" },
  destination: { ...party, provider_wallet_id: "w_2" },
};

test("resources send typed bodies and return the inner object", async () => {
  const { sluice, requests, bodies } = scripted([
    envelope({ customer_id: "cus_1", provider: "service" }, 201),
    envelope({ customer_id: "cus_1", account_type: "individual", service_user_id: "u" }),
  ]);
  const created = await sluice.customers.create({
    account_type: "individual",
    email: "a@example.com",
    country_code: "US",
    service_user_id: "u",
    full_name: "A",
  });
  assert.deepEqual(created, { customer_id: "cus_1", provider: "service" });
  assert.equal((await sluice.customers.retrieve("cus_1/../x")).customer_id, "cus_1");
  const [post, get] = requests;
  assert.equal(new URL(post?.url ?? "").pathname, "/v1/customers");
  assert.equal(bodies[0]?.["email"], "a@example.com");
  assert.match(post?.headers.get("idempotency-key") ?? "", /^sdk_/);
  assert.equal(post?.headers.get("authorization"), `Bearer ${KEY}`);
  assert.equal(post?.headers.get("x-service-mode"), "sandbox");
  assert.equal(get?.url, "http://gw.test/v1/customers/cus_1%2F..%2Fx");
  assert.equal(get?.headers.get("idempotency-key"), null);
});

test("list follows every page", async () => {
  const { sluice, requests } = scripted([
    envelope({ items: [{ id: 1 }, { id: 2 }], next_cursor: "evt_2" }),
    envelope({ items: [{ id: 3 }], next_cursor: null }),
  ]);
  const seen: unknown[] = [];
  for await (const event of sluice.events.list({ limit: 2, type: "transfer.created" })) seen.push(event);
  assert.equal(seen.length, 3);
  const [first, second] = requests.map((r) => new URL(r.url).searchParams);
  assert.equal(first?.get("starting_after"), null);
  assert.equal(first?.get("type"), "transfer.created");
  assert.equal(second?.get("starting_after"), "evt_2");
});

test("listPage is one page with its cursor; nextPage and for await go on from it", async () => {
  const { sluice, requests } = scripted([
    envelope({ items: [{ transfer_id: "tr_3" }, { transfer_id: "tr_2" }], next_cursor: "tr_2" }),
    envelope({ items: [{ transfer_id: "tr_1" }], next_cursor: null }),
    envelope({ items: [{ transfer_id: "tr_1" }], next_cursor: null }),
  ]);
  const page = await sluice.transfers.listPage({ limit: 2, starting_after: "tr_4" });
  assert.deepEqual(page.data.map((t) => t.transfer_id), ["tr_3", "tr_2"]);
  assert.equal(page.has_more, true);
  assert.equal(page.next_cursor, "tr_2");
  assert.equal(requests.length, 1); // one page, one request
  const last = await page.nextPage();
  assert.deepEqual(last?.data.map((t) => t.transfer_id), ["tr_1"]);
  assert.equal(last?.has_more, false);
  assert.equal(await last?.nextPage(), undefined);
  const walked: string[] = [];
  for await (const t of page) walked.push(t.transfer_id);
  assert.deepEqual(walked, ["tr_3", "tr_2", "tr_1"]);
  const params = requests.map((r) => Object.fromEntries(new URL(r.url).searchParams));
  assert.deepEqual(params, [
    { limit: "2", starting_after: "tr_4" },
    { limit: "2", starting_after: "tr_2" },
    { limit: "2", starting_after: "tr_2" },
  ]);
});

test("events listPage pages both ways with order and ending_before", async () => {
  const events = (numbers: number[], has_more: boolean, next_cursor: string | null) =>
    envelope({ items: numbers.map((n) => ({ id: `evt_${n}`, sequence: n })), has_more, next_cursor });
  const { sluice, requests } = scripted([
    events([4, 5], true, "evt_5"), // oldest first, after evt_3
    events([2, 3], true, "evt_3"), // the page before it
    events([1], false, "evt_1"), // and before that: the first
    events([2, 3], true, "evt_3"), // after evt_1 again
    envelope({ items: [{ transfer_id: "tr_2" }], next_cursor: "tr_2" }),
  ]);
  const page = await sluice.events.listPage({ limit: 2, order: "asc", starting_after: "evt_3" });
  assert.deepEqual(page.data.map((e) => e.sequence), [4, 5]);
  assert.equal(page.previous_cursor, "evt_4");
  const before = await page.previousPage();
  assert.deepEqual(before?.data.map((e) => e.sequence), [2, 3]);
  const first = await before?.previousPage();
  assert.deepEqual(first?.data.map((e) => e.sequence), [1]);
  assert.equal(first?.previous_cursor, null);
  assert.equal(await first?.previousPage(), undefined); // nothing before the first page
  const again = await first?.nextPage(); // read backward, has_more false: a next page is still there
  assert.deepEqual(again?.data.map((e) => e.sequence), [2, 3]);
  const oneWay = await sluice.transfers.listPage({ limit: 1, starting_after: "tr_3" });
  assert.equal(oneWay.previous_cursor, null);
  assert.equal(await oneWay.previousPage(), undefined);
  const params = requests.map((r) => Object.fromEntries(new URL(r.url).searchParams));
  assert.deepEqual(params, [
    { limit: "2", order: "asc", starting_after: "evt_3" },
    { limit: "2", order: "asc", ending_before: "evt_4" },
    { limit: "2", order: "asc", ending_before: "evt_2" },
    { limit: "2", order: "asc", starting_after: "evt_1" },
    { limit: "1", starting_after: "tr_3" },
  ]);
});

test("update and delete send PATCH and DELETE, each with its own key", async () => {
  const hook = { webhook_id: "wh_1", endpoint_url: "https://a.example/h" };
  const { sluice, requests, bodies } = scripted([
    envelope({ ...hook, status: "disabled" }),
    envelope({ ...hook, status: "deleted" }),
  ]);
  assert.equal((await sluice.webhooks.update("wh_1", { status: "disabled" })).status, "disabled");
  assert.equal((await sluice.webhooks.delete("wh_1")).status, "deleted");
  const [patch, del] = requests;
  assert.equal(patch?.method, "PATCH");
  assert.equal(new URL(patch?.url ?? "").pathname, "/v1/webhooks/wh_1");
  assert.deepEqual(bodies, [{ status: "disabled" }]); // DELETE sent no body
  assert.equal(del?.method, "DELETE");
  const keys = new Set(requests.map((r) => r.headers.get("idempotency-key")));
  assert.equal(keys.size, 2);
  assert.ok([...keys].every((k) => k?.startsWith("sdk_")));
});

test("a transfer carries one key in header and body on every attempt (500, 502, 504 retried)", async () => {
  const created = envelope({ transfer_id: "tr_1", state: "completed", provider: "service" }, 201);
  const { sluice, requests, bodies } = scripted([
    failure("internal_error", 500),
    new Response("bad gateway", { status: 502 }),
    new Response("", { status: 504 }),
    created,
  ]);
  assert.equal((await sluice.transfers.create(book)).transfer_id, "tr_1");
  const keys = new Set(requests.map((r) => r.headers.get("idempotency-key")));
  assert.equal(requests.length, 4);
  assert.equal(keys.size, 1);
  assert.deepEqual(new Set(bodies.map((b) => b["idempotency_key"])), keys);
  const mine = scripted([envelope({ transfer_id: "tr_2", state: "pending", provider: "service" }, 201)]);
  await mine.sluice.transfers.create(book, { idempotencyKey: "order-42-transfer" });
  assert.equal(mine.requests[0]?.headers.get("idempotency-key"), "order-42-transfer");
  assert.equal(mine.bodies[0]?.["idempotency_key"], "order-42-transfer");
});

test("a 2xx is never an error and unknown values are kept", async () => {
  const newer = { transfer_id: "tr_1", state: "settling", provider: "another", fx_rate: "1.0001" };
  const { sluice } = scripted([envelope(newer, 201), new Response("<html>", { status: 201 })]);
  assert.deepEqual(await sluice.transfers.create({ ...book, idempotency_key: "k-12345678" }), newer);
  assert.deepEqual(await sluice.transfers.create(book), {});
});

test("409 is final; 429 waits for Retry-After as seconds or an HTTP date", async () => {
  const conflict = scripted([failure("idempotency_replay_mismatch", 409)]);
  await assert.rejects(conflict.sluice.health.retrieve(), IdempotencyConflict);
  assert.equal(conflict.requests.length, 1);
  const at = new Date(Date.now() + 30_000).toUTCString();
  const { sluice, sleeps } = scripted([
    failure("rate_limited", 429, { "Retry-After": "2" }),
    failure("rate_limited", 429, { "Retry-After": at }),
    envelope({}),
  ]);
  await sluice.health.retrieve();
  assert.ok((sleeps[0] ?? 0) >= 2000, `${sleeps[0]}`);
  assert.ok((sleeps[1] ?? 0) > 20_000 && (sleeps[1] ?? 0) < 32_000, `${sleeps[1]}`);
});

test("a Retry-After above 60 s is thrown carrying it", async () => {
  for (const after of ["120", new Date(Date.now() + 600_000).toUTCString()]) {
    const { sluice, sleeps } = scripted([failure("rate_limited", 429, { "Retry-After": after })]);
    await assert.rejects(sluice.health.retrieve(), (err: unknown) => {
      assert.ok(err instanceof RateLimited);
      assert.ok((err.retryAfterMs ?? 0) > 60_000);
      return true;
    });
    assert.deepEqual(sleeps, []);
  }
});

test("timeoutMs is an overall deadline", async () => {
  const shed = scripted([failure("provider_unavailable", 503, { "Retry-After": "5" })]);
  await assert.rejects(shed.sluice.health.retrieve({ timeoutMs: 3000 }), (err: unknown) => {
    assert.ok(err instanceof DeadlineExceeded);
    assert.ok(err.cause instanceof ProviderUnavailable);
    return true;
  });
  assert.deepEqual(shed.sleeps, []);
});

test("maxAttempts per call", async () => {
  const { sluice, requests } = scripted([failure("internal_error", 500)]);
  await assert.rejects(sluice.wallets.retrieve("w_1", { maxAttempts: 1 }), InternalError);
  assert.equal(requests.length, 1);
});

// The back-off never ends by itself here: only the signal can end the call (a break hangs until
// the test's timeout fails it).
test("an AbortSignal is honoured during back-off (resources and openapi-fetch)", { timeout: 20_000 }, async () => {
  for (const via of ["resource", "api"] as const) {
    let waiting!: () => void;
    const inBackOff = new Promise<void>((resolve) => (waiting = resolve));
    const { sluice, requests } = scripted([failure("provider_unavailable", 503, { "Retry-After": "1" }), envelope({})], {
      sleep: () => {
        waiting();
        return new Promise<void>(() => {});
      },
    });
    const controller = new AbortController();
    const call =
      via === "resource"
        ? sluice.health.retrieve({ signal: controller.signal })
        : sluice.api.GET("/v1/health", { signal: controller.signal });
    await inBackOff;
    controller.abort(new Error("caller gave up"));
    await assert.rejects(call, /caller gave up/);
    assert.equal(requests.length, 1, via);
  }
});

test("the throttle can be switched off", async () => {
  class RefuseAll extends AdaptiveThrottle {
    override admit(): boolean {
      return false;
    }
  }
  const on = scripted([], { throttle: new RefuseAll(), retry: { maxAttempts: 1 } });
  await assert.rejects(on.sluice.health.retrieve(), Throttled);
  const answers: Answer[] = Array.from({ length: 30 }, () => failure("provider_unavailable", 503));
  const off = scripted([...answers, envelope({ tenant_id: "t" })], { throttle: false, retry: { maxAttempts: 31, baseMs: 0 } });
  assert.equal(off.sluice.throttle, undefined);
  assert.deepEqual(await off.sluice.health.retrieve(), { tenant_id: "t" });
  assert.equal(off.requests.length, 31);
  assert.equal(off.sluice.stats.throttled, 0);
});

function jwt(claims: Record<string, unknown>): string {
  return `eyJhbGciOiJIUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.c2ln`;
}

test("live mode comes from the credential and needs https", () => {
  assert.equal(resolve({ apiKey: LIVE, baseUrl: "https://api.example.com" }).mode, "live");
  assert.equal(resolve({ apiKey: LIVE, baseUrl: "http://127.0.0.1:8000" }).mode, "live");
  assert.equal(resolve({ apiKey: LIVE, baseUrl: "http://[::1]:8000" }).mode, "live");
  assert.throws(() => resolve({ apiKey: LIVE, baseUrl: "http://api.example.com" }), /https/);
  assert.throws(() => resolve({ apiKey: LIVE }), /baseUrl/);
  assert.equal(resolve({ apiKey: KEY }).baseUrl, "http://127.0.0.1:8000");
  const token = jwt({ sub: "t_1", mode: "production" });
  assert.equal(resolve({ apiKey: token, baseUrl: "https://api.example.com" }).mode, "live");
  assert.throws(() => resolve({ apiKey: token, baseUrl: "http://api.example.com" }), /https/);
  assert.throws(() => resolve({ apiKey: token, baseUrl: "https://api.example.com", mode: "sandbox" }));
  assert.equal(resolve({ apiKey: jwt({ mode: "sandbox" }) }).mode, "sandbox");
});

test("hooks and debug lines, never the key", async () => {
  const seen: string[] = [];
  const lines: string[] = [];
  const { sluice } = scripted([failure("internal_error", 500), envelope({}, 200, { "X-Request-Id": "req_9" })], {
    onRequest: (r) => seen.push(`> ${r.method} ${new URL(r.url).pathname}`),
    onResponse: (r) => seen.push(`< ${r.status}`),
    debug: (line) => lines.push(line),
  });
  await sluice.health.retrieve();
  assert.deepEqual(seen, ["> GET /v1/health", "< 500", "> GET /v1/health", "< 200"]);
  assert.ok(lines.some((l) => l.includes("attempt 2: 200 request_id=req_9")), lines.join("\n"));
  assert.ok(!lines.some((l) => l.includes(KEY)));
});

test("a test event signed by the helper verifies as a typed event", () => {
  const secret = "whsec_" + Buffer.from("k".repeat(32)).toString("base64");
  const other = "whsec_" + Buffer.from("o".repeat(32)).toString("base64");
  const data = { transfer_id: "tr_1", state: "completed", previous_state: "pending" };
  const delivery = signTestEvent(secret, { type: "transfer.updated", data });
  const event = verifyWebhook(delivery.body, delivery.headers, secret);
  assert.match(event.id, /^evt_test_/);
  if (event.type !== "transfer.updated") throw new Error(`not narrowed: ${event.type}`);
  assert.equal(event.data.previous_state, "pending"); // typed: TransferUpdatedData
  const both = signTestEvent([secret, other], { type: "customer.created", data: {} });
  assert.equal(both.headers["x-service-signature"]?.split(" ").length, 2);
  assert.equal(verifyWebhook(both.body, both.headers, other).type, "customer.created");
  const stale = signTestEvent(secret, { type: "customer.created", data: {} }, { at: new Date(Date.now() - 600_000) });
  assert.throws(() => verifyWebhook(stale.body, stale.headers, secret), WebhookRefused);
  assert.throws(() => verifyWebhook(delivery.body, delivery.headers, other), WebhookRefused);
  // The raw body as bytes: a Node Buffer, and plain Uint8Array bytes (what a fetch-style server
  // hands over), each read as the UTF-8 text that was signed.
  assert.equal(verifyWebhook(Buffer.from(delivery.body), delivery.headers, secret).id, event.id);
  const bytes = new TextEncoder().encode(delivery.body);
  assert.equal(verifyWebhook(bytes, delivery.headers, secret).id, event.id);
  bytes[bytes.length - 2] = 0x20; // one byte changed: refused
  assert.throws(() => verifyWebhook(bytes, delivery.headers, secret), WebhookRefused);
});

// Type-level: tsc (strict) compiles this file with the tests; each @ts-expect-error must meet an
// error, so parameters that stopped being typed fail the build.
test("parameters are typed: a misspelt or wrongly typed field does not compile", () => {
  const { sluice } = scripted([]);
  const calls = [
    // @ts-expect-error a misspelt field
    () => sluice.customers.create({ account_type: "individual", emial: "a@example.com", country_code: "US", service_user_id: "u" }),
    // @ts-expect-error an enum value the gateway refuses
    () => sluice.customers.create({ account_type: "person", email: "a@example.com", country_code: "US", service_user_id: "u" }),
    // @ts-expect-error an individual without full_name (the gateway refuses it)
    () => sluice.customers.create({ account_type: "individual", email: "a@example.com", country_code: "US", service_user_id: "u" }),
    // @ts-expect-error a business without company_name (the gateway refuses it)
    () => sluice.customers.create({ account_type: "business", email: "a@example.com", country_code: "US", service_user_id: "u" }),
    // @ts-expect-error a wallet id is a string
    () => sluice.wallets.retrieve(123),
    // @ts-expect-error an option that does not exist
    () => sluice.health.retrieve({ timeout: 5 }),
    async () => {
      const t = await sluice.transfers.retrieve("tr_1");
      // @ts-expect-error a misspelt answer field
      return t.stat;
    },
  ];
  assert.equal(calls.length, 7);
});

test("sluice.api: a 2xx whose body is not JSON, or is empty, is returned, not thrown", async () => {
  const { sluice } = scripted([new Response("<html>created</html>", { status: 201 }), new Response(null, { status: 204 })]);
  const made = await ok(sluice.api.POST("/v1/customers", { body: { account_type: "individual", email: "e", country_code: "US", service_user_id: "u", full_name: "Ada" } }));
  assert.deepEqual(made, {});
  assert.deepEqual(await ok(sluice.api.GET("/v1/health")), {});
});
