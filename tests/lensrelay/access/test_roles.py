"""The product's roles as groups (lensrelay/access/roles.py): there after migrate, each with exactly its
permissions, and kept in step when run again."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command

from lensrelay.access.roles import ROLE_GROUPS

pytestmark = pytest.mark.django_db(transaction=True)


def granted(name: str) -> set[str]:
    group = Group.objects.get(name=name)
    return {
        f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")
    }


def test_the_groups_grant_exactly_their_roles_permissions() -> None:
    read = {"lensrelay.view_folder", "lensrelay.view_document", "suggestions.view_suggestion"}
    assert granted("Readers") == read
    assert granted("Suggesters") == read | {"lensrelay.suggest"}
    assert granted("Reviewers") == read | {"suggestions.review_suggestion"}
    assert granted("Editors") == read | {"suggestions.review_suggestion", "lensrelay.edit_live"}


def test_a_person_in_a_group_has_its_rights_and_no_more() -> None:
    rita = User.objects.create_user("rita", is_staff=True)
    rita.groups.add(Group.objects.get(name="Reviewers"))
    assert rita.has_perm("suggestions.review_suggestion") and rita.has_perm("lensrelay.view_document")
    assert not rita.has_perm("lensrelay.edit_live") and not rita.has_perm("lensrelay.add_apitoken")


def test_migrate_puts_a_changed_group_back_in_step() -> None:
    editors = Group.objects.get(name="Editors")
    editors.permissions.remove(Permission.objects.get(codename="edit_live"))
    editors.permissions.add(Permission.objects.get(codename="delete_folder"))
    call_command("migrate", verbosity=0)
    assert granted("Editors") == {f"{app}.{codename}" for app, codename in ROLE_GROUPS["Editors"]}
