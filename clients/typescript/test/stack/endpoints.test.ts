// Managing webhook endpoints and reading lists one page at a time, through the resources against
// the real stack (run by tests/integration/test_sdk_stack.py, as stack.test.ts): webhooks.update
// moves, narrows and disables an endpoint; webhooks.delete answers it deleted, after which it is
// not found, not listed and sent nothing; listPage answers one page with its cursor.

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { type AddressInfo } from "node:net";
import { test } from "node:test";

import { InvalidRequest, NotFound, Sluice, configFromEnv, newKey } from "../../src/index.js";

const sluice = new Sluice(configFromEnv());

interface Receiver {
  url: string;
  bodies: string[];
  server: Server;
}

async function receiver(): Promise<Receiver> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      bodies.push(Buffer.concat(chunks).toString());
      res.writeHead(200).end("ok");
    });
  }).listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, bodies, server };
}

async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function customer(): Promise<string> {
  const person = { account_type: "individual", email: "m@example.com", country_code: "US", full_name: "M" } as const;
  return (await sluice.customers.create({ ...person, service_user_id: newKey() })).customer_id;
}

test("an endpoint is moved, disabled, enabled and deleted through the resources", async () => {
  const hooks = await receiver();
  try {
    const hook = await sluice.webhooks.create({ endpoint_url: "http://127.0.0.1:9/nowhere" });
    const id = hook.webhook_id;
    const moved = await sluice.webhooks.update(id, { endpoint_url: hooks.url, enabled_events: ["customer.created"] });
    assert.equal(moved.endpoint_url, hooks.url);
    assert.equal(moved.status, "enabled");
    assert.deepEqual(moved.enabled_events, ["customer.created"]);
    const first = await customer();
    await until(() => hooks.bodies.some((b) => b.includes(first)), "a delivery at the new URL");

    const paused = await sluice.webhooks.update(id, { status: "disabled" });
    assert.equal(paused.status, "disabled");
    assert.equal(paused.disabled_reason, "disabled_by_partner");
    await assert.rejects(sluice.webhooks.update(id, {}), InvalidRequest);
    const resumed = await sluice.webhooks.update(id, { status: "enabled" });
    assert.equal(resumed.status, "enabled");

    const deleted = await sluice.webhooks.delete(id);
    assert.equal(deleted.webhook_id, id);
    assert.equal(deleted.status, "deleted");
    await assert.rejects(sluice.webhooks.retrieve(id), NotFound);
    await assert.rejects(sluice.webhooks.delete(id), NotFound);
    const listed: string[] = [];
    for await (const w of sluice.webhooks.list()) listed.push(w.webhook_id);
    assert.ok(!listed.includes(id), listed.join(","));

    const after = await customer();
    await new Promise((r) => setTimeout(r, 3000)); // a delivery would have come by now
    assert.ok(!hooks.bodies.some((b) => b.includes(after)), "a deleted endpoint received an event");
  } finally {
    hooks.server.close();
  }
});

test("one page at a time with its cursor; limit is the page size", async () => {
  const key = process.env["SLUICE_PAGES_KEY"];
  if (!key) throw new Error("SLUICE_PAGES_KEY is not set: run through tests/integration/test_sdk_stack.py");
  const own = new Sluice({ ...configFromEnv(), apiKey: key });
  for (let i = 0; i < 5; i++) await own.webhooks.create({ endpoint_url: `http://127.0.0.1:9/hook${i}` });
  const all: string[] = [];
  for await (const w of own.webhooks.list({ limit: 2 })) all.push(w.webhook_id);
  assert.equal(new Set(all).size, 5);

  const first = await own.webhooks.listPage({ limit: 2 });
  assert.deepEqual(first.data.map((w) => w.webhook_id), all.slice(0, 2));
  assert.equal(first.has_more, true);
  const second = await first.nextPage();
  assert.deepEqual(second?.data.map((w) => w.webhook_id), all.slice(2, 4));
  const last = await own.webhooks.listPage({ limit: 2, starting_after: second?.next_cursor ?? "" });
  assert.deepEqual(last.data.map((w) => w.webhook_id), all.slice(4));
  assert.equal(last.has_more, false);
  assert.equal(last.next_cursor, null);
  assert.equal(await last.nextPage(), undefined);
  const walked: string[] = [];
  for await (const w of first) walked.push(w.webhook_id);
  assert.deepEqual(walked, all);
});

test("events page both ways by sequence: order, ending_before, previousPage", async () => {
  const key = process.env["SLUICE_PAGES_KEY"];
  if (!key) throw new Error("SLUICE_PAGES_KEY is not set: run through tests/integration/test_sdk_stack.py");
  const own = new Sluice({ ...configFromEnv(), apiKey: key });
  const person = { account_type: "individual", email: "m@example.com", country_code: "US", full_name: "M" } as const;
  for (let i = 0; i < 3; i++) await own.customers.create({ ...person, service_user_id: newKey() });
  let newest: { id: string; sequence: number }[] = [];
  const deadline = Date.now() + 30_000;
  while (newest.length < 3) {
    if (Date.now() > deadline) throw new Error(`events not listed: ${newest.length}`);
    newest = [];
    for await (const e of own.events.list({ limit: 100 })) newest.push(e);
    if (newest.length < 3) await new Promise((r) => setTimeout(r, 200));
  }
  const ids = newest.map((e) => e.id);
  const oldestIds = [...ids].reverse();
  const oldest = await own.events.listPage({ limit: 2, order: "asc" });
  assert.deepEqual(oldest.data.map((e) => e.id), oldestIds.slice(0, 2));
  assert.equal(await oldest.previousPage(), undefined); // the first page
  const last = await oldest.nextPage();
  assert.deepEqual(last?.data.map((e) => e.id), oldestIds.slice(2));
  assert.equal(last?.has_more, false);
  const back = await last?.previousPage();
  assert.deepEqual(back?.data.map((e) => e.id), oldestIds.slice(0, 2));
  const before = await own.events.listPage({ limit: 2, ending_before: ids[2] ?? "" });
  assert.deepEqual(before.data.map((e) => e.id), ids.slice(0, 2));
  const numbers = newest.map((e) => e.sequence);
  assert.deepEqual(numbers, [...numbers].sort((a, b) => b - a));
});
