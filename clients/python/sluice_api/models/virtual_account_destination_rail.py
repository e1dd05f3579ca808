from enum import StrEnum


class VirtualAccountDestinationRail(StrEnum):
    PROVIDER_WALLET = "provider_wallet"
    STABLECOIN = "stablecoin"

    def __str__(self) -> str:
        return str(self.value)
