"""Inviting a person (manage.py invite): a staff user in the named groups and a link to choose a password
that works once, for that person only, and expires; refusals change nothing."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

pytestmark = pytest.mark.django_db(transaction=True)


def invite(*args: str) -> str:
    out = StringIO()
    call_command("invite", *args, stdout=out)
    return out.getvalue()


def link_path(output: str) -> str:
    found = re.search(r"works once\): http://testserver(/accounts/password/\S+)", output)
    assert found, output
    return found.group(1)


def choose_password(client: Client, path: str, password: str) -> tuple[int, str]:
    """Follow the link as a browser does (Django moves the token into the session first), then post."""
    form = client.get(path, follow=True)
    if "new_password1" not in form.content.decode():
        return form.status_code, form.content.decode()
    answer = client.post(
        form.redirect_chain[-1][0], {"new_password1": password, "new_password2": password}, follow=True
    )
    return answer.status_code, answer.content.decode()


def test_an_invited_person_chooses_a_password_once_and_can_sign_in() -> None:
    output = invite("ada@example.org", "--group", "Reviewers", "--base-url", "http://testserver")
    ada = User.objects.get(username="ada")
    assert ada.is_staff and not ada.has_usable_password() and ada.email == "ada@example.org"
    assert list(ada.groups.values_list("name", flat=True)) == ["Reviewers"]
    assert "Invited ada <ada@example.org> (groups: Reviewers)." in output
    path = link_path(output)
    status, page = choose_password(Client(), path, "a long enough passphrase 42")
    assert status == 200 and "Password reset complete" in page and "Lens Relay" in page
    assert Client().login(username="ada", password="a long enough passphrase 42")
    # the link is spent
    status, page = choose_password(Client(), path, "another passphrase 43")
    assert "The password reset link was invalid" in page
    assert Client().login(username="ada", password="a long enough passphrase 42")


def test_a_link_expires_and_a_tampered_one_sets_nothing() -> None:
    output = invite("bo@example.org", "--group", "Readers", "--base-url", "http://testserver")
    path = link_path(output)
    uid, token = path.split("/")[3:5]
    other = User.objects.create_user("cy", password="cy's own passphrase 1", is_staff=True)
    for forged in (
        f"/accounts/password/{urlsafe_base64_encode(force_bytes(other.pk))}/{token}/",  # another person
        f"/accounts/password/{uid}/{token[:-2]}xx/",
    ):
        _, page = choose_password(Client(), forged, "taken over 12345")
        assert "The password reset link was invalid" in page, forged
    with override_settings(PASSWORD_RESET_TIMEOUT=-1):
        _, page = choose_password(Client(), path, "too late passphrase 7")
        assert "The password reset link was invalid" in page
    assert not User.objects.get(username="bo").has_usable_password()
    assert Client().login(username="cy", password="cy's own passphrase 1")


def test_send_emails_the_link() -> None:
    output = invite("dee@example.org", "--group", "Editors", "--send", "--base-url", "https://kb.example")
    [message] = mail.outbox
    assert message.to == ["dee@example.org"] and "https://kb.example/accounts/password/" in message.body
    assert "Sent to dee@example.org." in output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["not-an-email", "--group", "Readers"], "is not an email address"),
        (
            ["eve@example.org", "--group", "Admins"],
            "no group named Admins (groups: Editors, Readers, Reviewers, Suggesters)",
        ),
        (["eve@example.org"], "Name at least one --group"),
        (["root@example.org", "--group", "Readers"], "already has an account with a password"),
    ],
)
def test_refusals_say_why_and_change_nothing(args: list[str], said: str) -> None:
    User.objects.create_user("root", password="the root passphrase 9")
    with pytest.raises(CommandError, match=re.escape(said)):
        invite(*args)
    assert list(User.objects.values_list("username", flat=True)) == ["root"]
    assert Client().login(username="root", password="the root passphrase 9")
