"""Middleware naming the signed-in staff user as the actor of whatever a request changes (admin pages:
accepting a suggestion, moving, trashing, importing), so the update log and versions say who did it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse

from lensrelay.docstore.acting import Actor, acting_as


def staff_actor(user: Any) -> Actor | None:
    if user is None or not getattr(user, "is_authenticated", False) or not getattr(user, "is_staff", False):
        return None
    return Actor("staff", user.get_username(), user_id=user.pk)


class StaffActorMiddleware:
    """After AuthenticationMiddleware. Bearer-token routes (/mcp, /api, /d/) name their token themselves."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse]:
        if self.is_async:
            return self._acall(request)
        with acting_as(staff_actor(_user(request))):
            response: HttpResponse = self.get_response(request)
            return response

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        user = await _auser(request)
        with acting_as(staff_actor(user)):
            response: HttpResponse = await self.get_response(request)
            return response


def _user(request: HttpRequest) -> Any:
    # Only admin pages act as the session's user; other routes authenticate with bearer tokens.
    if not request.path.startswith("/admin/"):
        return None
    return request.user


async def _auser(request: HttpRequest) -> Any:
    if not request.path.startswith("/admin/"):
        return None
    auser = getattr(request, "auser", None)
    return await auser() if auser is not None else None
