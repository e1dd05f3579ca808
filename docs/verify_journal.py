"""Check one hash chain of a Sluice journal export without Sluice (contract 13.5, 14.3): standard
library only. Export with docs/journal-export.sql; run: python3 verify_journal.py export.jsonl
Canonical text v2 (currency and the transfer's terms; services/ledger/chain.py), and v1 for
entries written before the chain's first v2 entry."""

import hashlib
import json
import sys
from decimal import Decimal


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


previous, seq, v2_seen = "0" * 64, 0, False
for line in open(sys.argv[1], encoding="utf-8"):  # noqa: SIM115 - a script, read to its end
    e = json.loads(line)
    found = [
        v
        for v, text in texts(e).items()
        if hashlib.sha256(f"{previous}\n{text}".encode()).hexdigest() == e["hash"]
    ]
    if e["seq"] != seq + 1 or not found or (found == ["v1"] and v2_seen):
        sys.exit(f"first bad entry: {e['id']} (seq {e['seq']}, expected seq {seq + 1})")
    previous, seq, v2_seen = e["hash"], e["seq"], v2_seen or "v2" in found
print(f"ok: {seq} entries, head {previous}")
