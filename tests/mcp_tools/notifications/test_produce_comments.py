"""A comment tells the assistant sessions taking part in its thread (the starter's, the proposer's of a
discussed suggestion, every one that wrote in it), never the writer's own nor a session of another thread."""

from __future__ import annotations

import pytest

from lensrelay.access.tokens import token_create
from suggestions.lifecycle.commenting import Commenter, _comment_row, _save_comment, suggestion_thread
from suggestions.models import Suggestion, Thread
from tests.mcp_tools.notifications.test_produce import listening, logged

pytestmark = pytest.mark.django_db(transaction=True)


def say(thread: Thread, who: Commenter, body: str) -> None:
    _save_comment(_comment_row(thread, who, uid=f"{abs(hash(body)):016x}"[:16], body=body))


def test_the_sessions_in_a_thread_are_told_of_each_comment_but_their_own() -> None:
    token, _ = token_create(name="claude", role="suggest", folders=[])
    starter, helper, bystander = listening("starter"), listening("helper"), listening("bystander")
    claude = Commenter(author="claude", token_id=token.pk, session_id=starter)
    thread = Thread(doc_id="doc", path="Team/Plan.md", passage="on Friday", author="claude", token=token)
    thread.session_id = starter
    _save_comment(_comment_row(thread, claude, uid="c" * 16, body="Sure?"), thread)
    assert logged(starter) == []  # one's own comment is not told back

    ana = Commenter(author="ana")
    say(thread, ana, "Yes, Friday.")
    [told] = logged(starter)
    assert told | {"status": None} == {
        "type": "comment_posted",
        "thread": thread.uid,
        "path": "Team/Plan.md",
        "passage": "on Friday",
        "suggestion": None,
        "author": "ana",
        "text": "Yes, Friday.",
        "status": None,
    }
    say(thread, Commenter(author="helper", token_id=token.pk, session_id=helper), "I agree.")
    assert [d["text"] for d in logged(starter)] == ["Yes, Friday.", "I agree."]
    say(thread, ana, "Good.")
    assert [d["text"] for d in logged(helper)] == ["Good."]
    assert logged(bystander) == []


def test_the_proposer_of_a_discussed_suggestion_is_told() -> None:
    proposer = listening("proposer")
    row = Suggestion.objects.create(
        doc_id="doc", path="Team/Plan.md", author="bot", tool="edit", session_id=proposer, comment="Plainer"
    )
    token, _ = token_create(name="bot", role="suggest", folders=[])
    Suggestion.objects.filter(pk=row.pk).update(token=token)
    row.refresh_from_db()
    thread = suggestion_thread(suggestion=row)
    say(thread, Commenter(author="ana"), "Why plainer?")
    [told] = logged(proposer)
    assert told["suggestion"] == row.uid and told["text"] == "Why plainer?"
