"""``python -m compliance``: logging first (so import-time and start-up failures are JSON too)."""

if __name__ == "__main__":
    from common.logging import setup_logging

    setup_logging("compliance")

    from common.service import serve
    from common.settings import load_settings
    from compliance.app import create_app

    settings = load_settings("compliance")
    serve(
        create_app(settings),
        settings.compliance_host,
        settings.compliance_port,
        setting="SLUICE_COMPLIANCE_PORT",
    )
