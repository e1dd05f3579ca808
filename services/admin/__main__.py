"""``python -m admin``: logging first (so import-time and start-up failures are JSON too)."""

if __name__ == "__main__":
    from common.logging import setup_logging

    setup_logging("admin")

    from admin.app import create_app
    from common.service import serve
    from common.settings import load_settings

    settings = load_settings("admin")
    # A request waits up to its deadline for an answer: SIGTERM lets it have it.
    serve(
        create_app(settings),
        settings.admin_host,
        settings.admin_port,
        setting="SLUICE_ADMIN_PORT",
        grace_s=settings.gateway_timeout_s + 2,
    )
