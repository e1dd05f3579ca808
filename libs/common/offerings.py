"""What the API offers (docs/reference/index.md, "Conventions every resource follows"): the
(stablecoin, chain) pairs and the stablecoins pegged 1:1 to each fiat currency. The gateway
checks requests against them; the ledger creates wallets and routes deposits by them."""

from __future__ import annotations

OFFERED_PAIRS: dict[str, frozenset[str]] = {
    "USDC": frozenset({"ETH", "SOL", "BASE", "POLYGON", "OPTIMISM", "ARBITRUM"}),
    "USDT": frozenset({"ETH", "TRON", "SOL", "BSC", "POLYGON", "ARBITRUM"}),
    "PYUSD": frozenset({"ETH", "SOL", "ARBITRUM"}),
    "USDB": frozenset({"ETH", "SOL", "BASE"}),
    "EURC": frozenset({"ETH", "SOL", "BASE"}),
}

# Fiat currency -> the stablecoins pegged 1:1 to it.
PEGS: dict[str, frozenset[str]] = {
    "USD": frozenset({"USDC", "USDT", "PYUSD", "USDB"}),
    "EUR": frozenset({"EURC"}),
    "GBP": frozenset(),
}
