"""``python -m gateway``: logging first (so import-time and start-up failures are JSON too)."""

if __name__ == "__main__":
    from common.logging import setup_logging

    setup_logging("gateway")

    from common.service import serve
    from common.settings import load_settings
    from gateway.app import create_app
    from gateway.door.protocol import door_protocol

    settings = load_settings("gateway")
    # A request waits up to its deadline for an answer: SIGTERM lets it have it.
    app = create_app(settings)
    serve(
        app,
        settings.gateway_host,
        settings.gateway_port,
        setting="SLUICE_GATEWAY_PORT",
        grace_s=settings.gateway_timeout_s + 2,
        protocol=door_protocol(app.state.door),  # refusals before any task
    )
