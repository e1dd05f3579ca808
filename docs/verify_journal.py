"""Check one hash chain of a Sluice journal export without Sluice (contract 13.5): standard
library only. Export with docs/journal-export.sql; run: python3 verify_journal.py export.jsonl"""

import hashlib
import json
import sys
from decimal import Decimal

previous, seq = "0" * 64, 0
for line in open(sys.argv[1], encoding="utf-8"):  # noqa: SIM115 - a script, read to its end
    e = json.loads(line)
    legs = sorted(
        f"{a},{'debit' if Decimal(x) < 0 else 'credit'},{abs(Decimal(x)):.6f}" for a, x in e["postings"] or []
    )
    fields = [e["id"], e["tenant_id"], e["mode"], e["kind"], e["transfer_id"] or "", e["deposit_id"] or ""]
    text = "|".join(["v1", *fields, e["created_at"], ";".join(legs)])
    if e["seq"] != seq + 1 or hashlib.sha256(f"{previous}\n{text}".encode()).hexdigest() != e["hash"]:
        sys.exit(f"first bad entry: {e['id']} (seq {e['seq']}, expected seq {seq + 1})")
    previous, seq = e["hash"], e["seq"]
print(f"ok: {seq} entries, head {previous}")
