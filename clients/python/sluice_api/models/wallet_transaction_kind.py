from enum import StrEnum


class WalletTransactionKind(StrEnum):
    DEPOSIT = "deposit"
    FEE = "fee"
    RELEASE = "release"
    TRANSFER = "transfer"

    def __str__(self) -> str:
        return str(self.value)
