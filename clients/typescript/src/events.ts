// Webhook events, typed: a union discriminated by `type` (contract section 7), as the Python
// SDK's sluice_sdk/events.py. verifyWebhook returns a WebhookEvent; check event.type and the
// compiler knows event.data. Answers' enums are strings: a newer value is kept, and a newer
// event type arrives as it is (check type before reading data).

import type { components } from "./schema.js";

type Schemas = components["schemas"];

export const EVENT_TYPES = [
  "customer.created",
  "wallet.created",
  "virtual_account.created",
  "deposit.received",
  "transfer.created",
  "transfer.updated",
  "payout.created",
  "payout.updated",
  "webhook_endpoint.disabled",
] as const;

export interface CustomerData {
  customer_id: string;
  account_type: string;
  service_user_id: string;
}

export interface WalletData {
  wallet_id: string;
  deposit_address: string;
  symbol: string;
  chain: string;
  customer_id: string;
}

export interface DepositData {
  deposit_id: string;
  virtual_account_id: string;
  wallet_id: string;
  /** decimal string */
  amount: string;
  currency: string;
  credited_amount: string;
  credited_currency: string;
  state: string;
  created_at: string;
}

export type TransferUpdatedData = Schemas["Transfer"] & { previous_state?: string | null };

export interface EndpointDisabledData {
  webhook_id: string;
  endpoint_url: string;
  reason: string;
  failing_since?: string | null;
  disabled_at: string;
}

interface Envelope<T extends string, D> {
  /** evt_...: deduplicate on it (deliveries are at least once). */
  id: string;
  type: T;
  created_at: string;
  api_version: string;
  /** sandbox | production */
  mode: string;
  data: D;
}

export type CustomerCreatedEvent = Envelope<"customer.created", CustomerData>;
export type WalletCreatedEvent = Envelope<"wallet.created", WalletData>;
export type VirtualAccountCreatedEvent = Envelope<"virtual_account.created", Schemas["VirtualAccount"]>;
export type DepositReceivedEvent = Envelope<"deposit.received", DepositData>;
export type TransferCreatedEvent = Envelope<"transfer.created", Schemas["Transfer"]>;
export type TransferUpdatedEvent = Envelope<"transfer.updated", TransferUpdatedData>;
export type PayoutCreatedEvent = Envelope<"payout.created", Schemas["Transfer"]>;
export type PayoutUpdatedEvent = Envelope<"payout.updated", TransferUpdatedData>;
export type WebhookEndpointDisabledEvent = Envelope<"webhook_endpoint.disabled", EndpointDisabledData>;

export type WebhookEvent =
  | CustomerCreatedEvent
  | WalletCreatedEvent
  | VirtualAccountCreatedEvent
  | DepositReceivedEvent
  | TransferCreatedEvent
  | TransferUpdatedEvent
  | PayoutCreatedEvent
  | PayoutUpdatedEvent
  | WebhookEndpointDisabledEvent;
