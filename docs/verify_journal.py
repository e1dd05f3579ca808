"""Check one hash chain of a Sluice journal export without Sluice (contract 13.5, 14.3, 15.1):
standard library only. Export with docs/journal-export.sql; run:

    python3 verify_journal.py export.jsonl
    python3 verify_journal.py export.jsonl anchors.jsonl "$SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS"

Canonical text v2 (currency and the transfer's terms; services/ledger/core/chain.py), and v1 for
entries written before the chain's first v2 entry. With the anchors (the records of the topic
``<prefix>.journal.anchors``, one JSON value a line, e.g. from kafka-console-consumer) and the
anchor verify keys (public keys only, ``kid:base64,...``), it also checks the chain's anchors:
each signed (Ed25519) by the key its ``kid`` names, each extending an anchor before it
(``prev``: no gap), every anchored entry still carrying the anchored hash, the chain not
shorter than its newest anchor, and at least one anchor for a chain with entries."""

import base64
import hashlib
import json
import sys
from decimal import Decimal

# Ed25519 verification (RFC 8032, section 5.1.7), for the anchors: no library needed.
P, L = 2**255 - 19, 2**252 + 27742317777372353535851937790883648493
D = -121665 * pow(121666, P - 2, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)


def _x(y, sign):
    if y >= P:
        return None
    x2 = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P:
        x = x * SQRT_M1 % P
    if (x * x - x2) % P:
        return None
    return P - x if (x & 1) != sign else x


def _point(raw):
    y = int.from_bytes(raw, "little")
    x = _x(y & ((1 << 255) - 1), y >> 255)
    return None if x is None else (x, y & ((1 << 255) - 1), 1, x * (y & ((1 << 255) - 1)) % P)


def _add(a, b):
    e1, e2 = (a[1] - a[0]) * (b[1] - b[0]) % P, (a[1] + a[0]) * (b[1] + b[0]) % P
    c, d = 2 * a[3] * b[3] * D % P, 2 * a[2] * b[2] % P
    e, f, g, h = e2 - e1, d - c, d + c, e2 + e1
    return (e * f, g * h, f * g, e * h)


def _mul(s, a):
    out = (0, 1, 1, 0)
    while s:
        out, a, s = (_add(out, a) if s & 1 else out), _add(a, a), s >> 1
    return out


BASE = _point((4 * pow(5, P - 2, P) % P).to_bytes(32, "little"))


def ed25519_verify(public, message, sig):
    if len(public) != 32 or len(sig) != 64:
        return False
    a, r, s = _point(public), _point(sig[:32]), int.from_bytes(sig[32:], "little")
    if a is None or r is None or s >= L:
        return False
    h = int.from_bytes(hashlib.sha512(sig[:32] + public + message).digest(), "little") % L
    left, right = _mul(s, BASE), _add(r, _mul(h, a))
    return (left[0] * right[2] - right[0] * left[2]) % P == 0 and (
        left[1] * right[2] - right[1] * left[2]
    ) % P == 0


def signed_text(a):
    fields = ["journal.anchor.v2", a["tenant_id"], a["mode"], str(a["seq"]), a["head_hash"], a["anchored_at"]]
    return "|".join([*fields, a.get("prev", ""), a.get("kid", "")]).encode()


def side(x):
    return f"{'debit' if Decimal(x) < 0 else 'credit'},{abs(Decimal(x)):.6f}"


def texts(e):
    head = ["id", "tenant_id", "mode", "kind", "transfer_id", "deposit_id"]
    fields = [e[k] or "" for k in head] + [e["created_at"]]
    v1 = sorted(f"{a},{side(x)}" for a, _, x in e["postings"] or [])
    v2 = sorted(f"{a},{c},{side(x)}" for a, c, x in e["postings"] or [])
    t, terms = e["transfer"], ""
    if t:
        money = [f"{Decimal(t[k]):.6f}" for k in ("amount", "fee_amount")]
        where = [t["source_wallet_id"], t["destination_wallet_id"] or ""]
        dest = json.dumps(t["destination"], sort_keys=True, separators=(",", ":"))
        terms = ",".join([t["kind"], t["route"], t["currency"], *money, *where, dest])
    return {
        "v2": "|".join(["v2", *fields, ";".join(v2), terms]),
        "v1": "|".join(["v1", *fields, ";".join(v1)]),
    }


def check_anchors(path, setting, chain_of, hashes, last):
    """The chain's anchors (see the module docstring): their count, or exit naming the first problem."""
    keys = {}
    for entry in (e.strip() for e in setting.split(",") if e.strip()):
        kid, _, b64 = entry.partition(":")
        keys[kid] = base64.b64decode(b64, validate=True)
    seen, newest = {}, None
    for n, line in enumerate(open(path, encoding="utf-8")):  # noqa: SIM115 - a script
        a = json.loads(line) if line.strip() else None
        if not a or a.get("type") != "journal.anchor.v2" or (a["tenant_id"], a["mode"]) != chain_of:
            continue
        key, text = keys.get(a.get("kid", "")), signed_text(a)
        if key is None or not ed25519_verify(key, text, base64.b64decode(a.get("signature", ""))):
            sys.exit(f"anchor on line {n + 1} (entry {a['seq']}): not signed by a verify key")
        if a.get("prev") and a["prev"] not in seen:
            sys.exit(f"anchor on line {n + 1} (entry {a['seq']}): extends no anchor before it (a gap)")
        if a["seq"] > 0 and hashes.get(a["seq"]) not in (None, a["head_hash"]):
            sys.exit(
                f"entry {a['seq']} differs from its anchor of {a['anchored_at']}: the chain was rewritten"
            )
        seen[hashlib.sha256(text).hexdigest()] = a
        newest = a if newest is None or a["seq"] > newest["seq"] else newest
    if newest is None and last > 0:
        sys.exit("no anchor for this chain (anchors missing)")
    if newest is not None and newest["seq"] > last:
        sys.exit(
            f"the chain ends at entry {last}, its anchor of {newest['anchored_at']} names entry {newest['seq']}"
        )
    return len(seen)


def main(argv):
    previous, seq, v2_seen, hashes, chain_of = "0" * 64, 0, False, {}, None
    for line in open(argv[1], encoding="utf-8"):  # noqa: SIM115 - a script, read to its end
        e = json.loads(line)
        chain_of = chain_of or (e["tenant_id"], e["mode"])
        found = [
            v
            for v, text in texts(e).items()
            if hashlib.sha256(f"{previous}\n{text}".encode()).hexdigest() == e["hash"]
        ]
        if e["seq"] != seq + 1 or not found or (found == ["v1"] and v2_seen):
            sys.exit(f"first bad entry: {e['id']} (seq {e['seq']}, expected seq {seq + 1})")
        previous, seq, v2_seen = e["hash"], e["seq"], v2_seen or "v2" in found
        hashes[seq] = previous
    anchored = ""
    if len(argv) > 3:
        anchored = f", {check_anchors(argv[2], argv[3], chain_of, hashes, seq)} anchors"
    print(f"ok: {seq} entries, head {previous}{anchored}")


if __name__ == "__main__":
    main(sys.argv)
