from enum import StrEnum


class CustomerCreatedProvider(StrEnum):
    SERVICE = "service"

    def __str__(self) -> str:
        return str(self.value)
