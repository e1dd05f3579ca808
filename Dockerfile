# syntax=docker/dockerfile:1.7
# One image for every service: `docker run sluice serve <service>` (or `migrate`).
# Build stage: uv resolves from uv.lock into /app/.venv (no dev group: no embedded stores, no
# test tools), with uv's cache on a build-cache mount and bytecode compiled ahead of time.
# The base images are build arguments: the registry's by default, Debian-built local ones where
# no registry answers (`make image`, tools/image: a bookworm rootfs with Python 3.11).
ARG PYTHON_IMAGE=python:3.11-slim
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.13
FROM ${UV_IMAGE} AS uv

FROM ${PYTHON_IMAGE} AS build
COPY --from=uv /uv /usr/local/bin/uv
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never UV_PROJECT_ENVIRONMENT=/app/.venv
WORKDIR /app
RUN --mount=type=cache,target=/root/.cache/uv \
    --mount=type=bind,source=uv.lock,target=/app/uv.lock \
    --mount=type=bind,source=pyproject.toml,target=/app/pyproject.toml \
    uv sync --frozen --no-dev --no-install-project
COPY libs ./libs
COPY services ./services
RUN python -m compileall -q libs services

# Runtime stage: the virtualenv and the code, tini as PID 1 (signals reach uvicorn, zombies
# are reaped), a non-root user, and a health check against the service's /readyz.
FROM ${PYTHON_IMAGE} AS runtime
# tini from the base image's Debian release: pinning its exact version would break the build
# whenever Debian publishes a security update of it.
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin sluice
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH=/app/libs:/app/services PATH=/app/.venv/bin:$PATH \
    SLUICE_HEALTH_PORT=8000
WORKDIR /app
COPY --from=build --chown=root:root /app /app
USER 10001
# Each service listens on its own SLUICE_<SERVICE>_PORT; compose sets SLUICE_HEALTH_PORT to it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ['SLUICE_HEALTH_PORT'], timeout=2)"]
ENTRYPOINT ["/usr/bin/tini", "--", "python", "-m", "sluice"]
CMD ["serve", "gateway"]
