// The client: resources (sluice.customers.create(...), generated in resources.ts) and the
// openapi-fetch client over the generated types (sluice.api), both sending through one
// Transport (core.ts): the same rules as the Python SDK's sluice_sdk/client.py.
//
//   const sluice = new Sluice(configFromEnv());
//   const customer = await sluice.customers.create({ account_type: "individual", ... });

import createClient, { type Client } from "openapi-fetch";

import { type Core, type RequestOptions, Transport, VERSION, newKey } from "./core.js";
import { SluiceError } from "./errors.js";
import { Resources } from "./resources.js";
import { AdaptiveThrottle, DEFAULT_RETRY, type RetryPolicy, type Stats } from "./retry.js";
import type { paths } from "./schema.js";

export { VERSION, newKey };
export type Mode = "sandbox" | "live";
const PREFIX: Record<Mode, string> = { sandbox: "sk_test_", live: "sk_live_" };
/** The gateway's names for the two modes (the x-service-mode header, a JWT's mode claim). */
const GATEWAY_MODE: Record<Mode, string> = { sandbox: "sandbox", live: "production" };
const SANDBOX_URL = "http://127.0.0.1:8000";

export interface SluiceConfig {
  apiKey: string;
  /** The sandbox's default: http://127.0.0.1:8000. A live client must name its gateway, over
   * https unless it is a loopback address. */
  baseUrl?: string;
  /** Defaults to the credential's: sk_test_ sandbox, sk_live_ live, a JWT's mode claim. */
  mode?: Mode;
  /** Per attempt (a whole operation: RequestOptions.timeoutMs). */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** The adaptive throttle; false switches it off. */
  throttle?: AdaptiveThrottle | false;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  fetch?: (request: Request) => Promise<Response>;
  onRetry?: (failure: SluiceError, attempt: number, delayMs: number) => void;
  onRequest?: (request: Request) => void;
  onResponse?: (response: Response, request: Request) => void;
  /** Debug lines (method, path, attempt, status, request id; never the credential). */
  debug?: (line: string) => void;
}

/** The mode an API key (sk_test_, sk_live_) or a JWT (its mode claim, read without verifying
 * it: the gateway verifies) is for; undefined when it says nothing. */
export function credentialMode(apiKey: string): Mode | undefined {
  for (const mode of ["sandbox", "live"] as const) if (apiKey.startsWith(PREFIX[mode])) return mode;
  const parts = apiKey.split(".");
  if (parts.length !== 3) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1] ?? "", "base64url").toString("utf8"));
    const mode = claims !== null && typeof claims === "object" ? (claims as { mode?: unknown }).mode : undefined;
    if (mode === "sandbox") return "sandbox";
    if (mode === "production" || mode === "live") return "live";
  } catch {
    // not a JWT
  }
  return undefined;
}

function loopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  return bare === "localhost" || bare.endsWith(".localhost") || bare === "::1" || /^127\.\d+\.\d+\.\d+$/.test(bare);
}

/** A clear TypeError, naming the fix, for a client built from something not a configuration
 * (the common slip in JavaScript: the key itself, `new Sluice("sk_test_...")`), or from fields of
 * the wrong type. The same words as the Python SDK's. */
function checkTypes(config: unknown): void {
  if (typeof config === "string") {
    throw new TypeError(
      'Sluice() takes a configuration, not the key itself: new Sluice({ apiKey: "sk_test_..." }), or new Sluice(configFromEnv())',
    );
  }
  if (config === null || typeof config !== "object" || Array.isArray(config)) {
    const what = config === null ? "null" : Array.isArray(config) ? "an array" : typeof config;
    throw new TypeError(`Sluice() takes a configuration object, not ${what}: new Sluice({ apiKey: "sk_test_..." })`);
  }
  const fields = config as Record<string, unknown>;
  const expected: Array<[string, string]> = [
    ["apiKey", "string"],
    ["baseUrl", "string"],
    ["mode", "string"],
    ["timeoutMs", "number"],
  ];
  for (const [name, type] of expected) {
    const value = fields[name];
    if (name !== "apiKey" && value === undefined) continue;
    if (typeof value !== type) {
      throw new TypeError(`SluiceConfig.${name} must be a ${type}, not ${value === null ? "null" : typeof value}`);
    }
  }
}

/** The configuration's mode and gateway, checked: a live credential goes over https only. */
export function resolve(config: SluiceConfig): { mode: Mode; baseUrl: string } {
  checkTypes(config);
  if (!config.apiKey) throw new RangeError("apiKey is empty");
  if (config.mode !== undefined && !(config.mode in PREFIX)) {
    throw new RangeError(`mode must be sandbox or live, not ${String(config.mode)}`);
  }
  const said = credentialMode(config.apiKey);
  if (config.mode !== undefined && said !== undefined && said !== config.mode) {
    throw new RangeError(`a ${config.mode} client needs a ${PREFIX[config.mode]}... key (this credential is ${said})`);
  }
  const mode = config.mode ?? said ?? "sandbox";
  if (config.baseUrl === undefined && mode === "live") {
    throw new RangeError("a live client needs baseUrl: its gateway's https:// address");
  }
  const baseUrl = config.baseUrl ?? SANDBOX_URL;
  const url = new URL(baseUrl);
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new RangeError(`baseUrl must be http(s): ${baseUrl}`);
  if (mode === "live" && url.protocol !== "https:" && !loopback(url.hostname)) {
    throw new RangeError(`a live client sends its key over https only, not to ${baseUrl}`);
  }
  return { mode, baseUrl };
}

/** SLUICE_MODE (sandbox | live, default sandbox) picks SLUICE_SANDBOX_KEY or SLUICE_LIVE_KEY;
 * SLUICE_API_URL is the gateway (the sandbox's default: http://127.0.0.1:8000; live: required). */
export function configFromEnv(env: Record<string, string | undefined> = process.env): SluiceConfig {
  const mode = env["SLUICE_MODE"] ?? "sandbox";
  if (mode !== "sandbox" && mode !== "live") throw new RangeError(`SLUICE_MODE must be sandbox or live, not ${mode}`);
  const name = mode === "sandbox" ? "SLUICE_SANDBOX_KEY" : "SLUICE_LIVE_KEY";
  const apiKey = env[name];
  if (!apiKey) throw new RangeError(`${name} is not set`);
  const baseUrl = env["SLUICE_API_URL"];
  return baseUrl === undefined ? { apiKey, mode } : { apiKey, mode, baseUrl };
}

export class Sluice extends Resources {
  /** The openapi-fetch client over the generated types, for what resources do not say. */
  readonly api: Client<paths>;
  readonly mode: Mode;
  readonly retry: RetryPolicy;
  readonly transport: Transport;

  constructor(config: SluiceConfig) {
    const { mode, baseUrl } = resolve(config);
    const retry = { ...DEFAULT_RETRY, ...config.retry };
    const transport = new Transport({
      baseUrl,
      headers: {
        Authorization: `Bearer ${config.apiKey}`,
        "x-service-mode": GATEWAY_MODE[mode],
        "User-Agent": `sluice-sdk-typescript/${VERSION}`,
      },
      timeoutMs: config.timeoutMs ?? 30_000,
      retry,
      throttle: config.throttle === false ? undefined : (config.throttle ?? new AdaptiveThrottle()),
      random: config.random ?? Math.random,
      sleep: config.sleep,
      fetch: config.fetch ?? ((request) => globalThis.fetch(request)),
      onRetry: config.onRetry,
      onRequest: config.onRequest,
      onResponse: config.onResponse,
      debug: config.debug,
    });
    super(transport);
    this.transport = transport;
    this.mode = mode;
    this.retry = retry;
    this.api = createClient<paths>({ baseUrl, fetch: (request) => transport.send(request) });
  }

  get stats(): Stats {
    return this.transport.stats;
  }

  get throttle(): AdaptiveThrottle | undefined {
    return this.transport.throttle;
  }

  /** One operation by method and path, as the resources send it. */
  request<T>(method: string, path: string, body?: object, query?: object, options: RequestOptions = {}): Promise<T> {
    return (this.transport as Core).request<T>(method, path, body, query, options);
  }

  /** As before resources: openapi-fetch's send (kept for callers of Sluice.send). */
  send(request: Request): Promise<Response> {
    return this.transport.send(request);
  }
}

/** The success envelope of an openapi-fetch call (errors were thrown by the transport). */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, response } = await call;
  if (data !== undefined) return data;
  if (response.ok) return {} as T; // a 2xx without a body: the operation succeeded, never an error
  throw new SluiceError(`no body in a ${response.status} answer`, { status: response.status });
}

interface Listing<T> {
  data: { items: T[]; next_cursor?: string | null };
}

/** Every item of a list endpoint through openapi-fetch (resources' list() does this for you). */
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
