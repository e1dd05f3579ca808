from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="WalletCreate")


@_attrs_define
class WalletCreate:
    """
    Attributes:
        customer_id (str):
        symbol (str): stablecoin symbol, case-insensitive: USDC, USDT, PYUSD, USDB, EURC
        chain (str): chain, case-insensitive: ETH, SOL, BSC, POLYGON, TRON, BASE, OPTIMISM, ARBITRUM
    """

    customer_id: str
    symbol: str
    chain: str

    def to_dict(self) -> dict[str, Any]:
        customer_id = self.customer_id

        symbol = self.symbol

        chain = self.chain

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "customer_id": customer_id,
                "symbol": symbol,
                "chain": chain,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        customer_id = d.pop("customer_id")

        symbol = d.pop("symbol")

        chain = d.pop("chain")

        wallet_create = cls(
            customer_id=customer_id,
            symbol=symbol,
            chain=chain,
        )

        return wallet_create
