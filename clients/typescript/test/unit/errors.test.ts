// Errors and results in words: the same cases as tests/unit/test_sdk_errors.py. A request that got
// no answer is ConnectionFailed with the network's error as its cause, and an outage never leaves
// the client throttling itself; a client built from the wrong thing is a TypeError naming the
// fix; every result and page says its request id and whether it was a replay. The refused
// connection is real: a loopback port nothing listens on.

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";

import {
  AdaptiveThrottle,
  ConnectionFailed,
  ProviderUnavailable,
  Sluice,
  type SluiceConfig,
  Throttled,
  responseOf,
} from "../../src/index.js";

const KEY = "sk_test_" + "a".repeat(43);
const CUSTOMER = { customer_id: "cus_1", account_type: "individual", service_user_id: "u-1" };
const BODY = {
  account_type: "individual" as const,
  email: "ada@example.com",
  country_code: "US",
  service_user_id: "u-1",
  full_name: "Ada Lovelace",
};

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  assert.ok(address !== null && typeof address === "object");
  return address.port;
}

function seeded(): () => number {
  let seed = 7;
  return () => (seed = (seed * 16807) % 2147483647) / 2147483647;
}

test("errors in words: a refused connection is ConnectionFailed with its cause", async () => {
  const sluice = new Sluice({
    apiKey: KEY,
    baseUrl: `http://127.0.0.1:${await closedPort()}`,
    retry: { maxAttempts: 2 },
    sleep: async () => undefined,
  });
  const failure = await sluice.customers.create(BODY).then(
    () => assert.fail("no server listens there"),
    (err: unknown) => err,
  );
  assert.ok(failure instanceof ConnectionFailed && !(failure instanceof Throttled));
  assert.equal(failure.code, "connection_failed");
  assert.ok(failure.cause instanceof Error, "the network's error is kept as cause");
  assert.match(failure.message, /ECONNREFUSED/); // fetch's "fetch failed" alone names no cause
  assert.equal(sluice.stats.unreached, 2);
  assert.equal(sluice.stats.refused, 0);
});

test("errors in words: after an outage the next call is sent, not throttled", async () => {
  let down = true;
  let sent = 0;
  const sluice = new Sluice({
    apiKey: KEY,
    baseUrl: "http://gw.test",
    retry: { maxAttempts: 4 },
    random: seeded(),
    sleep: async () => undefined,
    fetch: async () => {
      sent++;
      if (down) throw new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 10.0.0.1:443") });
      return Response.json({ success: true, data: CUSTOMER }, { status: 201, headers: { "X-Request-Id": "req_ok" } });
    },
  });
  for (let i = 0; i < 5; i++) {
    await assert.rejects(sluice.customers.create(BODY), (err: unknown) => err instanceof ConnectionFailed && err.cause instanceof TypeError);
  }
  assert.equal(sent, 20);
  assert.equal(sluice.throttle?.probability(), 0);
  down = false;
  for (let i = 0; i < 5; i++) assert.equal((await sluice.customers.create(BODY)).customer_id, "cus_1");
  assert.equal(sluice.stats.throttled, 0);
});

test("errors in words: the throttle still holds back when the gateway sheds", async () => {
  const sluice = new Sluice({
    apiKey: KEY,
    baseUrl: "http://gw.test",
    retry: { maxAttempts: 4 },
    random: seeded(),
    sleep: async () => undefined,
    throttle: new AdaptiveThrottle(),
    fetch: async () =>
      Response.json(
        { success: false, error: { code: "provider_unavailable", message: "x", details: {} } },
        { status: 503, headers: { "Retry-After": "0" } },
      ),
  });
  for (let i = 0; i < 10; i++) {
    await assert.rejects(sluice.customers.create(BODY), (err: unknown) => err instanceof Throttled || err instanceof ProviderUnavailable);
  }
  assert.ok(sluice.stats.throttled > 0);
});

test("errors in words: a client built from the wrong thing says how to build it", () => {
  const build = (given: unknown) => () => new Sluice(given as SluiceConfig);
  assert.throws(build(KEY), {
    name: "TypeError",
    message: 'Sluice() takes a configuration, not the key itself: new Sluice({ apiKey: "sk_test_..." }), or new Sluice(configFromEnv())',
  });
  assert.throws(build(null), { name: "TypeError", message: /^Sluice\(\) takes a configuration object, not null/ });
  assert.throws(build({ apiKey: 12345 }), { name: "TypeError", message: "SluiceConfig.apiKey must be a string, not number" });
  assert.throws(build({ apiKey: KEY, timeoutMs: "30" }), {
    name: "TypeError",
    message: "SluiceConfig.timeoutMs must be a number, not string",
  });
});

test("errors in words: every result says its request id and whether it was replayed", async () => {
  const answers = [
    Response.json({ success: true, data: CUSTOMER }, { status: 201, headers: { "X-Request-Id": "req_a" } }),
    Response.json(
      { success: true, data: CUSTOMER },
      { status: 201, headers: { "X-Request-Id": "req_b", "X-Idempotent-Replay": "true" } },
    ),
    Response.json({ success: true, data: { items: [CUSTOMER], next_cursor: null } }, { headers: { "X-Request-Id": "req_c" } }),
  ];
  const sluice = new Sluice({ apiKey: KEY, baseUrl: "http://gw.test", fetch: async () => answers.shift() as Response });
  const created = await sluice.customers.create(BODY);
  assert.deepEqual(responseOf(created), { requestId: "req_a", replayed: false, status: 201 });
  const replayed = await sluice.customers.create(BODY, { idempotencyKey: "order-1" });
  assert.deepEqual(responseOf(replayed), { requestId: "req_b", replayed: true, status: 201 });
  assert.deepEqual(JSON.parse(JSON.stringify(replayed)), CUSTOMER); // still the plain JSON
  const page = await sluice.customers.listPage({ limit: 1 });
  assert.equal(responseOf(page).requestId, "req_c");
  assert.equal(responseOf(page).replayed, false);
  assert.throws(() => responseOf({ customer_id: "cus_1" }), { name: "TypeError", message: /^responseOf\(\) takes a result or page/ });
});
