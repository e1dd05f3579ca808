from enum import StrEnum


class WebhookSecretRotatedStatus(StrEnum):
    DELETED = "deleted"
    DISABLED = "disabled"
    ENABLED = "enabled"

    def __str__(self) -> str:
        return str(self.value)
