// What the gateway said about a successful answer, beside its data: the request id (X-Request-Id,
// quote it to support) and whether the answer is a replay of an earlier one with the same
// idempotency key (X-Idempotent-Replay: true: the operation was done once, before; this call
// changed nothing). The same as the Python SDK's sluice_sdk/results.py (response_of).
//
//   const customer = await sluice.customers.create({ ... });
//   responseOf(customer).requestId, responseOf(customer).replayed, responseOf(customer).status
//
// Every result a resource method returns, and every page, carries it. Results stay the plain
// JSON the gateway sent (typed by schema.ts): the response is kept beside them, in a WeakMap.

export interface ResponseInfo {
  readonly requestId: string | undefined;
  readonly replayed: boolean;
  readonly status: number;
}

const RESPONSES = new WeakMap<object, ResponseInfo>();

function infoOf(response: Response): ResponseInfo {
  return {
    requestId: response.headers.get("x-request-id") ?? undefined,
    replayed: (response.headers.get("x-idempotent-replay") ?? "").trim().toLowerCase() === "true",
    status: response.status,
  };
}

/** `data` remembered with the response it came in (an object; anything else as it is). */
export function answered<T>(data: T, response: Response): T {
  if (data !== null && typeof data === "object") RESPONSES.set(data, infoOf(response));
  return data;
}

/** `target` remembered with the response `source` came in (a page and its answer). */
export function sameResponse<T extends object>(target: T, source: unknown): T {
  const info = source !== null && typeof source === "object" ? RESPONSES.get(source) : undefined;
  if (info !== undefined) RESPONSES.set(target, info);
  return target;
}

/** The request id, replay flag and status of a result or page this SDK returned. */
export function responseOf(result: object): ResponseInfo {
  const info = result !== null && typeof result === "object" ? RESPONSES.get(result) : undefined;
  if (info === undefined) {
    throw new TypeError("responseOf() takes a result or page returned by a Sluice method");
  }
  return info;
}
