from common.service import serve
from common.settings import load_settings
from gateway.app import create_app

if __name__ == "__main__":
    settings = load_settings()
    serve(create_app(settings), settings.gateway_host, settings.gateway_port)
