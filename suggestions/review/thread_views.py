"""The JSON endpoints through which people take part in comment threads, from the editor and the review page.

Views check who asks and translate; the thread services (suggestions.lifecycle.commenting) do the rest,
exactly as for assistants. Who may do what:

- read a note's threads: whoever may read the note (`access_for_user`);
- start a thread or reply: who may edit live, suggest or review;
- resolve or reopen: the thread's starter, or a reviewer.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse

from lensrelay.access.auth import EDIT_LIVE_PERMISSION, SUGGEST_PERMISSION, access_for_user
from lensrelay.docstore.store import DocStore, run_on_store
from lensrelay.models import Document
from lensrelay.vault.paths import path_index
from suggestions.errors import SuggestionError
from suggestions.lifecycle.commenting import (
    MAX_COMMENT_CHARS,
    MAX_PASSAGE_CHARS,
    Commenter,
    thread_reply,
    thread_resolve,
    thread_start,
)
from suggestions.models import Suggestion, Thread
from suggestions.permissions import can_review
from suggestions.selectors import thread_or_pending_suggestion

ACTIONS = ("start", "reply", "resolve", "reopen")


def may_comment(user: Any) -> bool:
    """Who reads notes and may edit live, suggest or review: the same on every page."""
    if access_for_user(user) is None:
        return False
    return can_review(user) or user.has_perm(EDIT_LIVE_PERMISSION) or user.has_perm(SUGGEST_PERMISSION)


def may_resolve(user: Any, thread: Thread) -> bool:
    if access_for_user(user) is None:
        return False
    return can_review(user) or (thread.person_id is not None and thread.person_id == user.pk)


def _document(request: HttpRequest, doc_id: str) -> Document:
    if access_for_user(request.user) is None:
        raise PermissionDenied
    document = Document.objects.filter(doc_id=doc_id).first()
    if document is None:
        raise Http404("No such document")
    return document


def thread_json(thread: Thread, user: Any) -> dict[str, Any]:
    return {
        "id": thread.uid,
        "status": thread.status,
        "detached": thread.detached,
        "passage": thread.passage,
        "suggestion": thread.suggestion.uid if thread.suggestion is not None else None,
        "author": thread.author,
        "resolvedBy": thread.resolved_by,
        "canResolve": thread.suggestion_id is None and may_resolve(user, thread),
        "comments": [
            {
                "id": c.uid,
                "author": c.author,
                "body": c.body,
                "created": c.created.isoformat(),
                "mine": c.person_id is not None and c.person_id == user.pk,
            }
            for c in thread.comments.all()
        ],
    }


def threads_of_document(*, doc_id: str) -> list[Thread]:
    rows = Thread.objects.filter(doc_id=doc_id).select_related("suggestion").prefetch_related("comments")
    return list(rows.order_by("detached", "created", "pk"))


def threads_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str) -> HttpResponse:
    """GET: the note's threads, the open ones first in the order they were started."""
    document = _document(request, doc_id)
    threads = threads_of_document(doc_id=document.doc_id)
    return JsonResponse(
        {
            "threads": [thread_json(t, request.user) for t in threads],
            "canComment": may_comment(request.user),
            "maxChars": MAX_COMMENT_CHARS,
        }
    )


def _refused(reason: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"ok": False, "reason": reason}, status=status)


def _near(value: str) -> int | None:
    try:
        near = int(value)
    except ValueError:
        return None
    return near if near >= 0 else None


def thread_action_view(
    model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str
) -> HttpResponse:
    """POST ``action=start`` (``passage``, ``text``, optional ``near``: where the selection starts, in
    code points of the note's text), ``reply`` (``thread``, ``text``; a pending suggestion's id starts its
    discussion), ``resolve`` or ``reopen`` (``thread``). JSON: ``ok`` and the thread, or ``reason``."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    document = _document(request, doc_id)
    action = request.POST.get("action", "")
    if action not in ACTIONS:
        return _refused("action must be start, reply, resolve or reopen")
    user = request.user
    commenter = Commenter(author=user.get_username(), person_id=user.pk)
    text = request.POST.get("text", "")
    if action in ("start", "reply"):
        if not may_comment(user):
            raise PermissionDenied
        if len(text) > MAX_COMMENT_CHARS:
            return _refused(f"a comment holds at most {MAX_COMMENT_CHARS:,} characters")
    if action == "start":
        passage = request.POST.get("passage", "")
        if len(passage) > MAX_PASSAGE_CHARS:
            return _refused(f"a passage holds at most {MAX_PASSAGE_CHARS:,} characters")
        near = _near(request.POST.get("near", ""))

        async def start(store: DocStore) -> Thread:
            index = path_index(store)
            await index.ensure()
            entry = index.by_doc_id(document.doc_id)
            if entry is None:  # made by another process a moment ago
                await index.refresh_folder(document.folder_id)
                entry = index.by_doc_id(document.doc_id)
            if entry is None:
                raise SuggestionError("Error: the note is not in a folder's index.")
            return await thread_start(
                store=store, entry=entry, commenter=commenter, passage=passage, body=text, near=near
            )

        return _done(lambda: run_on_store(start), user)
    uid = request.POST.get("thread", "")
    target = thread_or_pending_suggestion(uid=uid, doc_id=document.doc_id, suggestion=action == "reply")
    if target is None:
        raise Http404("No such thread in this note")
    if action == "reply":

        async def reply(store: DocStore) -> Thread:
            comment = await thread_reply(store=store, thread=target, commenter=commenter, body=text)
            return comment.thread

        return _done(lambda: run_on_store(reply), user)
    found = target
    if not isinstance(found, Thread) or not may_resolve(user, found) or found.suggestion_id is not None:
        raise PermissionDenied
    resolved = action == "resolve"
    return _done(
        lambda: run_on_store(
            lambda store: thread_resolve(store=store, thread=found, commenter=commenter, resolved=resolved)
        ),
        user,
    )


def _done(work: Any, user: Any) -> JsonResponse:
    try:
        thread = work()
    except SuggestionError as exc:
        return _refused(str(exc).removeprefix("Error: "), status=409)
    fresh = Thread.objects.select_related("suggestion").prefetch_related("comments").get(pk=thread.pk)
    return JsonResponse({"ok": True, "thread": thread_json(fresh, user)})
