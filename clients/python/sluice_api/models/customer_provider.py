from enum import StrEnum


class CustomerProvider(StrEnum):
    SERVICE = "service"

    def __str__(self) -> str:
        return str(self.value)
