// Verifying a webhook delivery with the Standard Webhooks library (npm standardwebhooks), as the
// Python SDK's sluice_sdk/webhooks.py does. Sluice signs the Standard Webhooks way under its own
// header names (x-service-webhook-id, x-service-timestamp, x-service-signature); the library
// compares signatures in constant time and refuses timestamps more than 5 minutes away.

import { Webhook } from "standardwebhooks";

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

/** The event ({id, type, created_at, mode, data, ...}) of a verified delivery, else
 * WebhookRefused. `payload` is the raw body exactly as received; `secret` the endpoint's
 * whsec_ secret, or several (new and old during a rotation). Deduplicate on the event's id. */
export function verifyWebhook(payload: string | Buffer, headers: HeaderBag, secret: string | string[]): unknown {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (secrets.length === 0) throw new RangeError("no secret given");
  const std = standardHeaders(headers);
  let last: unknown;
  for (const s of secrets) {
    try {
      return new Webhook(s).verify(payload, std);
    } catch (err) {
      last = err;
    }
  }
  throw new WebhookRefused(last instanceof Error ? last.message : String(last));
}
