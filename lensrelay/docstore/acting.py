"""Who is acting: the person, token, OAuth grant or assistant session a change is made for.

Every write path (a socket, an MCP tool call, an admin page, the HTTP update route, a management command)
names its actor once, around the work; the room reads it when a change is made and logs it with the
change, so the update log and version history say who did what without each service passing it along.
A context variable carries it: asgiref's sync/async bridges copy it, so the admin's synchronous code
reaching the event loop through `run_on_store` keeps its actor.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from lensrelay.text.names import CLIENT_NAME_LIMIT, SEPARATOR, clean_name


@dataclass(frozen=True)
class Actor:
    """kind: "staff" (a signed-in user), "token" (an API token), "grant" (an OAuth grant a person gave an
    assistant), "command" (a management command run on the server). `client` is the assistant's own name
    (MCP clientInfo) when it acts through an MCP session; `person` is whom a grant acts for."""

    kind: str
    name: str
    token_id: int | None = None
    user_id: int | None = None
    client: str = ""
    person: str = ""

    @property
    def what(self) -> str:
        """What the actor is, in a label's parentheses: `staff`, `token #3`, `OAuth grant #7 for ada`."""
        if self.kind == "token":
            return f"token #{self.token_id}"
        if self.kind == "grant":
            person = clean_name(self.person)
            return f"OAuth grant #{self.token_id}" + (f" for {person}" if person else "")
        return self.kind

    @property
    def display_name(self) -> str:
        """The name an assistant shows everywhere (suggestion author, presence, history): whom it acts for
        and which client. A token session joins the token's name and its MCP clientInfo name
        (`claude-review · Claude Code`); a grant is already named so (`alice · Claude`, the client the
        person consented to); a person or command is its name."""
        if self.kind == "grant":
            # Composed when the person consented (`person · client`), each part cleaned then; cleaned again
            # part by part, so only this separator ever stands between them.
            name = SEPARATOR.join(filter(None, map(clean_name, self.name.split("·")))) or "?"
        else:
            name = clean_name(self.name) or "?"
        client = clean_name(self.client, limit=CLIENT_NAME_LIMIT)
        if self.kind == "token" and client:
            return f"{name}{SEPARATOR}{client}"
        return name

    @property
    def label(self) -> str:
        """How history shows this actor: its display name, then what it is: `claude-review · Claude Code
        (token #3)`, `alice · Claude (OAuth grant #7 for alice)`, `alice (staff)`."""
        return f"{self.display_name} ({self.what})"

    def with_client(self, client: str) -> Actor:
        return Actor(self.kind, self.name, self.token_id, self.user_id, client, self.person)


_current: ContextVar[Actor | None] = ContextVar("lensrelay_actor", default=None)


def current_actor() -> Actor | None:
    return _current.get()


def current_label() -> str:
    actor = _current.get()
    return actor.label if actor is not None else ""


@contextmanager
def acting_as(actor: Actor | None) -> Iterator[Actor | None]:
    """Attribute the changes made inside to `actor` (None: to nobody, as background work)."""
    token = _current.set(actor)
    try:
        yield actor
    finally:
        _current.reset(token)


def act_for_this_request(actor: Actor | None) -> None:
    """Name the actor for the rest of the current context: an ASGI request runs in its own task (so its
    own copy of the context), so this does not outlive the request that authenticated."""
    _current.set(actor)
