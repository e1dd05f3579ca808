// Verifying a webhook delivery with the Standard Webhooks library (npm standardwebhooks), as the
// Python SDK's sluice_sdk/webhooks.py does. Sluice signs the Standard Webhooks way under its own
// header names (x-service-webhook-id, x-service-timestamp, x-service-signature); the library
// compares signatures in constant time and refuses timestamps more than 5 minutes away.

import { randomUUID } from "node:crypto";

import { Webhook } from "standardwebhooks";

import type { WebhookEvent } from "./events.js";

export const HEADERS: Readonly<Record<string, string>> = {
  "x-service-webhook-id": "webhook-id",
  "x-service-timestamp": "webhook-timestamp",
  "x-service-signature": "webhook-signature",
};

/** The delivery is not Sluice's: answer 400 and do not act on it. */
export class WebhookRefused extends Error {
  override name = "WebhookRefused";
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

export function standardHeaders(headers: HeaderBag): Record<string, string> {
  const out: Record<string, string> = {};
  const get = (name: string): string | undefined => {
    if (headers instanceof Headers) return headers.get(name) ?? undefined;
    const hit = Object.entries(headers).find(([k]) => k.toLowerCase() === name);
    const value = hit?.[1];
    return Array.isArray(value) ? value.join(" ") : value;
  };
  for (const [ours, std] of Object.entries(HEADERS)) {
    const value = get(ours);
    if (value !== undefined) out[std] = value;
  }
  return out;
}

/** The event (a WebhookEvent, discriminated by `type`) of a verified delivery, else
 * WebhookRefused. `payload` is the raw body exactly as received (a string, or its bytes: a
 * Node Buffer is a Uint8Array); `secret` the endpoint's whsec_ secret, or several (new and old
 * during a rotation). Deduplicate on the event's id. */
export function verifyWebhook(payload: Uint8Array | string, headers: HeaderBag, secret: string | string[]): WebhookEvent {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (secrets.length === 0) throw new RangeError("no secret given");
  const std = standardHeaders(headers);
  // The public type names no Node type, so a partner's project needs no @types/node; the
  // library takes a string or a Buffer only (any other bytes it would stringify as "1,2,3").
  const body = typeof payload === "string" ? payload : new TextDecoder().decode(payload);
  let last: unknown;
  for (const s of secrets) {
    try {
      return new Webhook(s).verify(body, std) as WebhookEvent;
    } catch (err) {
      last = err;
    }
  }
  throw new WebhookRefused(last instanceof Error ? last.message : String(last));
}

/** A delivery as Sluice would send it: the raw body and its headers. */
export interface SignedDelivery {
  body: string;
  headers: Record<string, string>;
}

/** Sign `event` as Sluice signs a delivery, for your own receiver's tests. Missing envelope
 * fields get test values (id evt_test_..., created_at now, api_version, mode sandbox); `at` is
 * the signature's time (default now); several secrets give one signature each (a rotation). */
export function signTestEvent(
  secret: string | string[],
  event: { type: string; data: unknown } & Record<string, unknown>,
  options: { at?: Date } = {},
): SignedDelivery {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (secrets.length === 0) throw new RangeError("no secret given");
  const at = options.at ?? new Date();
  const full = {
    id: `evt_test_${randomUUID().replaceAll("-", "")}`,
    created_at: at.toISOString(),
    api_version: "1.0.1",
    mode: "sandbox",
    ...event,
  };
  const body = JSON.stringify(full);
  const id = String(full.id);
  const signature = secrets.map((s) => new Webhook(s).sign(id, at, body)).join(" ");
  const headers = {
    "x-service-webhook-id": id,
    "x-service-timestamp": String(Math.floor(at.getTime() / 1000)),
    "x-service-signature": signature,
  };
  return { body, headers };
}
