from enum import StrEnum


class PartyInPaymentRail(StrEnum):
    ACH = "ach"
    FASTER_PAYMENTS = "faster_payments"
    PROVIDER_WALLET = "provider_wallet"
    SEPA = "sepa"
    STABLECOIN = "stablecoin"
    WIRE = "wire"

    def __str__(self) -> str:
        return str(self.value)
