"""common.keyring under mutation: what a key ring setting must be, what a
ciphertext must carry to open, and what each refusal says (never a key)."""

from __future__ import annotations

import base64
import re

import pytest

from common.keyring import (
    KeyRing,
    KeyRingError,
    key_entries,
    new_key_setting,
    open_reply_secrets,
    reply_context,
    seal_for_reply,
)

pytestmark = pytest.mark.unit

KEY = base64.b64encode(bytes(range(32))).decode()


def refused(setting: str) -> str:
    with pytest.raises(KeyRingError) as info:
        KeyRing.parse(setting)
    return str(info.value)


def test_a_setting_is_read_entry_by_entry_and_names_what_is_malformed() -> None:
    assert key_entries(f" a:{KEY} ,, b:{KEY}", "x", ValueError) == [
        ("a", bytes(range(32))),
        ("b", bytes(range(32))),
    ]
    assert refused(f"k1:{KEY},k2") == "entry 2 of the key ring is not kid:base64"
    # the key id is what precedes the first colon
    assert refused(f"k1:{KEY}:x") == "key 'k1' of the key ring is not valid base64"
    # characters outside the alphabet are refused, not skipped
    assert refused(f"k1:{KEY[:10]}!{KEY[10:]}") == "key 'k1' of the key ring is not valid base64"
    assert refused("k" * 40 + ":??") == f"key {'k' * 32!r} of the key ring is not valid base64"


def test_a_key_ring_needs_well_formed_distinct_keys() -> None:
    assert refused("") == "the key ring needs at least one key"
    assert refused(f"{'k' * 50}:{KEY}") == f"key id {'k' * 40!r} must be 1-32 of A-Z a-z 0-9 _ . -"
    short = base64.b64encode(bytes(31)).decode()
    assert refused(f"k1:{short}") == "key 'k1' must be 32 bytes (base64 of 32 random bytes)"
    assert refused(f"k1:{KEY},k1:{KEY}") == "key id 'k1' appears twice"
    ring = KeyRing.parse(f"new:{KEY},old:{base64.b64encode(bytes(32)).decode()}")
    assert ring.current == "new" and ring.kids == ["new", "old"]


def test_a_ciphertext_names_its_key_and_opens_only_in_its_context() -> None:
    ring = KeyRing.parse(f"k1:{KEY}")
    sealed = ring.seal(b"secret", "row_1")
    assert sealed[:4] == b"\x02\x02k1" and ring.kid_of(sealed) == "k1"
    assert ring.open(sealed, "row_1") == b"secret"
    with pytest.raises(KeyRingError, match=r"^ciphertext does not open under its key and this context$"):
        ring.open(sealed, "row_2")


def test_what_is_not_a_ciphertext_says_why() -> None:
    ring = KeyRing.parse(f"k1:{KEY}")
    for sealed in (b"", b"\x02", b"\x01\x02k1"):
        with pytest.raises(KeyRingError, match=r"^unknown ciphertext version$"):
            ring.open(sealed, "c")
    # two bytes are a version and an empty key id: a key the ring does not hold
    with pytest.raises(KeyRingError) as info:
        ring.open(b"\x02\x00", "c")
    assert str(info.value) == "ciphertext sealed under key '', which is not in the key ring"
    # a key id that is not UTF-8 is shown replaced, never raised on
    odd = b"\x02\x02\xff\xfe" + bytes(30)
    with pytest.raises(KeyRingError) as info:
        ring.open(odd, "c")
    assert str(info.value) == "ciphertext sealed under key '\ufffd\ufffd', which is not in the key ring"
    assert ring.kid_of(odd) == "\ufffd\ufffd"
    assert ring.kid_of(b"\x02\x03abc" + bytes(12)) == "abc"


def test_a_new_setting_is_one_fresh_entry() -> None:
    kid, _, key = new_key_setting().partition(":")
    assert re.fullmatch(r"k[0-9a-f]{8}", kid) and len(base64.b64decode(key)) == 32
    assert new_key_setting("mine").startswith("mine:")
    assert KeyRing.parse(new_key_setting()).current.startswith("k")


def test_reply_secrets_are_bound_to_their_command() -> None:
    ring = KeyRing.parse(f"k1:{KEY}")
    assert reply_context("cmd_1") == "reply:cmd_1"
    sealed = seal_for_reply(ring, "whsec_1", "cmd_1")
    assert ring.open(sealed, "reply:cmd_1") == b"whsec_1"
    unknown = dict.fromkeys(("a", "b", "c", "d", "e", "f"), sealed)
    with pytest.raises(KeyRingError) as info:
        open_reply_secrets(ring, {}, unknown, "cmd_1")
    assert str(info.value) == (
        "a reply carries sealed fields that are not secret fields: ['a', 'b', 'c', 'd', 'e']"
    )
    with pytest.raises(KeyRingError) as info:
        open_reply_secrets(ring, [1], {"signing_secret": sealed}, "cmd_1")
    assert str(info.value) == "a reply carries sealed fields but its data is not an object"
