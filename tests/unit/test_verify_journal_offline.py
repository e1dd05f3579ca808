"""docs/verify_journal.py, the offline verifier (docs/security.md, "Journal anchors"): with the
anchors and the public verify keys only, it checks a chain's anchors as verify_journal does
(its own Ed25519 code, standard library only, agreeing with the ``cryptography`` package's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from common import authority
from ledger.anchor_stream import AnchorKey
from ledger.core import chain
from tests.unit.test_journal_anchors import KEY, SIGNING, anchor, chained
from tests.unit.test_journal_verification import entries, text_of

pytestmark = pytest.mark.unit
SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "verify_journal.py"
PUBLIC = authority.public_settings_of(SIGNING)


def export(rows: list[Any]) -> str:
    out = []
    for e, legs in rows:
        out.append(
            {
                "id": e.id,
                "tenant_id": e.tenant_id,
                "mode": e.mode,
                "kind": e.kind,
                "transfer_id": e.transfer_id,
                "deposit_id": e.deposit_id,
                "created_at": chain._stamp(e.created_at),
                "postings": [[a, c, str(x)] for a, c, x in legs],
                "transfer": None,
                "hash": e.hash,
                "seq": e.seq,
            }
        )
    return "".join(json.dumps(o) + "\n" for o in out)


def run(tmp_path: Path, rows: list[Any], published: list[Any] | None, keys: str = PUBLIC) -> tuple[int, str]:
    (tmp_path / "export.jsonl").write_text(export(rows))
    args = [sys.executable, str(SCRIPT), str(tmp_path / "export.jsonl")]
    if published is not None:
        (tmp_path / "anchors.jsonl").write_text(
            "".join(msgspec.json.encode(a).decode() + "\n" for a in published)
        )
        args += [str(tmp_path / "anchors.jsonl"), keys]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    return done.returncode, (done.stdout + done.stderr).strip()


def test_the_offline_verifier_checks_the_anchors_with_the_public_keys_only(tmp_path: Path) -> None:
    rows = entries("ten_a", 5)
    stream = chained(anchor("ten_a", 3, rows[2][0].hash), anchor("ten_a", 5, rows[4][0].hash))
    other = anchor("ten_b", 9, "ab" * 32)  # another chain's anchor: not this chain's
    assert run(tmp_path, rows, None) == (0, f"ok: 5 entries, head {rows[4][0].hash}")
    assert run(tmp_path, rows, [*stream, other]) == (0, f"ok: 5 entries, head {rows[4][0].hash}, 2 anchors")
    assert run(tmp_path, rows, [stream[1]])[1] == (
        "anchor on line 1 (entry 5): extends no anchor before it (a gap)"
    )
    assert run(tmp_path, rows, [other])[1] == "no anchor for this chain (anchors missing)"
    assert run(tmp_path, rows[:4], stream)[1].startswith("the chain ends at entry 4, its anchor")
    forged = AnchorKey.parse(authority.new_seed_setting("anchor-2026a")).sign(stream[0])
    assert run(tmp_path, rows, [forged])[1] == "anchor on line 1 (entry 3): not signed by a verify key"
    assert run(tmp_path, rows, stream, authority.public_settings_of(authority.new_seed_setting("x1")))[0] != 0


def test_a_chain_rewritten_with_its_hashes_recomputed_fails_against_its_anchor(tmp_path: Path) -> None:
    rows = entries("ten_a", 5)
    stream = chained(anchor("ten_a", 3, rows[2][0].hash), anchor("ten_a", 5, rows[4][0].hash))
    e, legs = rows[1]
    rows[1] = (e, [(legs[0][0], legs[0][1], legs[0][2] * 2), (legs[1][0], legs[1][1], legs[1][2] * 2)])
    previous = rows[0][0].hash
    for e, legs in rows[1:]:
        e.hash = previous = chain.link(previous, text_of(e, legs))
    assert run(tmp_path, rows, None)[0] == 0  # the chain alone holds
    code, said = run(tmp_path, rows, stream)
    assert (code, said) == (
        1,
        "entry 3 differs from its anchor of 2026-01-02T03:04:05Z: the chain was rewritten",
    )


def test_its_ed25519_agrees_with_the_cryptography_package() -> None:
    namespace: dict[str, Any] = {"__name__": "verify_journal"}
    exec(compile(SCRIPT.read_text(), str(SCRIPT), "exec"), namespace)  # noqa: S102 - our own script
    verify = namespace["ed25519_verify"]
    public = KEY.key.public_key().public_bytes_raw()
    for n in range(8):
        message = f"journal.anchor.v2|{n}".encode() * (n + 1)
        sig = KEY.key.sign(message)
        assert verify(public, message, sig)
        assert not verify(public, message + b"x", sig)
        assert not verify(public, message, sig[:-1] + bytes([sig[-1] ^ 1]))
        assert not verify(public, message, sig[:31] + bytes([sig[31] ^ 4]) + sig[32:])
    assert not verify(public[:31], b"m", KEY.key.sign(b"m"))
