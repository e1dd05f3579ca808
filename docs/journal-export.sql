-- Export one hash chain of the Sluice journal (contract 13.5) as JSON lines, in chain order,
-- for docs/verify_journal.py:
--   psql "$DATABASE_URL" -v tenant=<tenant id> -v mode=sandbox -At -f docs/journal-export.sql > export.jsonl
SELECT json_build_object(
    'id', e.id, 'tenant_id', e.tenant_id, 'mode', e.mode, 'kind', e.kind,
    'transfer_id', e.transfer_id, 'deposit_id', e.deposit_id,
    'created_at', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'seq', e.seq, 'hash', e.hash,
    'postings', (SELECT json_agg(json_build_array(p.account_id, p.currency, p.amount::text))
                 FROM ledger.postings p WHERE p.entry_id = e.id),
    'transfer', (SELECT json_build_object(
                     'kind', t.kind, 'route', t.route, 'currency', t.currency,
                     'amount', t.amount::text, 'fee_amount', t.fee_amount::text,
                     'source_wallet_id', t.source_wallet_id,
                     'destination_wallet_id', t.destination_wallet_id, 'destination', t.destination)
                 FROM ledger.transfers t WHERE t.id = e.transfer_id))
FROM ledger.journal_entries e
WHERE e.tenant_id = :'tenant' AND e.mode = :'mode'
ORDER BY e.seq;
