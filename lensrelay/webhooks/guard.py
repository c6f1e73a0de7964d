"""Where a webhook may point: http(s) URLs whose host resolves only to public addresses.

Whoever may edit endpoints would otherwise make this server POST into its own network (the cloud
metadata service at 169.254.169.254, a database on localhost, an intranet). The URL is checked when it is
saved, and resolved and checked again before every attempt, which then connects to the very address that
was checked (`sending.py`): a DNS answer that changes between the two (rebinding) reaches nothing private.
`LENSRELAY_WEBHOOK_ALLOW_PRIVATE` lifts the address rule (receivers on a private network, tests); the
URL's shape is checked regardless.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

MAX_URL_CHARS = 2000


class UrlRefused(ValueError):
    """A URL webhooks may not use; the message says why."""


@dataclass(frozen=True)
class Target:
    """A checked URL taken apart: where to connect (`address`) and what to ask for."""

    scheme: str
    host: str
    port: int
    path: str
    address: str


def _allow_private() -> bool:
    return bool(settings.LENSRELAY_WEBHOOK_ALLOW_PRIVATE)


def address_refusal(address: str) -> str | None:
    """Why an IP address is no place for a webhook (None: a public address)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address} is not an IP address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return f"{ip} is a loopback address"
    if ip.is_link_local:
        return f"{ip} is a link-local address (cloud metadata services live there)"
    if ip.is_private:
        return f"{ip} is a private address"
    if ip.is_multicast or ip.is_unspecified or ip.is_reserved or not ip.is_global:
        return f"{ip} is not a public address"
    return None


def parse_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) of an acceptable URL; raises UrlRefused."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_CHARS:
        raise UrlRefused(f"A webhook URL is an http(s) URL of at most {MAX_URL_CHARS} characters.")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise UrlRefused("A webhook URL may not contain spaces or control characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused(f"Not a valid URL: {exc}.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UrlRefused("A webhook URL must start with https:// or http://.")
    if parts.username is not None or parts.password is not None:
        raise UrlRefused("A webhook URL may not carry credentials; receivers check the signature instead.")
    host = parts.hostname or ""
    if not host:
        raise UrlRefused("A webhook URL must name a host.")
    if parts.fragment:
        raise UrlRefused("A webhook URL may not have a #fragment.")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, host, port or (443 if scheme == "https" else 80), path


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (an IP literal, in any spelling the resolver takes, to itself)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise UrlRefused(f"{host} does not resolve: {exc}.") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise UrlRefused(f"{host} does not resolve.")
    return addresses


def check_url(url: str) -> Target:
    """Check a URL now (shape, and every address its host resolves to); raises UrlRefused.

    Every address must be public, not only the first: a host answering with one public and one private
    address would otherwise reach the private one on the next lookup.
    """
    scheme, host, port, path = parse_url(url)
    addresses = resolve(host, port)
    if not _allow_private():
        for address in addresses:
            why = address_refusal(address)
            if why is not None:
                raise UrlRefused(
                    f"{host} resolves to {why}: webhooks go to public addresses only "
                    "(LENSRELAY_WEBHOOK_ALLOW_PRIVATE lifts this)."
                )
    return Target(scheme=scheme, host=host, port=port, path=path, address=addresses[0])
