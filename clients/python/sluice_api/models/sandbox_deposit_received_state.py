from enum import StrEnum


class SandboxDepositReceivedState(StrEnum):
    COMPLETED = "completed"

    def __str__(self) -> str:
        return str(self.value)
