// One logical operation, sent the right way: what every resource method (resources.ts) and the
// openapi-fetch client (Sluice.api) go through. The same rules as the Python SDK's
// sluice_sdk/core.py:
// - one idempotency key per operation that writes (every POST), chosen before the first attempt
//   and sent on every retry; transfers and payouts also carry it in the body;
// - bounded retries of what is safe to repeat (network failures, 429, 500, 502, 503, 504),
//   Retry-After honoured (seconds or an HTTP date), above 60 s thrown (the error carries it);
// - per call: an overall deadline (timeoutMs), maxAttempts, an AbortSignal honoured during
//   back-off too;
// - a 2xx is never an error: the answer's data is returned as the JSON it is (unknown fields and
//   enum values kept);
// - hooks (onRequest, onResponse) and a debug logger that never sees the credential.

import { randomUUID } from "node:crypto";

import { ConnectionFailed, DeadlineExceeded, SluiceError, Throttled, connectionFailed, errorFromAnswer } from "./errors.js";
import { answered, sameResponse } from "./results.js";
import { AdaptiveThrottle, DEFAULT_RETRY, type RetryPolicy, type Stats, delayMs, rejected } from "./retry.js";

export const VERSION = "0.1.0";

/** Per call: the last argument of every resource method. */
export interface RequestOptions {
  /** The operation's key, sent on every attempt (default: the body's idempotency_key for
   * transfers and payouts, else a new one). Keep it with your order to repeat safely. */
  idempotencyKey?: string;
  /** Milliseconds for the whole operation, every attempt and wait included; past it,
   * DeadlineExceeded. Each attempt is also bounded by the client's timeoutMs. */
  timeoutMs?: number;
  /** This operation's attempts, the first included (1: never retry). */
  maxAttempts?: number;
  /** Cancels the operation, in an attempt or in a back-off wait. */
  signal?: AbortSignal;
}

/** One page of a list, as the resources' listPage methods answer it: `data` (up to `limit`
 * items, in the list's order), `has_more` (more beyond it in the direction it was read), and
 * `next_cursor` (the next page's `starting_after`; null on the last page). A list that pages
 * both ways (the events: `ending_before`, `order`) also gives `previous_cursor` (the previous
 * page's `ending_before`; null on the first page) and `previousPage()`. `for await` over a page
 * walks it and every page after it. */
export class Page<T> implements AsyncIterable<T> {
  constructor(
    readonly data: T[],
    readonly has_more: boolean,
    readonly next_cursor: string | null,
    private readonly fetchAfter: (startingAfter: string) => Promise<Page<T>>,
    readonly previous_cursor: string | null = null,
    private readonly fetchBefore?: (endingBefore: string) => Promise<Page<T>>,
    private readonly readBackward = false,
  ) {}

  /** The page after this one (one request, the same query and limit), or undefined. */
  async nextPage(): Promise<Page<T> | undefined> {
    if (!(this.has_more || this.readBackward) || this.next_cursor === null) return undefined;
    return this.fetchAfter(this.next_cursor);
  }

  /** The page before this one (`ending_before` its first item), or undefined: the first page, or
   * a list that pages one way only. */
  async previousPage(): Promise<Page<T> | undefined> {
    if (this.previous_cursor === null || this.fetchBefore === undefined) return undefined;
    return this.fetchBefore(this.previous_cursor);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (let page: Page<T> | undefined = this; page !== undefined; page = await page.nextPage()) {
      yield* page.data;
    }
  }
}

/** The items, has_more and next_cursor of a list's answer: has_more is the answer's own when it
 * has one, else whether it handed out a cursor (the gateway's lists end with a null one).
 * `bothWays`: the answer gave has_more itself, as the lists that take `ending_before` do. */
export function pageFields<T>(answer: unknown): { items: T[]; hasMore: boolean; cursor: string | null; bothWays: boolean } {
  const body = (answer !== null && typeof answer === "object" ? answer : {}) as {
    items?: T[] | null;
    next_cursor?: string | null;
    has_more?: boolean;
  };
  const cursor = body.next_cursor ? String(body.next_cursor) : null;
  return { items: body.items ?? [], hasMore: body.has_more ?? cursor !== null, cursor, bothWays: typeof body.has_more === "boolean" };
}

/** The `ending_before` of the page before one (its first item's id), or null when nothing can lie
 * before it: the first page, or a page read backward (`ending_before`) with no more. */
export function previousCursor(items: unknown[], hasMore: boolean, query: object): string | null {
  const q = query as { starting_after?: string | null; ending_before?: string | null };
  const first = items[0] as { id?: unknown } | undefined;
  const backward = q.ending_before !== undefined && q.ending_before !== null;
  const mayPrecede = backward ? hasMore : q.starting_after !== undefined && q.starting_after !== null;
  return mayPrecede && typeof first?.id === "string" ? first.id : null;
}

/** What the generated resources call. */
export interface Core {
  request<T>(
    method: string,
    path: string,
    body: object | undefined,
    query: object | undefined,
    options: RequestOptions,
    extra?: { headers?: Record<string, string>; keyInBody?: boolean },
  ): Promise<T>;
  pages<T>(path: string, query: object, options: RequestOptions): AsyncGenerator<T>;
  page<T>(path: string, query: object, options: RequestOptions): Promise<Page<T>>;
}

export interface TransportOptions {
  baseUrl: string;
  headers: Record<string, string>;
  timeoutMs: number;
  retry: RetryPolicy;
  throttle: AdaptiveThrottle | undefined;
  random: () => number;
  sleep: ((ms: number) => Promise<void>) | undefined;
  fetch: (request: Request) => Promise<Response>;
  onRetry: ((failure: SluiceError, attempt: number, delayMs: number) => void) | undefined;
  onRequest: ((request: Request) => void) | undefined;
  onResponse: ((response: Response, request: Request) => void) | undefined;
  debug: ((line: string) => void) | undefined;
}

/** A fresh idempotency key: one per logical operation. */
export function newKey(): string {
  return "sdk_" + randomUUID().replaceAll("-", "");
}

function aborted(signal: AbortSignal | undefined): Promise<never> | undefined {
  if (signal === undefined) return undefined;
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/** Wait `ms`, or reject as soon as `signal` aborts. */
export async function pause(ms: number, signal: AbortSignal | undefined, sleep?: (ms: number) => Promise<void>): Promise<void> {
  signal?.throwIfAborted();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = sleep ? sleep(ms) : new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  const stop = aborted(signal);
  try {
    await (stop ? Promise.race([waited, stop]) : waited);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

function lenient(text: string): unknown {
  try {
    const body: unknown = JSON.parse(text);
    if (body !== null && typeof body === "object" && "data" in body) return (body as { data: unknown }).data;
    return body;
  } catch {
    return {}; // the operation succeeded; its answer is not JSON
  }
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

interface Prepared {
  method: string;
  url: string;
  headers: Headers;
  body: ArrayBuffer | undefined;
  policy: RetryPolicy;
  deadline: number | undefined;
  signal: AbortSignal | undefined;
}

export class Transport implements Core {
  readonly stats: Stats = { attempts: 0, retries: 0, refused: 0, unreached: 0, throttled: 0 };

  constructor(readonly options: TransportOptions) {}

  get throttle(): AdaptiveThrottle | undefined {
    return this.options.throttle;
  }

  async request<T>(
    method: string,
    path: string,
    body: object | undefined,
    query: object | undefined,
    options: RequestOptions,
    extra: { headers?: Record<string, string>; keyInBody?: boolean } = {},
  ): Promise<T> {
    const url = new URL(this.options.baseUrl.replace(/\/$/, "") + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers = new Headers({ ...this.options.headers, ...extra.headers });
    let payload: Record<string, unknown> | undefined = body === undefined ? undefined : { ...body };
    if (method !== "GET") {
      const inBody = extra.keyInBody ? payload?.["idempotency_key"] : undefined;
      if (options.idempotencyKey !== undefined && inBody !== undefined && inBody !== options.idempotencyKey) {
        throw new TypeError("options.idempotencyKey differs from the body's idempotency_key");
      }
      const key = options.idempotencyKey ?? (typeof inBody === "string" && inBody ? inBody : newKey());
      headers.set("Idempotency-Key", key);
      if (extra.keyInBody && payload !== undefined) payload = { ...payload, idempotency_key: key };
    }
    if (payload !== undefined) headers.set("Content-Type", "application/json");
    const encoded = payload === undefined ? undefined : new TextEncoder().encode(JSON.stringify(payload)).buffer;
    const response = await this.run(this.prepare(method, url.toString(), headers, encoded as ArrayBuffer | undefined, options));
    return answered(lenient(await response.text()), response) as T;
  }

  /** Every item of a list, page after page (next_cursor as starting_after), from the first page
   * or from the query's starting_after; nothing is sent before the first item is asked for. */
  async *pages<T>(path: string, query: object, options: RequestOptions): AsyncGenerator<T> {
    yield* await this.page<T>(path, query, options);
  }

  /** One page of a list (one request, the query as given). */
  async page<T>(path: string, query: object, options: RequestOptions): Promise<Page<T>> {
    const answer = await this.request<unknown>("GET", path, undefined, query, options);
    const { items, hasMore, cursor, bothWays } = pageFields<T>(answer);
    const after = (startingAfter: string) =>
      this.page<T>(path, { ...query, starting_after: startingAfter, ending_before: undefined }, options);
    if (!bothWays) return sameResponse(new Page<T>(items, hasMore, cursor, after), answer);
    const before = (endingBefore: string) =>
      this.page<T>(path, { ...query, starting_after: undefined, ending_before: endingBefore }, options);
    const backward = (query as { ending_before?: string | null }).ending_before != null;
    const page = new Page<T>(items, hasMore, cursor, after, previousCursor(items, hasMore, query), before, backward);
    return sameResponse(page, answer);
  }

  /** The fetch openapi-fetch is given (Sluice.api): the same key and retry rules. */
  async send(request: Request): Promise<Response> {
    const method = request.method.toUpperCase();
    const body = method === "GET" || method === "HEAD" ? undefined : await request.arrayBuffer();
    const headers = new Headers(request.headers);
    for (const [name, value] of Object.entries(this.options.headers)) if (!headers.has(name)) headers.set(name, value);
    if (body !== undefined) {
      const inBody = bodyKey(body);
      const given = headers.get("idempotency-key");
      if (given !== null && inBody !== undefined && given !== inBody) {
        throw new TypeError("Idempotency-Key differs from the body's idempotency_key");
      }
      if (given === null) headers.set("Idempotency-Key", inBody ?? newKey());
    }
    const response = await this.run(this.prepare(method, request.url, headers, body, { signal: request.signal }));
    const text = await response.text();
    const init = { status: response.status, statusText: response.statusText, headers: response.headers };
    if (text === "") return new Response(null, init);
    try {
      JSON.parse(text);
      return new Response(text, init);
    } catch {
      // a 2xx whose body is not JSON (a proxy's page): the operation succeeded; never an error
      const kept = new Headers(response.headers);
      kept.set("content-type", "application/json");
      return new Response("{}", { status: response.status, statusText: response.statusText, headers: kept });
    }
  }

  private prepare(
    method: string,
    url: string,
    headers: Headers,
    body: ArrayBuffer | undefined,
    options: RequestOptions,
  ): Prepared {
    if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) throw new RangeError("timeoutMs must be > 0");
    const policy = { ...this.options.retry, ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}) };
    const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    return { method, url, headers, body, policy, deadline, signal: options.signal };
  }

  /** Attempts until a 2xx (returned), a final error (thrown) or the attempts run out. */
  private async run(call: Prepared): Promise<Response> {
    let last: SluiceError | undefined;
    for (let attempt = 1; ; attempt++) {
      call.signal?.throwIfAborted();
      const left = call.deadline === undefined ? undefined : call.deadline - Date.now();
      if (left !== undefined && left <= 0) throw new DeadlineExceeded("the deadline passed", { cause: last });
      const outcome = await this.attempt(call, attempt, Math.min(this.options.timeoutMs, left ?? Infinity));
      if (outcome instanceof Response) return outcome;
      last = outcome;
      const delay = delayMs(call.policy, outcome, attempt, this.options.random);
      if (delay === undefined) throw outcome;
      const remaining = call.deadline === undefined ? undefined : call.deadline - Date.now();
      if (remaining !== undefined && delay >= remaining) {
        throw new DeadlineExceeded(`the deadline passes before the next attempt (${attempt} made): ${outcome.message}`, {
          cause: outcome,
        });
      }
      this.stats.retries++;
      this.options.onRetry?.(outcome, attempt, delay);
      await pause(delay, call.signal, this.options.sleep);
    }
  }

  private async attempt(call: Prepared, attempt: number, timeoutMs: number): Promise<Response | SluiceError> {
    this.stats.attempts++;
    const throttle = this.options.throttle;
    if (throttle !== undefined && !throttle.admit(this.options.random)) {
      this.stats.throttled++;
      return new Throttled("refused by the client's adaptive throttle (the gateway is shedding)");
    }
    const timer = AbortSignal.timeout(timeoutMs);
    const signals = call.signal ? [call.signal, timer] : [timer];
    let failure: SluiceError;
    const init: RequestInit = { method: call.method, headers: call.headers, signal: AbortSignal.any(signals) };
    if (call.body !== undefined) init.body = call.body;
    const request = new Request(call.url, init);
    const path = new URL(call.url).pathname;
    try {
      this.options.onRequest?.(request);
      const response = await this.options.fetch(request);
      this.options.onResponse?.(response, request);
      const requestId = response.headers.get("x-request-id") ?? "-";
      this.options.debug?.(`sluice ${call.method} ${path} attempt ${attempt}: ${response.status} request_id=${requestId}`);
      if (response.ok) {
        throttle?.record(true);
        return response;
      }
      failure = errorFromAnswer(response.status, response.headers, await response.text());
    } catch (err) {
      if (call.signal?.aborted) throw err; // the caller gave up: not ours to retry
      if (err instanceof SluiceError) throw err;
      this.options.debug?.(`sluice ${call.method} ${path} attempt ${attempt}: ${err instanceof Error ? err.name : "error"}`);
      const left = call.deadline === undefined ? undefined : call.deadline - Date.now();
      if (left !== undefined && left <= 0) {
        throw new DeadlineExceeded(`the deadline passed during attempt ${attempt}`, { cause: err });
      }
      failure = connectionFailed(err);
    }
    if (failure instanceof ConnectionFailed) {
      throttle?.unanswered();
      this.stats.unreached++;
      return failure;
    }
    const refused = rejected(failure);
    throttle?.record(!refused);
    if (refused) this.stats.refused++;
    return failure;
  }
}
