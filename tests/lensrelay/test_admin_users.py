"""The users' admin action that emails invitation links: confirm first (who gets one, who does not and
why), then send, each with a history entry; only for staff who may change users; the links appear in the
emails only."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.core import mail
from django.test import Client

pytestmark = pytest.mark.django_db(transaction=True)

USERS = "/admin/auth/user/"


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def people() -> tuple[User, User, User]:
    new = User.objects.create_user("nia", email="nia@example.org", is_staff=True)
    new.set_unusable_password()
    new.save()
    settled = User.objects.create_user("sam", email="sam@example.org", password="sam's passphrase 1")
    mailless = User.objects.create_user("moe")
    mailless.set_unusable_password()
    mailless.save()
    return new, settled, mailless


def act(client: Client, users: list[User], **extra: str) -> str:
    data = {"action": "send_invitation", "_selected_action": [u.pk for u in users], **extra}
    return client.post(USERS, data, follow=True).content.decode()


def test_confirm_then_send_to_those_who_can_choose_a_password() -> None:
    admin = User.objects.create_superuser("root", "root@example.org", "root passphrase 1")
    nia, sam, moe = people()
    client = signed_in(admin)
    page = act(client, [nia, sam, moe])
    assert "Send invitation links?" in page and 'id="confirm-invite" value="Yes, send 1 link"' in page
    assert "nia &lt;nia@example.org&gt;" in page
    assert "sam already has a password" in page and "moe has no email address" in page
    assert mail.outbox == [] and "/accounts/password/" not in page  # nothing sent, no link shown

    done = act(client, [nia, sam, moe], post="yes")
    assert "Sent 1 invitation link." in done and "Not sent: moe has no email address; sam already" in done
    [message] = mail.outbox
    assert message.to == ["nia@example.org"]
    link = re.search(r"http://testserver(/accounts/password/\S+)", message.body)
    assert link is not None and Client().get(link.group(1), follow=True).status_code == 200
    entry = LogEntry.objects.get(object_id=str(nia.pk))
    assert entry.change_message == "Sent an invitation link to choose a password."
    assert entry.user_id == admin.pk
    assert User.objects.get(pk=sam.pk).check_password("sam's passphrase 1")  # untouched


def test_staff_who_may_not_change_users_cannot_send() -> None:
    viewer = User.objects.create_user("vi", password="vi passphrase 1", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename="view_user"))
    nia, _, _ = people()
    page = act(signed_in(viewer), [nia], post="yes")
    assert "Sent" not in page and mail.outbox == []
    assert not LogEntry.objects.filter(object_id=str(nia.pk)).exists()
