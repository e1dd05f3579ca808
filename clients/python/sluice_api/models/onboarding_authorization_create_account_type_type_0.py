from enum import StrEnum


class OnboardingAuthorizationCreateAccountTypeType0(StrEnum):
    BUSINESS = "business"
    INDIVIDUAL = "individual"

    def __str__(self) -> str:
        return str(self.value)
