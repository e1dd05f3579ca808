// The thin layer over the generated types (schema.ts, through openapi-fetch): the same rules
// as the Python SDK's sluice_sdk/client.py. Every request goes through Sluice.send, the fetch
// openapi-fetch is given: one idempotency key per logical operation (the body's
// idempotency_key for transfers and payouts, else a new one), reused on every retry; bounded
// retries that honour Retry-After; the adaptive throttle; typed errors for every non-2xx.
//
//   const sluice = new Sluice(configFromEnv());
//   const customer = (await ok(sluice.api.POST("/v1/customers", { body: { ... } }))).data;

import { randomUUID } from "node:crypto";
import createClient, { type Client } from "openapi-fetch";

import { ConnectionFailed, SluiceError, Throttled, errorFromAnswer } from "./errors.js";
import { AdaptiveThrottle, DEFAULT_RETRY, type RetryPolicy, type Stats, delayMs, rejected } from "./retry.js";
import type { paths } from "./schema.js";

export const VERSION = "0.1.0";
export type Mode = "sandbox" | "live";
const PREFIX: Record<Mode, string> = { sandbox: "sk_test_", live: "sk_live_" };
/** The gateway's names for the two modes (the x-service-mode header). */
const GATEWAY_MODE: Record<Mode, string> = { sandbox: "sandbox", live: "production" };

export interface SluiceConfig {
  apiKey: string;
  baseUrl?: string;
  /** Must match the key: sk_test_ is sandbox, sk_live_ live (a JWT is taken as given). */
  mode?: Mode;
  /** Per attempt. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  throttle?: AdaptiveThrottle;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  fetch?: (request: Request) => Promise<Response>;
  onRetry?: (failure: SluiceError, attempt: number, delayMs: number) => void;
}

/** SLUICE_MODE (sandbox | live, default sandbox) picks SLUICE_SANDBOX_KEY or SLUICE_LIVE_KEY;
 * SLUICE_API_URL is the gateway (default http://127.0.0.1:8000). */
export function configFromEnv(env: Record<string, string | undefined> = process.env): SluiceConfig {
  const mode = env["SLUICE_MODE"] ?? "sandbox";
  if (mode !== "sandbox" && mode !== "live") throw new RangeError(`SLUICE_MODE must be sandbox or live, not ${mode}`);
  const name = mode === "sandbox" ? "SLUICE_SANDBOX_KEY" : "SLUICE_LIVE_KEY";
  const apiKey = env[name];
  if (!apiKey) throw new RangeError(`${name} is not set`);
  return { apiKey, mode, baseUrl: env["SLUICE_API_URL"] ?? "http://127.0.0.1:8000" };
}

/** A fresh idempotency key: one per logical operation. */
export function newKey(): string {
  return "sdk_" + randomUUID().replaceAll("-", "");
}

function bodyKey(body: ArrayBuffer): string | undefined {
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(body));
    if (parsed !== null && typeof parsed === "object" && "idempotency_key" in parsed) {
      const key = (parsed as { idempotency_key: unknown }).idempotency_key;
      return typeof key === "string" && key !== "" ? key : undefined;
    }
  } catch {
    // not JSON: no key in it
  }
  return undefined;
}

export class Sluice {
  readonly api: Client<paths>;
  readonly stats: Stats = { attempts: 0, retries: 0, refused: 0, throttled: 0 };
  readonly throttle: AdaptiveThrottle;
  readonly retry: RetryPolicy;
  private readonly config: SluiceConfig;
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly fetchImpl: (request: Request) => Promise<Response>;

  constructor(config: SluiceConfig) {
    const mode = config.mode ?? "sandbox";
    if (!(mode in PREFIX)) throw new RangeError(`mode must be sandbox or live, not ${mode}`);
    if (!config.apiKey) throw new RangeError("apiKey is empty");
    if (config.apiKey.startsWith("sk_") && !config.apiKey.startsWith(PREFIX[mode])) {
      throw new RangeError(`a ${mode} client needs a ${PREFIX[mode]}... key`);
    }
    this.config = config;
    this.retry = { ...DEFAULT_RETRY, ...config.retry };
    this.throttle = config.throttle ?? new AdaptiveThrottle();
    this.random = config.random ?? Math.random;
    this.sleep = config.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.fetchImpl = config.fetch ?? ((request) => globalThis.fetch(request));
    this.api = createClient<paths>({
      baseUrl: config.baseUrl ?? "http://127.0.0.1:8000",
      headers: {
        Authorization: `Bearer ${config.apiKey}`,
        "x-service-mode": GATEWAY_MODE[mode],
        "User-Agent": `sluice-sdk-typescript/${VERSION}`,
      },
      fetch: (request) => this.send(request),
    });
  }

  /** One logical operation: attempts until a 2xx (returned), a final error (thrown) or the
   * attempts run out (the last error thrown). */
  async send(request: Request): Promise<Response> {
    const method = request.method.toUpperCase();
    const body = method === "GET" || method === "HEAD" ? undefined : await request.arrayBuffer();
    const headers = new Headers(request.headers);
    if (body !== undefined) {
      const inBody = bodyKey(body);
      const given = headers.get("idempotency-key");
      if (given !== null && inBody !== undefined && given !== inBody) {
        throw new TypeError("Idempotency-Key differs from the body's idempotency_key");
      }
      if (given === null) headers.set("Idempotency-Key", inBody ?? newKey());
    }
    for (let attempt = 1; ; attempt++) {
      const failure = await this.attempt(request, method, headers, body);
      if (failure instanceof Response) return failure;
      const delay = delayMs(this.retry, failure, attempt, this.random);
      if (delay === undefined) throw failure;
      this.stats.retries++;
      this.config.onRetry?.(failure, attempt, delay);
      await this.sleep(delay);
    }
  }

  private async attempt(
    request: Request,
    method: string,
    headers: Headers,
    body: ArrayBuffer | undefined,
  ): Promise<Response | SluiceError> {
    this.stats.attempts++;
    if (!this.throttle.admit(this.random)) {
      this.stats.throttled++;
      return new Throttled("refused by the client's adaptive throttle (the gateway is shedding)");
    }
    const signals = [request.signal, AbortSignal.timeout(this.config.timeoutMs ?? 30_000)];
    let failure: SluiceError;
    try {
      const init: RequestInit = { method, headers, signal: AbortSignal.any(signals) };
      if (body !== undefined) init.body = body;
      const response = await this.fetchImpl(new Request(request.url, init));
      if (response.ok) {
        this.throttle.record(true);
        return response;
      }
      failure = errorFromAnswer(response.status, response.headers, await response.text());
    } catch (err) {
      if (request.signal.aborted) throw err; // the caller gave up: not ours to retry
      if (err instanceof SluiceError) throw err;
      failure = new ConnectionFailed(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
    }
    const refused = rejected(failure);
    this.throttle.record(!refused);
    if (refused) this.stats.refused++;
    return failure;
  }
}

/** The success envelope of an openapi-fetch call (errors were thrown by Sluice.send). */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, response } = await call;
  if (data === undefined) {
    throw new SluiceError(`no body in a ${response.status} answer`, { status: response.status });
  }
  return data;
}

interface Listing<T> {
  data: { items: T[]; next_cursor?: string | null };
}

/** Every item of a list endpoint, page after page (next_cursor as starting_after):
 *   for await (const c of pages((after) => sluice.api.GET("/v1/customers",
 *       { params: { query: { limit: 100, starting_after: after } } })))  */
export async function* pages<T>(
  fetchPage: (startingAfter: string | undefined) => Promise<{ data?: Listing<T>; error?: unknown; response: Response }>,
): AsyncGenerator<T> {
  let cursor: string | undefined;
  for (;;) {
    const page = (await ok(fetchPage(cursor))).data;
    yield* page.items;
    if (!page.next_cursor) return;
    cursor = page.next_cursor;
  }
}
