// When to try again and how long to wait: the same rules and defaults as the Python SDK's
// sluice_sdk/retry.py (change both together).

import { ConnectionFailed, SluiceError, Throttled } from "./errors.js";

/** Answers worth another attempt with the same idempotency key: 429, 500, 503, and a load
 * balancer's 502 and 504. Every operation sent is safe to repeat (reads; writes with their key). */
export const RETRYABLE_STATUS: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/**
 * `maxAttempts` counts every attempt, the first included (1 = never retry). The wait before
 * attempt n+1 is `uniform(0, min(capMs, baseMs * 2**(n-1)))` ("full jitter"), added to
 * Retry-After when the answer carries one: never before the gateway asked, and a fleet told
 * "1 s" does not come back in step. An answer asking more than `maxRetryAfterMs` is raised.
 */
export interface RetryPolicy {
  maxAttempts: number;
  baseMs: number;
  capMs: number;
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 6, baseMs: 250, capMs: 8000, maxRetryAfterMs: 60000 };

export function retryable(failure: SluiceError): boolean {
  if (failure instanceof ConnectionFailed || failure instanceof Throttled) return true;
  return failure.status !== undefined && RETRYABLE_STATUS.has(failure.status);
}

/** Whether an answer counts as refused for the throttle: shed (503) or rate limited (429). A
 * request that got no answer (ConnectionFailed) is neither accepted nor refused: the gateway said
 * nothing about its load, so the throttle does not count it (else an outage of the network would
 * leave the client throttling itself once the network is back). */
export function rejected(failure: SluiceError | undefined): boolean {
  if (failure === undefined || failure instanceof ConnectionFailed) return false;
  return failure.status === 429 || failure.status === 503;
}

/** Milliseconds before the next attempt, or undefined to raise `failure` now. */
export function delayMs(
  policy: RetryPolicy,
  failure: SluiceError,
  attempt: number,
  random: () => number,
): number | undefined {
  if (attempt >= policy.maxAttempts || !retryable(failure)) return undefined;
  if (failure.retryAfterMs !== undefined && failure.retryAfterMs > policy.maxRetryAfterMs) return undefined;
  const jitter = random() * Math.min(policy.capMs, policy.baseMs * 2 ** (attempt - 1));
  return (failure.retryAfterMs ?? 0) + jitter;
}

export interface ThrottleOptions {
  k?: number;
  windowMs?: number;
  minRequests?: number;
  clock?: () => number;
}

/**
 * Client-side throttling (Site Reliability Engineering, ch. 21): over the last `windowMs` this
 * client made `requests` attempts of which the gateway accepted `accepts`; a new attempt is
 * refused locally with probability max(0, (requests - k * accepts) / (requests + 1)). A refused
 * attempt counts as a request. Below `minRequests` in the window it admits everything (the
 * formula is meant for many requests). k = 2, a two-minute window, 10 requests: as in Python.
 */
export class AdaptiveThrottle {
  readonly k: number;
  readonly windowMs: number;
  readonly minRequests: number;
  private readonly clock: () => number;
  private readonly requests: number[] = [];
  private readonly accepts: number[] = [];

  constructor(options: ThrottleOptions = {}) {
    this.k = options.k ?? 2;
    if (!(this.k > 0)) throw new RangeError("k > 0");
    this.windowMs = options.windowMs ?? 120_000;
    this.minRequests = options.minRequests ?? 10;
    this.clock = options.clock ?? (() => performance.now());
  }

  private prune(now: number): void {
    for (const q of [this.requests, this.accepts]) {
      while (q.length > 0 && (q[0] as number) <= now - this.windowMs) q.shift();
    }
  }

  probability(): number {
    this.prune(this.clock());
    const requests = this.requests.length;
    if (requests < this.minRequests) return 0;
    return Math.max(0, (requests - this.k * this.accepts.length) / (requests + 1));
  }

  /** Count an attempt; false when the throttle refuses it (send nothing then). */
  admit(random: () => number): boolean {
    const p = this.probability();
    this.requests.push(this.clock());
    return random() >= p;
  }

  record(accepted: boolean): void {
    if (accepted) this.accepts.push(this.clock());
  }

  /** The attempt just admitted got no answer: it is taken out of the window again. */
  unanswered(): void {
    this.requests.pop();
  }
}

/** What one client has done (read it in tests and metrics). */
export interface Stats {
  attempts: number;
  retries: number;
  /** 429 and 503 answers. */
  refused: number;
  /** Attempts that got no answer (ConnectionFailed). */
  unreached: number;
  throttled: number;
}
