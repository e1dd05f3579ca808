"""Contains all the data models used in inputs/outputs"""

from .bank_account_in import BankAccountIn
from .business_customer_create import BusinessCustomerCreate
from .business_customer_create_account_type import BusinessCustomerCreateAccountType
from .customer import Customer
from .customer_account_type import CustomerAccountType
from .customer_provider import CustomerProvider
from .delete_v1_webhooks_by_webhook_id_response_200 import DeleteV1WebhooksByWebhookIdResponse200
from .developer_fee_in import DeveloperFeeIn
from .empty import Empty
from .error_envelope import ErrorEnvelope
from .error_object import ErrorObject
from .error_object_code import ErrorObjectCode
from .error_object_details import ErrorObjectDetails
from .event_envelope import EventEnvelope
from .event_envelope_data import EventEnvelopeData
from .fee_balance import FeeBalance
from .get_v1_customers_by_customer_id_response_200 import GetV1CustomersByCustomerIdResponse200
from .get_v1_customers_response_200 import GetV1CustomersResponse200
from .get_v1_customers_response_200_data import GetV1CustomersResponse200Data
from .get_v1_events_by_event_id_response_200 import GetV1EventsByEventIdResponse200
from .get_v1_events_order import GetV1EventsOrder
from .get_v1_events_response_200 import GetV1EventsResponse200
from .get_v1_events_response_200_data import GetV1EventsResponse200Data
from .get_v1_fee_balances_response_200 import GetV1FeeBalancesResponse200
from .get_v1_fee_balances_response_200_data import GetV1FeeBalancesResponse200Data
from .get_v1_health_response_200 import GetV1HealthResponse200
from .get_v1_payouts_by_transfer_id_response_200 import GetV1PayoutsByTransferIdResponse200
from .get_v1_payouts_response_200 import GetV1PayoutsResponse200
from .get_v1_payouts_response_200_data import GetV1PayoutsResponse200Data
from .get_v1_transfers_by_transfer_id_response_200 import GetV1TransfersByTransferIdResponse200
from .get_v1_transfers_response_200 import GetV1TransfersResponse200
from .get_v1_transfers_response_200_data import GetV1TransfersResponse200Data
from .get_v1_virtual_accounts_by_virtual_account_id_response_200 import (
    GetV1VirtualAccountsByVirtualAccountIdResponse200,
)
from .get_v1_virtual_accounts_response_200 import GetV1VirtualAccountsResponse200
from .get_v1_virtual_accounts_response_200_data import GetV1VirtualAccountsResponse200Data
from .get_v1_wallets_by_wallet_id_response_200 import GetV1WalletsByWalletIdResponse200
from .get_v1_wallets_by_wallet_id_transactions_response_200 import (
    GetV1WalletsByWalletIdTransactionsResponse200,
)
from .get_v1_wallets_by_wallet_id_transactions_response_200_data import (
    GetV1WalletsByWalletIdTransactionsResponse200Data,
)
from .get_v1_wallets_response_200 import GetV1WalletsResponse200
from .get_v1_wallets_response_200_data import GetV1WalletsResponse200Data
from .get_v1_webhooks_by_webhook_id_response_200 import GetV1WebhooksByWebhookIdResponse200
from .get_v1_webhooks_response_200 import GetV1WebhooksResponse200
from .get_v1_webhooks_response_200_data import GetV1WebhooksResponse200Data
from .health_snapshot import HealthSnapshot
from .health_snapshot_mode import HealthSnapshotMode
from .health_snapshot_white_label_type_0 import HealthSnapshotWhiteLabelType0
from .individual_customer_create import IndividualCustomerCreate
from .individual_customer_create_account_type import IndividualCustomerCreateAccountType
from .onboarding_authorization import OnboardingAuthorization
from .onboarding_authorization_create import OnboardingAuthorizationCreate
from .onboarding_authorization_create_account_type_type_0 import OnboardingAuthorizationCreateAccountTypeType0
from .party_in import PartyIn
from .party_in_payment_rail import PartyInPaymentRail
from .patch_v1_webhooks_by_webhook_id_response_200 import PatchV1WebhooksByWebhookIdResponse200
from .post_v1_customers_response_201 import PostV1CustomersResponse201
from .post_v1_onboarding_authorizations_response_201 import PostV1OnboardingAuthorizationsResponse201
from .post_v1_payouts_response_201 import PostV1PayoutsResponse201
from .post_v1_sandbox_deposits_response_201 import PostV1SandboxDepositsResponse201
from .post_v1_transfers_response_201 import PostV1TransfersResponse201
from .post_v1_virtual_accounts_response_201 import PostV1VirtualAccountsResponse201
from .post_v1_wallets_response_201 import PostV1WalletsResponse201
from .post_v1_webhooks_by_webhook_id_rotate_secret_response_200 import (
    PostV1WebhooksByWebhookIdRotateSecretResponse200,
)
from .post_v1_webhooks_response_201 import PostV1WebhooksResponse201
from .routed_response_200 import RoutedResponse200
from .routed_response_201 import RoutedResponse201
from .sandbox_deposit_create import SandboxDepositCreate
from .sandbox_deposit_received import SandboxDepositReceived
from .sandbox_deposit_received_state import SandboxDepositReceivedState
from .service_mode import ServiceMode
from .transfer import Transfer
from .transfer_bank_account import TransferBankAccount
from .transfer_create import TransferCreate
from .transfer_developer_fee import TransferDeveloperFee
from .transfer_party import TransferParty
from .transfer_provider import TransferProvider
from .virtual_account import VirtualAccount
from .virtual_account_create import VirtualAccountCreate
from .virtual_account_destination import VirtualAccountDestination
from .virtual_account_destination_rail import VirtualAccountDestinationRail
from .wallet import Wallet
from .wallet_create import WalletCreate
from .wallet_transaction import WalletTransaction
from .wallet_transaction_direction import WalletTransactionDirection
from .wallet_transaction_kind import WalletTransactionKind
from .webhook import Webhook
from .webhook_create import WebhookCreate
from .webhook_created import WebhookCreated
from .webhook_created_status import WebhookCreatedStatus
from .webhook_secret_rotated import WebhookSecretRotated
from .webhook_secret_rotated_status import WebhookSecretRotatedStatus
from .webhook_status import WebhookStatus
from .webhook_update import WebhookUpdate
from .webhook_update_status_type_0 import WebhookUpdateStatusType0

__all__ = (
    "BankAccountIn",
    "BusinessCustomerCreate",
    "BusinessCustomerCreateAccountType",
    "Customer",
    "CustomerAccountType",
    "CustomerProvider",
    "DeleteV1WebhooksByWebhookIdResponse200",
    "DeveloperFeeIn",
    "Empty",
    "ErrorEnvelope",
    "ErrorObject",
    "ErrorObjectCode",
    "ErrorObjectDetails",
    "EventEnvelope",
    "EventEnvelopeData",
    "FeeBalance",
    "GetV1CustomersByCustomerIdResponse200",
    "GetV1CustomersResponse200",
    "GetV1CustomersResponse200Data",
    "GetV1EventsByEventIdResponse200",
    "GetV1EventsOrder",
    "GetV1EventsResponse200",
    "GetV1EventsResponse200Data",
    "GetV1FeeBalancesResponse200",
    "GetV1FeeBalancesResponse200Data",
    "GetV1HealthResponse200",
    "GetV1PayoutsByTransferIdResponse200",
    "GetV1PayoutsResponse200",
    "GetV1PayoutsResponse200Data",
    "GetV1TransfersByTransferIdResponse200",
    "GetV1TransfersResponse200",
    "GetV1TransfersResponse200Data",
    "GetV1VirtualAccountsByVirtualAccountIdResponse200",
    "GetV1VirtualAccountsResponse200",
    "GetV1VirtualAccountsResponse200Data",
    "GetV1WalletsByWalletIdResponse200",
    "GetV1WalletsByWalletIdTransactionsResponse200",
    "GetV1WalletsByWalletIdTransactionsResponse200Data",
    "GetV1WalletsResponse200",
    "GetV1WalletsResponse200Data",
    "GetV1WebhooksByWebhookIdResponse200",
    "GetV1WebhooksResponse200",
    "GetV1WebhooksResponse200Data",
    "HealthSnapshot",
    "HealthSnapshotMode",
    "HealthSnapshotWhiteLabelType0",
    "IndividualCustomerCreate",
    "IndividualCustomerCreateAccountType",
    "OnboardingAuthorization",
    "OnboardingAuthorizationCreate",
    "OnboardingAuthorizationCreateAccountTypeType0",
    "PartyIn",
    "PartyInPaymentRail",
    "PatchV1WebhooksByWebhookIdResponse200",
    "PostV1CustomersResponse201",
    "PostV1OnboardingAuthorizationsResponse201",
    "PostV1PayoutsResponse201",
    "PostV1SandboxDepositsResponse201",
    "PostV1TransfersResponse201",
    "PostV1VirtualAccountsResponse201",
    "PostV1WalletsResponse201",
    "PostV1WebhooksByWebhookIdRotateSecretResponse200",
    "PostV1WebhooksResponse201",
    "RoutedResponse200",
    "RoutedResponse201",
    "SandboxDepositCreate",
    "SandboxDepositReceived",
    "SandboxDepositReceivedState",
    "ServiceMode",
    "Transfer",
    "TransferBankAccount",
    "TransferCreate",
    "TransferDeveloperFee",
    "TransferParty",
    "TransferProvider",
    "VirtualAccount",
    "VirtualAccountCreate",
    "VirtualAccountDestination",
    "VirtualAccountDestinationRail",
    "Wallet",
    "WalletCreate",
    "WalletTransaction",
    "WalletTransactionDirection",
    "WalletTransactionKind",
    "Webhook",
    "WebhookCreate",
    "WebhookCreated",
    "WebhookCreatedStatus",
    "WebhookSecretRotated",
    "WebhookSecretRotatedStatus",
    "WebhookStatus",
    "WebhookUpdate",
    "WebhookUpdateStatusType0",
)
