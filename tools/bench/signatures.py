"""The cost of the ledger's signatures per transfer, A/B/A/B in one process
(``python -m tools.bench.signatures``; docs/security.md, "Who writes each topic").

A is the work the services do per transfer with the ledger's records signed and verified, B the
same work with them unsigned, each for ``ROUNDS`` transfers, taking turns so that a change of
the machine's speed falls on both. What is timed is exactly the per-record code the services
run (``common.authority``, ``compliance.usage``, the contracts' encoders and decoders):

- a completed transfer (the usual case): the ledger encodes (A: signs, then encodes) its one
  record of three events; webhooks decodes it (A: and verifies it); compliance's usage reader
  reads it once (A: its admission check verifies only a record that gives cap back);
- a transfer the ledger refuses: no event, the ledger's release (A: signed by the ledger,
  verified by compliance);
- a transfer failing after it was accepted: as a completed one, and compliance verifies the
  ``failed`` update that gives its cap back (two verifications of one record).

CPU time (``time.process_time``), so another process on the machine slows the turn it shares
but is not counted in it. Budget: 0.25 ms per transfer across all services.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

import msgspec

from common import authority
from common.authority import EVENT_SIGNERS, RELEASE_SIGNERS, SigningKey, VerifyKeys
from common.contracts.base import Ctx, encode
from common.contracts.commands import RELEASE_PREFIX, ReleaseAllowance
from common.contracts.events import EVENT_RECORDS, AnyEvent, EventBatch, TransferCreated, TransferUpdated
from compliance import usage

RELEASES = msgspec.json.Decoder(ReleaseAllowance)  # as compliance's releases reader decodes

ROUNDS = int(os.environ.get("BENCH_SIGN_ROUNDS", "2000"))
PAIRS = int(os.environ.get("BENCH_SIGN_PAIRS", "4"))
BUDGET_MS = 0.25

KEYS = authority.new_settings("bench")
LEDGER = SigningKey.parse(KEYS["SLUICE_LEDGER_SIGNING_KEY"], "ledger")
VERIFY = VerifyKeys.parse(KEYS["SLUICE_AUTHORITY_VERIFY_KEYS"])
ADMIT = usage.admission(VERIFY)
CTX = Ctx(request_id="req_01j9z3bench0000000000", tenant_id="ten_01j9z3bench0000000000", mode="sandbox")


def _party(wallet_id: str) -> dict[str, str]:
    return {"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": wallet_id}


def _view(state: str) -> dict[str, object]:
    """A book transfer as partners read it (``ledger.core.events.transfer_view``)."""
    return {
        "transfer_id": "tr_01j9z3bench0000000000000000",
        "state": state,
        "provider": "service",
        "source": _party("wal_01j9z3bench000000000000a"),
        "destination": _party("wal_01j9z3bench000000000000b"),
        "amount": "20.00",
        "currency": "USDC",
        "idempotency_key": "k" * 32,
        "created_at": "2026-11-28T10:00:00.000000Z",
        "updated_at": "2026-11-28T10:00:00.000000Z",
    }


def _event(cls: type[TransferCreated] | type[TransferUpdated], state: str, n: int) -> AnyEvent:
    extra = {} if cls is TransferCreated else {"previous_state": "pending"}
    return cls(
        event_id=f"evt_01j9z3bench00000000000000{n}",
        tenant_id=CTX.tenant_id,
        mode="sandbox",
        created_at="2026-11-28T10:00:00.000000Z",
        request_id=CTX.request_id,
        data={**_view(state), **extra},
    )


def _fact(last: str) -> EventBatch:
    events = [_event(TransferCreated, "pending", 1), _event(TransferUpdated, "processing", 2)]
    return EventBatch(tenant_id=CTX.tenant_id, events=[*events, _event(TransferUpdated, last, 3)])


def completed(signed: bool, last: str = "completed") -> None:
    """One transfer's record: published by the ledger, read by webhooks and by compliance."""
    fact = _fact(last)
    raw = encode(LEDGER.sign(fact) if signed else fact)
    record = EVENT_RECORDS.decode(raw)  # webhooks
    signal = usage.Signal.read(raw)  # compliance's reading, either way
    if signed:
        VERIFY.verify(record, EVENT_SIGNERS)
        ADMIT(signal)  # compliance: verifies only a record that gives cap back


def refused(signed: bool) -> None:
    """One release of a transfer the ledger refused: published by the ledger, read by compliance."""
    release = ReleaseAllowance(command_id=f"{RELEASE_PREFIX}cmd_01j9z3bench", ctx=CTX, transfer_id="tr_1")
    got = RELEASES.decode(encode(LEDGER.sign(release) if signed else release))
    if signed:
        VERIFY.verify(got, RELEASE_SIGNERS)


def failed(signed: bool) -> None:
    completed(signed, "failed")


def turn(work: Callable[[bool], None], signed: bool) -> float:
    """CPU microseconds per transfer over ``ROUNDS`` transfers."""
    start = time.process_time()
    for _ in range(ROUNDS):
        work(signed)
    return (time.process_time() - start) * 1e6 / ROUNDS


def measure(name: str, work: Callable[[bool], None]) -> float:
    """A B A B ... and the median of the pairs' differences (us per transfer)."""
    for signed in (True, False):  # imports and caches warmed, outside the turns
        work(signed)
    diffs, lines = [], []
    for _ in range(PAIRS):
        a, b = turn(work, True), turn(work, False)
        diffs.append(a - b)
        lines.append(f"A {a:.1f} / B {b:.1f}")
    median = statistics.median(diffs)
    print(f"{name}: {'; '.join(lines)} us per transfer")
    spread = f"min {min(diffs):.1f}, max {max(diffs):.1f}"
    print(f"{name}: signatures cost {median:.1f} us per transfer (median of {PAIRS} pairs, {spread})")
    return median


def primitive() -> str:
    """Ed25519 alone at this moment on a record's size, through libsodium (PyNaCl, what the
    services use) and through OpenSSL (cryptography, for comparison): what the figures above are
    made of, to scale them to a quieter or faster machine."""
    message = encode(_fact("completed"))
    figures = []
    for name, sign, verify in (
        ("libsodium", LEDGER.sodium.sign, LEDGER.sodium.verify_key.verify),
        ("OpenSSL", LEDGER.key.sign, lambda m, s: LEDGER.key.public_key().verify(s, m)),
    ):
        signed = LEDGER.sodium.sign(message)
        start = time.process_time()
        for _ in range(ROUNDS):
            sign(message)
        signing = time.process_time() - start
        start = time.process_time()
        for _ in range(ROUNDS):
            verify(signed.message, signed.signature)
        verifying = time.process_time() - start
        per = 1e6 / ROUNDS
        figures.append(f"{name} sign {signing * per:.1f} us, verify {verifying * per:.1f} us")
    return "Ed25519 alone: " + "; ".join(figures)


def main() -> int:
    load = os.getloadavg()[0]
    print(f"ABAB x{PAIRS}, {ROUNDS} transfers a turn, CPU time, load average {load:.2f}")
    extra = len(encode(LEDGER.sign(_fact("completed")))) - len(encode(_fact("completed")))
    print(f"record size: +{extra} bytes per signed event record")
    costs = {
        "completed transfer": measure("completed transfer", completed),
        "refused by the ledger": measure("refused by the ledger", refused),
        "failed after acceptance": measure("failed after acceptance", failed),
    }
    print(primitive())
    missed = 0
    for name, cost in costs.items():
        ok = cost / 1000 <= BUDGET_MS
        missed += not ok
        verdict = "within" if ok else "MISSED:"
        print(f"{verdict} budget {BUDGET_MS} ms per transfer: {name} {cost / 1000:.3f} ms")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
