// Typed errors: every failure the gateway answers, by its envelope's `code` (the Python SDK's
// sluice_sdk/errors.py has the same classes). Each carries `code`, `reason` (details.reason),
// `field` (details.field), `details`, `status` and `requestId` (X-Request-Id: quote it to
// support). ConnectionFailed: no answer (refused, reset, timed out); Throttled: refused by this
// client's adaptive throttle before sending.

export interface ErrorInit {
  code?: string;
  cause?: unknown;
  status?: number;
  details?: Record<string, unknown>;
  requestId?: string;
  retryAfterMs?: number;
}

export class SluiceError extends Error {
  readonly code: string;
  readonly status: number | undefined;
  readonly details: Record<string, unknown>;
  readonly requestId: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(message: string, init: ErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code ?? (new.target as unknown as { CODE?: string }).CODE ?? "error";
    this.status = init.status;
    this.details = init.details ?? {};
    const fromDetails = this.details["request_id"];
    this.requestId = init.requestId ?? (typeof fromDetails === "string" ? fromDetails : undefined);
    this.retryAfterMs = init.retryAfterMs;
  }

  get reason(): string | undefined {
    const r = this.details["reason"];
    return r === undefined || r === null ? undefined : String(r);
  }

  get field(): string | undefined {
    const f = this.details["field"];
    return f === undefined || f === null ? undefined : String(f);
  }
}

export class InvalidRequest extends SluiceError { static CODE = "invalid_request"; }
export class Unauthorized extends SluiceError { static CODE = "unauthorized"; }
export class Forbidden extends SluiceError { static CODE = "forbidden"; }
export class NotFound extends SluiceError { static CODE = "not_found"; }
export class IdempotencyKeyRequired extends SluiceError { static CODE = "idempotency_key_required"; }
/** The key was used before with another request (409 idempotency_replay_mismatch). */
export class IdempotencyConflict extends SluiceError { static CODE = "idempotency_replay_mismatch"; }
export class RateLimited extends SluiceError { static CODE = "rate_limited"; }
export class InternalError extends SluiceError { static CODE = "internal_error"; }
export class ProviderError extends SluiceError { static CODE = "provider_error"; }
/** 503: no answer in time, or shed at the door (reason "overloaded"). */
export class ProviderUnavailable extends SluiceError { static CODE = "provider_unavailable"; }
/** No answer came: the connection was refused or reset, the name did not resolve, TLS failed, or
 * the attempt timed out. The request may or may not have reached the gateway (an operation with
 * an idempotency key is safe to repeat with it). The network's own error is `cause`; nothing
 * here says the gateway is loaded (that is Throttled). */
export class ConnectionFailed extends SluiceError { static CODE = "connection_failed"; }
/** Refused by this client's adaptive throttle before sending: the gateway has been answering most
 * recent requests with 429 or 503 (requests that got no answer do not count). */
export class Throttled extends SluiceError { static CODE = "client_throttled"; }
/** The operation's overall deadline (RequestOptions.timeoutMs) passed; the last failure is
 * `cause`. An operation with an idempotency key may have been done: repeat it with that key. */
export class DeadlineExceeded extends SluiceError { static CODE = "deadline_exceeded"; }

const BY_CODE: Record<string, new (message: string, init?: ErrorInit) => SluiceError> = Object.fromEntries(
  [
    InvalidRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    IdempotencyKeyRequired,
    IdempotencyConflict,
    RateLimited,
    InternalError,
    ProviderError,
    ProviderUnavailable,
  ].map((cls) => [cls.CODE, cls]),
);

/** The words of an error and of its causes ("TypeError: fetch failed (Error: connect
 * ECONNREFUSED 127.0.0.1:9)"): fetch's own message names no cause, its `cause` does. */
function described(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 4; depth++) {
    parts.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts[0] + parts.slice(1).map((p) => ` (${p})`).join("");
}

/** The error of an attempt that got no answer, `err` (the network's) as its cause. */
export function connectionFailed(err: unknown): ConnectionFailed {
  return new ConnectionFailed(`no answer from the gateway: ${described(err)}`, { cause: err });
}

/** Retry-After in milliseconds (RFC 9110 10.2.3: delay-seconds or an HTTP date). */
export function retryAfterMs(headers: Headers): number | undefined {
  const value = headers.get("retry-after");
  if (value === null) return undefined;
  const seconds = Number(value);
  if (value.trim() !== "" && Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** The typed error of a non-2xx answer (its envelope when it has one). */
export function errorFromAnswer(status: number, headers: Headers, text: string): SluiceError {
  const init: ErrorInit = { status, retryAfterMs: retryAfterMs(headers) };
  const requestId = headers.get("x-request-id");
  if (requestId !== null) init.requestId = requestId;
  let code = `http_${status}`;
  let message = text.slice(0, 200);
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    if (body.error && typeof body.error.code === "string") {
      code = body.error.code;
      message = typeof body.error.message === "string" ? body.error.message : code;
      if (body.error.details && typeof body.error.details === "object") {
        init.details = body.error.details as Record<string, unknown>;
      }
    }
  } catch {
    // not an envelope (a proxy's page): keep the status as the code
  }
  const cls = BY_CODE[code] ?? SluiceError;
  return new cls(message || code, { ...init, code });
}
