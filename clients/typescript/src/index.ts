// Sluice's TypeScript SDK: the generated types (schema.ts) through openapi-fetch, behind a
// thin layer that calls them the right way. See clients/README.md.

export { Sluice, configFromEnv, credentialMode, newKey, ok, pages, resolve, VERSION } from "./client.js";
export type { Core, RequestOptions } from "./core.js";
export { Page } from "./core.js";
export * from "./resources.js";
export type { Mode, SluiceConfig } from "./client.js";
export * from "./errors.js";
export { responseOf } from "./results.js";
export type { ResponseInfo } from "./results.js";
export { AdaptiveThrottle, DEFAULT_RETRY, delayMs, retryable } from "./retry.js";
export type { RetryPolicy, Stats, ThrottleOptions } from "./retry.js";
export { HEADERS, WebhookRefused, signTestEvent, standardHeaders, verifyWebhook } from "./webhooks.js";
export type { SignedDelivery } from "./webhooks.js";
export * from "./events.js";
export type { components, operations, paths } from "./schema.js";
