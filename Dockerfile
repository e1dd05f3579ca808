# One image for every service: `docker run ... sluice python -m <service>`.
FROM python:3.11-slim AS base
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 UV_LINK_MODE=copy \
    PYTHONPATH=/app/libs:/app/services PATH=/app/.venv/bin:$PATH
RUN pip install --no-cache-dir uv
WORKDIR /app
COPY pyproject.toml uv.lock ./
RUN uv sync --frozen --no-dev --no-install-project
COPY libs ./libs
COPY services ./services
RUN useradd --system --uid 10001 sluice
USER sluice
CMD ["python", "-m", "gateway"]
