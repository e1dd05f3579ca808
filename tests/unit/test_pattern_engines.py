"""Every ``pattern`` the two published documents carry means the same in both regex engines
that read it: Python's ``re`` (msgspec validates requests with it) and ECMAScript (what JSON
Schema says a pattern is; a partner's validator and schemathesis read it so).

The engines differ on ``\\s`` (Python counts U+001C-U+001F and U+0085 as space, ECMAScript
U+FEFF) and on ``$`` (Python's lets one trailing newline through). The admin fuzz test once found
a ``support_email`` with U+0085 that the document allowed and msgspec refused; "US\\n" passed
``^[A-Z]{2}$``. Here each pattern gets strings that match it, and the same strings with a space,
a newline or a near-space character added, and node (ECMAScript, the ``u`` flag as validators
use it) must agree with ``re.search`` on every one."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_NODE = r"""
const rl = require("readline").createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const [pattern, text] = JSON.parse(line);
  process.stdout.write(new RegExp(pattern, "u").test(text) ? "1\n" : "0\n");
});
"""
# Characters one engine or the other counts as space or line end.
_AWKWARD = "\n\r\t\v\f \x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u205f\u3000\ufeff"


def _patterns(doc: Any, into: set[str]) -> set[str]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "pattern" and isinstance(value, str):
                into.add(value)
            else:
                _patterns(value, into)
    elif isinstance(doc, list):
        for value in doc:
            _patterns(value, into)
    return into


def _documents() -> list[str]:
    from admin.openapi import build_document as admin_document
    from gateway.app import ENDPOINTS
    from gateway.openapi.document import build_document

    return sorted(_patterns(admin_document(), _patterns(build_document(ENDPOINTS), set())))


PATTERNS = _documents()


@pytest.fixture(scope="module")
def ecma() -> Iterator[Callable[[str, str], bool]]:
    node = shutil.which("node")
    assert node, "node (Node 20, make setup) reads the patterns as ECMAScript"
    proc = subprocess.Popen([node, "-e", _NODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def test(pattern: str, text: str) -> bool:
        stdin.write(json.dumps([pattern, text]) + "\n")
        stdin.flush()
        return stdout.readline().strip() == "1"

    yield test
    proc.kill()
    proc.wait()


def test_the_documents_carry_patterns_and_node_reads_them(ecma: Callable[[str, str], bool]) -> None:
    assert len(PATTERNS) > 30
    assert ecma("^[A-Z]{2}$", "US") and not ecma("^[A-Z]{2}$", "US\n")
    # The check can fail: the spelling this module guards against disagrees between the engines.
    assert re.search("^[A-Z]{2}$", "US\n") and not ecma("^[A-Z]{2}$", "US\n")
    assert re.search("^[^\\s]+$", "a\x85") is None and ecma("^[^\\s]+$", "a\x85")


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), pattern=st.sampled_from(PATTERNS), awkward=st.sampled_from(_AWKWARD))
def test_python_and_ecmascript_agree_on_every_pattern(
    ecma: Callable[[str, str], bool], data: st.DataObject, pattern: str, awkward: str
) -> None:
    text = data.draw(st.from_regex(pattern, fullmatch=True), label="match")
    at = data.draw(st.integers(0, len(text)), label="at")
    for probe in (text, text + awkward, awkward + text, text[:at] + awkward + text[at:]):
        python = re.search(pattern, probe) is not None
        assert python == ecma(pattern, probe), (pattern, probe, python)
