from common.service import serve
from common.settings import load_settings
from ledger.app import create_app

if __name__ == "__main__":
    settings = load_settings()
    serve(create_app(settings), "127.0.0.1", settings.ledger_port)
