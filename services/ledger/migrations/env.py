from sqlmodel import SQLModel

import ledger.models  # noqa: F401  (declares the ledger tables in SQLModel.metadata)
from common.db import run_alembic_env

run_alembic_env("ledger", SQLModel.metadata)
