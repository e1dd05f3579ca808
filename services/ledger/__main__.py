"""``python -m ledger``: logging first (so import-time and start-up failures are JSON too)."""

if __name__ == "__main__":
    from common.logging import setup_logging

    setup_logging("ledger")

    from common.service import serve
    from common.settings import load_settings
    from ledger.app import create_app

    settings = load_settings("ledger")
    serve(create_app(settings), settings.ledger_host, settings.ledger_port, setting="SLUICE_LEDGER_PORT")
