"""Token services (lensrelay/access/tokens.py): which changes take rights away, and that exactly those are
announced (the announcement ends the token's MCP sessions)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from lensrelay.access.tokens import (
    folders_narrowed,
    parse_lifetime,
    token_create,
    token_narrowed,
    token_revoke,
    token_set_folders,
    token_update,
)
from lensrelay.models import Folder

FOLDER_IDS = st.frozensets(st.integers(min_value=1, max_value=6), max_size=6)
# No folders means every folder, those made later too (0 stands for a folder not made yet).
EVERY = frozenset(range(7))


@given(before=FOLDER_IDS, after=FOLDER_IDS)
def test_narrowed_exactly_when_a_folder_seen_before_is_not_seen_after(
    before: frozenset[int], after: frozenset[int]
) -> None:
    def seen(ids: frozenset[int]) -> frozenset[int]:
        return ids or EVERY

    assert folders_narrowed(before, after) is bool(seen(before) - seen(after))


@pytest.mark.parametrize(
    ("before", "after", "narrowed"),
    [
        ((), (), False),
        ((), (1,), True),  # every folder -> one folder
        ((1,), (), False),  # one folder -> every folder
        ((1, 2), (1,), True),
        ((1,), (1, 2), False),
        ((1,), (2,), True),
        ((1, 2), (2, 1), False),
    ],
)
def test_folders_narrowed(before: tuple[int, ...], after: tuple[int, ...], narrowed: bool) -> None:
    assert folders_narrowed(before, after) is narrowed


@pytest.mark.django_db(transaction=True)
def test_services_announce_every_change_that_takes_rights_away() -> None:
    heard: list[int] = []

    def listen(sender: Any, *, token_id: int, **kwargs: Any) -> None:
        heard.append(token_id)

    token_narrowed.connect(listen)
    try:
        a, b = Folder.objects.create(name="A"), Folder.objects.create(name="B")
        token, _ = token_create(name="t", role="edit", folders=[a])
        assert not token_set_folders(token=token, folders=[a, b]) and heard == []  # wider
        assert token_set_folders(token=token, folders=[b]) and heard == [token.pk]  # lost A
        token_update(token=token, name="t2", role="admin", expires_at=None)
        assert heard == [token.pk]  # a higher role takes nothing away
        token_update(token=token, name="t2", role="suggest", expires_at=None)
        assert heard == [token.pk] * 2
        soon = timezone.now() + timedelta(hours=1)
        token_update(token=token, name="t2", role="suggest", expires_at=soon)
        assert heard == [token.pk] * 3
        token_update(token=token, name="t2", role="suggest", expires_at=soon + timedelta(days=1))
        assert heard == [token.pk] * 3  # a later expiry gives time, takes none
        token_revoke(token=token)
        token_revoke(token=token)  # revoking twice announces once
        assert heard == [token.pk] * 4
        with pytest.raises(ValueError, match="Unknown role"):
            token_update(token=token, name="t2", role="root", expires_at=None)
        token.refresh_from_db()
        assert (token.name, token.role, token.revoked) == ("t2", "suggest", True)
    finally:
        token_narrowed.disconnect(listen)


@pytest.mark.parametrize(
    ("spec", "lifetime"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("45m", timedelta(minutes=45)),
        (" 90S ", timedelta(seconds=90)),
    ],
)
def test_lifetimes_read_as_written(spec: str, lifetime: timedelta) -> None:
    assert parse_lifetime(spec) == lifetime


@pytest.mark.parametrize("spec", ["", "30", "d", "0d", "-1h", "1.5h", "12w", "1e3s", "٣d"])
def test_bad_lifetimes_say_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ValueError, match="30d, 12h"):
        parse_lifetime(spec)


@pytest.mark.django_db
def test_create_token_expires_in(capsys: pytest.CaptureFixture[str]) -> None:
    from django.core.management import CommandError, call_command

    from lensrelay.models import ApiToken

    call_command("create_token", "--name", "ci", "--role", "view", "--expires-in", "12h")
    raw = capsys.readouterr().out.strip().splitlines()[-1]
    token = ApiToken.objects.get(token_hash=ApiToken.hash_token(raw))
    assert token.expires_at is not None
    left = token.expires_at - timezone.now()
    assert timedelta(hours=11, minutes=59) < left <= timedelta(hours=12)
    with pytest.raises(CommandError, match="30d, 12h"):
        call_command("create_token", "--name", "ci", "--role", "view", "--expires-in", "soon")
    with pytest.raises(CommandError, match="not both"):
        call_command(
            "create_token", "--name", "ci", "--role", "view", "--expires-in", "1d", "--expires-days", "2"
        )
    assert ApiToken.objects.count() == 1
