"""``sluice topics`` reads each topic's partition count, asking again only for the topics it
has just created while the broker's metadata shows them with none (seen in CI)."""

from __future__ import annotations

from typing import Any

import pytest

from common import provision

pytestmark = pytest.mark.unit


class Admin:
    def __init__(self, *answers: dict[str, int]) -> None:
        self.answers, self.asked = list(answers), 0

    async def describe_topics(self, names: list[str]) -> list[dict[str, Any]]:
        self.asked += 1
        counts = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return [{"topic": n, "partitions": [{}] * counts.get(n, 0)} for n in names]


async def test_a_created_topic_without_partitions_yet_is_asked_again() -> None:
    admin = Admin({"a": 0, "b": 3}, {"a": 0, "b": 3}, {"a": 3, "b": 3})
    found = await provision._partitions(admin, ["a", "b"], ["a"])  # type: ignore[arg-type]  # noqa: SLF001
    assert (found, admin.asked) == ({"a": 3, "b": 3}, 3)


async def test_a_topic_that_existed_is_reported_as_it_is() -> None:
    admin = Admin({"a": 3, "b": 0})
    found = await provision._partitions(admin, ["a", "b"], ["a"])  # type: ignore[arg-type]  # noqa: SLF001
    assert (found, admin.asked) == ({"a": 3, "b": 0}, 1)


async def test_an_error_of_the_request_is_raised_at_once() -> None:
    class Failing:
        asked = 0

        async def describe_topics(self, names: list[str]) -> list[dict[str, Any]]:
            Failing.asked += 1
            raise RuntimeError("no broker")

    with pytest.raises(RuntimeError, match="no broker"):
        await provision._partitions(Failing(), ["a"], ["a"])  # type: ignore[arg-type]  # noqa: SLF001
    assert Failing.asked == 1
