from enum import StrEnum


class WalletTransactionDirection(StrEnum):
    CREDIT = "credit"
    DEBIT = "debit"

    def __str__(self) -> str:
        return str(self.value)
