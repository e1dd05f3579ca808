from admin.app import create_app
from common.service import serve
from common.settings import load_settings

if __name__ == "__main__":
    settings = load_settings()
    serve(create_app(settings), settings.admin_host, settings.admin_port)
