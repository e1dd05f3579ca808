from sqlmodel import SQLModel

import webhooks.models  # noqa: F401 - declares the tables in SQLModel.metadata
from common.db import run_alembic_env

run_alembic_env("webhooks", SQLModel.metadata)
