from enum import StrEnum


class TransferProvider(StrEnum):
    SERVICE = "service"

    def __str__(self) -> str:
        return str(self.value)
