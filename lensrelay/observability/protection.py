"""Who may scrape `/metrics`: a caller with the metrics token, or one from an allowed address.

The numbers tell how busy the server is, how many suggestions wait and which tools assistants use: not
for everyone. `LENSRELAY_METRICS_TOKEN` is a bearer token for the scraper (compared in constant time);
`LENSRELAY_METRICS_ALLOW` a comma-separated list of addresses and networks (CIDR) allowed without it.
Both empty, the default, refuses every scrape: loopback is not allowed by default because behind a
reverse proxy on the same machine every request comes from loopback (docs/metrics.md).

A caller that presents a bearer token must present the right one, whatever its address. Refusals are
401 (a token is configured: send the right one) or 403 (no token is configured and the address is not
allowed); nothing in a refusal depends on the metrics.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# An Authorization header longer than this is not a token of ours: refused without comparing.
MAX_AUTHORIZATION_CHARS = 1024


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    headers: dict[str, str] = field(default_factory=dict)


def parse_networks(entries: Iterable[str]) -> list[Network]:
    """`LENSRELAY_METRICS_ALLOW`'s entries as networks; raises ValueError naming a bad entry."""
    networks: list[Network] = []
    for entry in entries:
        text = entry.strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError as exc:
            raise ValueError(f"{text!r} is not an IP address or network (CIDR): {exc}") from None
    return networks


@functools.lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    # Settings are checked at start (lensrelay.settings); entries set otherwise (tests) that do not parse
    # are skipped, with a log line, rather than failing every scrape.
    kept: list[Network] = []
    for entry in entries:
        try:
            kept.extend(parse_networks([entry]))
        except ValueError as exc:
            logger.error("LENSRELAY_METRICS_ALLOW: %s; ignored", exc)
    return tuple(kept)


def address_allowed(remote_addr: str | None, allow: Iterable[str]) -> bool:
    if not remote_addr:
        return False  # a Unix socket, or a server that does not say: not an address on the list
    try:
        address = ipaddress.ip_address(remote_addr.strip().removeprefix("[").removesuffix("]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:10.0.0.5 from a dual-stack socket is 10.0.0.5
    return any(address in network for network in _networks(tuple(allow)))


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; "" for any other or malformed header;
    None without one."""
    if authorization is None:
        return None
    if len(authorization) > MAX_AUTHORIZATION_CHARS:
        return ""
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return ""
    return token.strip()


def metrics_refusal(
    *, remote_addr: str | None, authorization: str | None, token: str, allow: Iterable[str]
) -> Refusal | None:
    """None when the caller may scrape, else why not. `token` and `allow` are the settings."""
    presented = bearer_token(authorization)
    challenge = {"WWW-Authenticate": 'Bearer realm="metrics"'}
    if presented is not None and token:
        # Constant time over the bytes: the comparison does not tell how much of a guess was right.
        if presented and hmac.compare_digest(presented.encode(), token.encode()):
            return None
        return Refusal(
            401,
            "wrong metrics token",
            {"WWW-Authenticate": 'Bearer realm="metrics", error="invalid_token"'},
        )
    if address_allowed(remote_addr, allow):
        return None
    if token:
        return Refusal(401, "the metrics token is required", challenge)
    return Refusal(403, "scraping is not allowed from this address (LENSRELAY_METRICS_ALLOW)")
