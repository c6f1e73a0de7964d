"""A seeded corpus of malformed Yjs updates: random bytes, truncated and mutated valid updates.

Each update is checked against a scratch pycrdt Doc holding the target document's state, and only the ones
that fail there (to decode, or to apply: pycrdt may raise RuntimeError or panic halfway) are kept, so a
server must refuse every one of them and keep its document exactly as it was.
"""

from __future__ import annotations

import random
from typing import Any

from pycrdt import Array, Doc, Map, Text

# Decodes, then fails halfway through integration on any document ("block parent ... must be deleted or
# shared ref type"), leaving the blocks before the faulty one behind: found by this file's mutations.
HALF_APPLYING_UPDATE = bytes.fromhex(
    "0209a5ddccbdff92d108022801016d0162017601017875027c3f8000007c40000000a8f1cdd9fdb0afdc060b017e2701016d"
    "0174020400a5ddccbdff92d1080205696e6e65722701016d03617272000800a5ddccbdff92d10808027c3f80000077017887"
    "a5ddccbdff92d1080a012800a5ddccbdff92d1080b016b017c400000000801036172720177017103f1cdd9fdb0afdc060001"
    "0108636f6e74646e74730284f1cdd9fdb0afdc0601096c6c6f20776f726c642101016d01610101f1cdd9fdb0afdc06020002"
    "0b01"
)

# On top of PANICKING_BASE ("héllo 😀 中" written by client 1) this update makes yrs panic ("called
# `Option::unwrap()` on a `None` value"), which pyo3 raises as PanicException, a BaseException.
PANICKING_BASE = bytes.fromhex("01010100040108636f6e74656e74730f68c3a96c6c6f20f09f988020e4b8ad00")
PANICKING_UPDATE = bytes.fromhex(
    "0209a0a2a4e8f5b5e50c0041010002c4a0a2a4e8f5b5e50c01010018c3bcc39f6520f09f9880204772c3bcc39f6520f09f98"
    "80202801056578747261016e017c43c5000027010565787472610174020400a0a2a4e8f5b5e50c130a696e6e657220746578"
    "7427010565787472610161000800a0a2a4e8f5b5e50c1e027c3f80000077017887a0a2a4e8f5b5e50c20012800a0a2a4e8f5"
    "b5e50c21016b017cd03f800000010100040108636f6e74656e74730f68c3a96c6c6f20f09f988020c4b8ad01a0a2a4e8f5b5"
    "e50c010002"
)


def _valid_updates(state: bytes, rng: random.Random) -> list[bytes]:
    """Genuine updates on top of `state`: text edits, map entries, nested shared types."""
    updates = []
    for round_ in range(4):
        client: Doc[Any] = Doc()
        client.apply_update(state)
        before = client.get_state()
        text = client.get("contents", type=Text)
        text.insert(0, "Grüße 😀 " * (round_ + 1))
        if len(str(text)) > 4:
            del text[0:2]
        extra = client.get("extra", type=Map)
        extra["n"] = rng.randrange(1000)
        extra["t"] = Text("inner text")
        extra["a"] = Array([1, "x", Map({"k": round_})])
        updates.append(client.get_update(before))
        updates.append(client.get_update())
    return updates


def _mutate(update: bytes, rng: random.Random) -> bytes:
    data = bytearray(update)
    choice = rng.random()
    if choice < 0.25:
        return bytes(data[: rng.randrange(len(data))])
    for _ in range(rng.randint(1, 3)):
        if not data:
            break
        i = rng.randrange(len(data))
        kind = rng.random()
        if kind < 0.45:
            data[i] ^= 1 << rng.randrange(8)
        elif kind < 0.65:
            data[i] = rng.choice([0, 1, 2, 7, 8, 9, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        elif kind < 0.85:
            del data[i : i + rng.randint(1, 4)]
        else:
            data[i:i] = bytes([rng.randrange(256)])
    return bytes(data)


def refused_by_pycrdt(state: bytes, update: bytes) -> bool:
    scratch: Doc[Any] = Doc()
    scratch.apply_update(state)
    try:
        scratch.apply_update(update)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # pyo3's PanicException is a BaseException
        return True
    return False


def malformed_updates(state: bytes, *, seed: int, count: int, attempts: int = 6000) -> list[bytes]:
    """`count` updates that pycrdt refuses on top of `state`: the half-applying one, every half-applying
    mutation found within `attempts`, then decode failures and random bytes."""
    rng = random.Random(seed)
    valid = _valid_updates(state, rng)
    half_applying = [HALF_APPLYING_UPDATE]
    undecodable: list[bytes] = [b"", b"\x00", b"\xff" * 9, b"\x01\x01" + b"\xff" * 12]
    for _ in range(attempts):
        if rng.random() < 0.15:
            candidate = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
        else:
            candidate = _mutate(rng.choice(valid), rng)
        try:
            scratch: Doc[Any] = Doc()
            scratch.apply_update(state)
            scratch.apply_update(candidate)
        except ValueError:
            undecodable.append(candidate)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:
            half_applying.append(candidate)
    rng.shuffle(undecodable)
    corpus = half_applying + undecodable
    return corpus[:count]
