from enum import StrEnum


class CustomerCreateAccountType(StrEnum):
    BUSINESS = "business"
    INDIVIDUAL = "individual"

    def __str__(self) -> str:
        return str(self.value)
