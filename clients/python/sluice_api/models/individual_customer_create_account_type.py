from enum import StrEnum


class IndividualCustomerCreateAccountType(StrEnum):
    INDIVIDUAL = "individual"

    def __str__(self) -> str:
        return str(self.value)
