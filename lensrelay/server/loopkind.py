"""Which event loop runs under Twisted's reactor: uvloop's (libuv) or the standard library's.

daphne makes its loop with ``asyncio.new_event_loop()`` when its server module is first imported, and
installs Twisted's asyncio reactor on it; the loop policy in force at that moment decides its kind. So the
launcher sets the policy before anything imports daphne's server (`LENSRELAY_UVLOOP`, on by default).
Measured beside the standard loop under a team's load (bench/history/issue-36-cost.md): p99 at 150x10
9.2 against 11.6 ms, server CPU per delivered update 61 against 66 µs. Where uvloop is not installed (it
has no Windows build) the standard loop runs, and the launcher says so.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)


def loop_policy_tune() -> str:
    """Set the event loop policy the launcher's reactor loop will be made under; returns its kind."""
    if not settings.LENSRELAY_UVLOOP:
        return "asyncio"
    if "daphne.server" in sys.modules:
        raise ImproperlyConfigured("LENSRELAY_UVLOOP must be set up before daphne's server is imported")
    try:
        import uvloop
    except ImportError:
        logger.warning("LENSRELAY_UVLOOP is on but uvloop is not installed: the standard event loop runs")
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"
