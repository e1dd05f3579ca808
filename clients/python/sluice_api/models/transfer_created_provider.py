from enum import StrEnum


class TransferCreatedProvider(StrEnum):
    SERVICE = "service"

    def __str__(self) -> str:
        return str(self.value)
