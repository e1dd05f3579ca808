from enum import StrEnum


class BusinessCustomerCreateAccountType(StrEnum):
    BUSINESS = "business"

    def __str__(self) -> str:
        return str(self.value)
