"""The colour an assistant shows in a room, picked as the browser editor's participants pick theirs
(editor/src/colours.js: the same palette and the same preference by name): the colour its name prefers when
no one else in the room shows it, else the next free one, else the least shown. People's pages show each
participant in the colour it publishes, so an assistant is one colour on every page and never one a person
in the room already has."""

from __future__ import annotations

from collections.abc import Iterable

# The editor's palette, in its order (tests/lensrelay/sync/test_colours.py holds them equal).
PALETTE = (
    "#d32f2f",
    "#1976d2",
    "#2e7d32",
    "#ef6c00",
    "#7b1fa2",
    "#00838f",
    "#c2185b",
    "#6d4c41",
    "#5c6bc0",
    "#9e9d24",
)


def preferred_index(name: str, size: int = len(PALETTE)) -> int:
    """As colours.js's `preferredIndex`: a 32-bit rolling hash of the name's code points."""
    value = 0
    for char in name:
        value = (value * 31 + ord(char)) & 0xFFFFFFFF
    return value % size


def colour_for(name: str, states: Iterable[object]) -> str:
    """The colour `name` shows, given the other participants' awareness states."""
    shown = dict.fromkeys(PALETTE, 0)
    for state in states:
        user = state.get("user") if isinstance(state, dict) else None
        if not isinstance(user, dict):
            continue
        colour = user.get("color")
        if isinstance(colour, str) and colour in shown and user.get("name") != name:
            shown[colour] += 1
    start = preferred_index(name)
    ordered = [PALETTE[(start + step) % len(PALETTE)] for step in range(len(PALETTE))]
    return min(ordered, key=lambda colour: shown[colour])  # the first of the least shown, from the preferred
