"""The ledger's decisions, without I/O: given the rows a batch read, what it does.

The functional core of the ledger (Cosmic Python's domain model; "functional core, imperative
shell"): the rest of ``ledger`` is the shell that reads rows, calls these functions, and
writes what they decided, with the same statements as before. Called ``core`` rather than
``domain`` because the shell around it is what the name pairs with, and because the ledger
already has domain *events* (``common.contracts.events``), which this package emits but does
not define.

- ``transfers``: a batch of transfers planned from the wallets and known keys it read (each
  validated, its fee charged, its row, steps, events and movement), then answered once the
  funds are checked; replays and twins of an idempotency key.
- ``entries``: balanced entries, movements, the funds check of a batch (``check_funds``: a
  movement that would overdraw is refused alone) and the hash-chained rows of what it accepted.
- ``states``: the transfer state machine, the money each state change moves, the sandbox's steps.
- ``parties``: who pays whom (the wallets a transfer names; its route).
- ``fees``: the developer fee a transfer charges.
- ``accounts``: the chart of accounts. ``chain``: the hash chain's canonical text and link.
- ``events``: a transfer's view and events. ``effects``: what a command produces, amounts.
- ``rows``: the attributes of the rows the core reads (protocols, so no table is imported).

A module here imports only the standard library, msgspec, the pure modules of ``common`` and
this package; nothing it reaches imports SQLAlchemy, SQLModel, asyncpg, redis, aiokafka or
FastStream (``tests/unit/test_layering.py``). Decisions are tested whole without a database
in ``tests/unit/test_ledger_core.py``.
"""
