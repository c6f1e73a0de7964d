"""y-sweet client tokens (lensrelay/access/client_tokens.py): one document, never wider than the minting
token now, refused with a reason when expired, tampered, for another document or orphaned."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from lensrelay.access.auth import authenticate_token, token_refusal
from lensrelay.access.client_tokens import (
    ClientTokenRefused,
    client_token_access,
    client_token_mint,
    is_client_token,
)
from lensrelay.access.tokens import token_create, token_revoke, token_set_folders, token_update
from lensrelay.models import Folder

pytestmark = pytest.mark.django_db

DOC = "doc-1"


def minted(role: str = "edit", *, read_only: bool = False, seconds: int | None = None, folders=()) -> tuple:  # type: ignore[no-untyped-def,type-arg]
    token, raw = token_create(name="app", role=role, folders=folders)
    access = authenticate_token(raw)
    assert access is not None
    return token, client_token_mint(access=access, doc_id=DOC, read_only=read_only, valid_for_seconds=seconds)


def refusal(raw: str, doc_id: str = DOC, **kwargs: float) -> str:
    with pytest.raises(ClientTokenRefused) as caught:
        client_token_access(raw, doc_id, **kwargs)
    return caught.value.reason


def test_a_client_token_opens_its_document_only_and_keeps_the_minting_scope() -> None:
    folder = Folder.objects.create(name="Alpha", doc_id="folder-alpha")
    token, client = minted(folders=[folder])
    assert is_client_token(client.raw) and not client.read_only
    access = client_token_access(client.raw, DOC)
    assert (access.doc_id, access.can_write_live, access.folder_ids) == (DOC, True, frozenset({folder.pk}))
    assert access.token_id == token.pk and access.sees_document(DOC) and not access.sees_document("doc-2")
    assert refusal(client.raw, "doc-2") == "other-document"
    # an API token check never takes a client token
    assert authenticate_token(client.raw) is None


def test_read_only_is_kept_and_a_reader_never_mints_a_writer() -> None:
    _, client = minted(read_only=True)
    assert client.read_only and not client_token_access(client.raw, DOC).can_write_live
    _, viewer = minted("view", read_only=False)
    assert viewer.read_only and not client_token_access(viewer.raw, DOC).can_write_live


def test_expiry_the_default_the_cap_and_the_minting_tokens_own_expiry(settings) -> None:  # type: ignore[no-untyped-def]
    settings.LENSRELAY_CLIENT_TOKEN_SECONDS, settings.LENSRELAY_CLIENT_TOKEN_MAX_SECONDS = 600, 3600
    now = time.time()
    _, client = minted()
    assert now + 590 <= client.expires_at <= now + 610
    _, long = minted(seconds=10**9)
    assert long.expires_at <= now + 3610
    assert refusal(long.raw, now=now + 3700) == "expired"
    token, raw = token_create(name="short", role="edit")
    token_update(token=token, name="short", role="edit", expires_at=timezone.now() + timedelta(seconds=30))
    access = authenticate_token(raw)
    assert access is not None
    bounded = client_token_mint(access=access, doc_id=DOC, read_only=False, valid_for_seconds=3600)
    assert bounded.expires_at <= time.time() + 31


def test_revoking_or_narrowing_the_minting_token_reaches_its_client_tokens() -> None:
    token, client = minted()
    assert client_token_access(client.raw, DOC).role == "edit"
    token_update(token=token, name="app", role="view", expires_at=None)
    assert not client_token_access(client.raw, DOC).can_write_live
    alpha = Folder.objects.create(name="Alpha", doc_id="folder-alpha")
    token_set_folders(token=token, folders=[alpha])
    assert client_token_access(client.raw, DOC).folder_ids == frozenset({alpha.pk})
    token_revoke(token=token)
    assert refusal(client.raw) == "revoked"
    token.delete()
    assert refusal(client.raw) == "revoked"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda raw: raw[:-2] + ("xy" if not raw.endswith("xy") else "zz"),  # signature
        lambda raw: raw[:8] + ("A" if raw[8] != "A" else "B") + raw[9:],  # claim
        lambda raw: "lrc_" + "e30:forged:signature",
        lambda raw: "lrc_",
    ],
)
def test_tampered_or_forged_tokens_are_malformed(mangle) -> None:  # type: ignore[no-untyped-def]
    _, client = minted()
    assert refusal(mangle(client.raw)) == "malformed"


def test_bearer_refusals_say_why() -> None:
    token, raw = token_create(name="t", role="view")
    assert token_refusal(None) == token_refusal("  ") == "missing"
    assert token_refusal("lr_nope") == "unknown"
    token_update(token=token, name="t", role="view", expires_at=timezone.now() - timedelta(seconds=1))
    assert token_refusal(raw) == "expired"
    token_revoke(token=token)
    assert token_refusal(raw) == "revoked"
