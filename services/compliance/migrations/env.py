from common.db import run_alembic_env

run_alembic_env("compliance")
