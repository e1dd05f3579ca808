from sqlmodel import SQLModel

import compliance.models  # noqa: F401  (declares the tables in SQLModel.metadata)
from common.db import run_alembic_env

run_alembic_env("compliance", SQLModel.metadata)
