"""Every answer the gateway gives in the integration tests, held to its OpenAPI document with
no property the document does not declare (docs/testing/conformance.md).

:class:`Recorder` wraps httpx's ``Client.send`` and ``AsyncClient.send`` (the tests' raw calls,
``httpx.get``/``post`` included, and the Python SDK) and keeps each answer from a registered
gateway; :class:`Checker` matches it to its operation (the direct form by method and path, the
routed form by ``x-service-route`` and the body's ``method``) and validates its body against the
schema the document gives that status. The checker, not the document, closes every object
that lists its properties (``additionalProperties: false``): a partner's generated types
declare exactly those, so a field beyond them is one strictly typed code cannot read.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
import pytest
from jsonschema import Draft202012Validator

_PARAM = re.compile(r"\{(\w+)\}")
Operation = tuple[str, str]  # (METHOD, path template)


@dataclass(frozen=True, slots=True)
class Answer:
    """One request to the gateway and its answer, as the test's client saw them."""

    method: str
    path: str
    route: str | None  # x-service-route of the routed form
    request_body: bytes
    status: int
    body: bytes

    def describe(self) -> str:
        via = f" (routed to {self.route})" if self.route is not None else ""
        return f"{self.method} {self.path}{via} -> {self.status}"


def closed(node: Any) -> Any:
    """``node`` with every object that lists properties closed to others."""
    if isinstance(node, list):
        return [closed(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: closed(v) for k, v in node.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


class Checker:
    """The document's operations and, per operation and status, a validator of the answer."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.components = closed(copy.deepcopy(document.get("components", {})))
        self.operations: dict[Operation, dict[str, Any]] = {}
        self._patterns: list[tuple[re.Pattern[str], str, int]] = []
        for path, ops in document["paths"].items():
            for method, op in ops.items():
                self.operations[(method.upper(), path)] = op
            regex = "^" + _PARAM.sub(r"[^/]+", re.escape(path).replace(r"\{", "{").replace(r"\}", "}")) + "$"
            self._patterns.append((re.compile(regex), path, path.count("{")))
        self._patterns.sort(key=lambda p: p[2])  # a static segment wins over a parameter
        self._validators: dict[tuple[Operation, str], Draft202012Validator | None] = {}

    def template(self, path: str) -> str | None:
        for regex, template, _ in self._patterns:
            if regex.match(path):
                return template
        return None

    def operation_of(self, answer: Answer) -> Operation | None:
        """The operation an answer belongs to; None for a path the document does not describe
        (the document itself, onboarding pages, an unknown route)."""
        if answer.route is not None and answer.method == "POST" and answer.path == "/":
            method = "POST"
            try:
                body = json.loads(answer.request_body or b"null")
            except (ValueError, RecursionError):  # the tests send hostile bodies on purpose
                body = None
            if isinstance(body, dict) and isinstance(body.get("method"), str):
                method = body["method"].upper()
            target = self.template(answer.route)
            if target is not None and (method, target) in self.operations:
                return method, target
            return "POST", "/"
        template = self.template(answer.path)
        if template is None or (answer.method, template) not in self.operations:
            return None
        return answer.method, template

    def _validator(self, op: Operation, status: str) -> Draft202012Validator | None:
        key = (op, status)
        if key not in self._validators:
            response = self.operations[op]["responses"].get(status)
            schema = (response or {}).get("content", {}).get("application/json", {}).get("schema")
            self._validators[key] = (
                None
                if schema is None
                else Draft202012Validator({**closed(copy.deepcopy(schema)), "components": self.components})
            )
        return self._validators[key]

    def problems(self, answer: Answer) -> tuple[Operation | None, list[str]]:
        """What is wrong with one answer against the document (empty: it conforms)."""
        op = self.operation_of(answer)
        if op is None:
            return None, []
        status = str(answer.status)
        if status not in self.operations[op]["responses"]:
            return op, [f"status {status} is not declared for {op[0]} {op[1]}"]
        validator = self._validator(op, status)
        if validator is None:
            return op, []
        try:
            body = json.loads(answer.body)
        except (ValueError, RecursionError):
            return op, [f"the body is not JSON: {answer.body[:120]!r}"]
        errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
        return op, [f"at {e.json_path}: {e.message[:300]}" for e in errors]


@dataclass
class Recorder:
    """The gateway answers httpx received while installed, from the registered base URLs."""

    bases: set[str] = field(default_factory=set)
    answers: list[Answer] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, *urls: str) -> None:
        self.bases.update(u.rstrip("/") for u in urls)

    def take(self) -> list[Answer]:
        """The answers kept since the last take (each test checks its own)."""
        with self._lock:
            taken, self.answers = self.answers, []
        return taken

    def keep(self, request: httpx.Request, response: httpx.Response) -> None:
        url = request.url
        if f"{url.scheme}://{url.netloc.decode()}" not in self.bases or not response.is_closed:
            return  # another service, or a streamed answer the test reads itself
        answer = Answer(
            method=request.method.upper(),
            path=urlsplit(str(url)).path or "/",
            route=request.headers.get("x-service-route"),
            request_body=request.content if isinstance(request.stream, httpx.ByteStream) else b"",
            status=response.status_code,
            body=response.content,
        )
        with self._lock:
            self.answers.append(answer)

    @contextmanager
    def installed(self) -> Iterator[Recorder]:
        """httpx's two ``send`` methods, wrapped to keep every answer they return."""
        sync_send: Callable[..., httpx.Response] = httpx.Client.send
        async_send: Callable[..., Any] = httpx.AsyncClient.send
        recorder = self

        def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
            response = sync_send(self, request, **kwargs)
            recorder.keep(request, response)
            return response

        async def asend(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
            response = await async_send(self, request, **kwargs)
            recorder.keep(request, response)
            return response

        httpx.Client.send = send  # type: ignore[method-assign]
        httpx.AsyncClient.send = asend  # type: ignore[method-assign]
        try:
            yield self
        finally:
            httpx.Client.send = sync_send  # type: ignore[method-assign]
            httpx.AsyncClient.send = async_send  # type: ignore[method-assign]


def report(checker: Checker, answers: list[Answer]) -> list[str]:
    """One line per answer that does not conform, naming its request and every problem."""
    lines = []
    for answer in answers:
        op, problems = checker.problems(answer)
        if problems:
            lines.append(f"{answer.describe()} [{op[0]} {op[1]}]: " + "; ".join(problems))  # type: ignore[index]
    return lines


def answered(checker: Checker, answers: list[Answer], seen: dict[Operation, set[int]]) -> None:
    """Add to ``seen`` the statuses each documented operation answered with (a routed answer
    counts for its target and for the routed form itself)."""
    for answer in answers:
        op = checker.operation_of(answer)
        if op is not None:
            seen.setdefault(op, set()).add(answer.status)
        if answer.route is not None and answer.path == "/":
            seen.setdefault(("POST", "/"), set()).add(answer.status)


def served_checker(gateway: str) -> Checker:
    """A checker of the document ``gateway`` serves (GET /schema/openapi.json)."""
    r = httpx.get(gateway + "/schema/openapi.json", timeout=30)
    assert r.status_code == 200, r.text[:300]
    return Checker(r.json())


def hold_answers(request: pytest.FixtureRequest, gateways: list[str]) -> Iterator[None]:
    """The body of both tiers' autouse ``answers_conform`` fixture: every answer a test (and its
    fixtures) received from ``gateways`` (and from the proxied gateway, when the test asks for
    it) conforms to the document, else the test fails at teardown naming each such answer."""
    recorder: Recorder = request.getfixturevalue("answer_recorder")
    checker: Checker = request.getfixturevalue("answer_checker")
    seen: dict[Operation, set[int]] = request.getfixturevalue("answers_seen")
    recorder.register(*gateways)
    if "proxied_gateway" in request.fixturenames:
        recorder.register(request.getfixturevalue("proxied_gateway").url)
    yield
    answers = recorder.take()  # this test's and its fixtures' since the last test ended
    answered(checker, answers, seen)
    bad = report(checker, answers)
    if bad:
        pytest.fail(
            f"{len(bad)} answer(s) do not conform to the gateway's OpenAPI document:\n" + "\n".join(bad[:25]),
            pytrace=False,
        )


def conformance_fixtures(scope: Literal["session", "package"]) -> tuple[Any, Any, Any, Any]:
    """Both tiers' fixtures, at the scope of their ``stack`` (the stack's session, the
    in-process tier's package): the recorder, the served document's checker, the statuses seen,
    and the autouse hold on every test that uses ``stack`` (:func:`hold_answers`). A conftest
    assigns them to these four names, which is how pytest finds them."""

    @pytest.fixture(scope=scope)
    def answer_recorder() -> Iterator[Recorder]:
        with Recorder().installed() as recorder:
            yield recorder

    @pytest.fixture(scope=scope)
    def answer_checker(stack: Any) -> Checker:
        """The document the gateway serves (GET /schema/openapi.json)."""
        return served_checker(stack.gateway)

    @pytest.fixture(scope=scope)
    def answers_seen() -> dict[Operation, set[int]]:
        """Every documented operation's statuses answered in this scope's run."""
        return {}

    @pytest.fixture(autouse=True)
    def answers_conform(request: pytest.FixtureRequest) -> Iterator[None]:
        if "stack" not in request.fixturenames:  # a test without the stack: nothing to hold
            yield
            return
        stack = request.getfixturevalue("stack")
        yield from hold_answers(request, [g.url for g in stack.gateways])

    return answer_recorder, answer_checker, answers_seen, answers_conform
