"""The product's roles as Django groups, so a team is set up by putting people in one rather than by
ticking permissions: kept in step with the permissions on every ``migrate`` (a group holds exactly its
role's permissions; make your own groups for other mixes).

Each role is written as ``(app label, codename)`` pairs: the suggestions app's permissions are named here,
not imported (lensrelay imports nothing of it).
"""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig, apps

READ = (
    ("lensrelay", "view_folder"),
    ("lensrelay", "view_document"),
    ("suggestions", "view_suggestion"),
)
SUGGEST = (*READ, ("lensrelay", "suggest"))
REVIEW = (*READ, ("suggestions", "review_suggestion"))
EDIT = (*REVIEW, ("lensrelay", "edit_live"))

ROLE_GROUPS: dict[str, tuple[tuple[str, str], ...]] = {
    "Readers": READ,
    "Suggesters": SUGGEST,
    "Reviewers": REVIEW,
    "Editors": EDIT,
}


def role_groups_sync(*, app_config: AppConfig, **kwargs: Any) -> None:
    """Receiver of ``post_migrate``, sent once per app after its permissions are made (and again after
    every flush in the tests): acts on the last app that owns a role's permission, when all exist."""
    owners = {app for permissions in ROLE_GROUPS.values() for app, _ in permissions}
    if app_config.label != [c.label for c in apps.get_app_configs() if c.label in owners][-1]:
        return
    from django.contrib.auth.models import Group, Permission

    wanted = {codename for permissions in ROLE_GROUPS.values() for _, codename in permissions}
    found = {
        (p.content_type.app_label, p.codename): p
        for p in Permission.objects.filter(codename__in=wanted).select_related("content_type")
    }
    for name, permissions in ROLE_GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set([found[key] for key in permissions if key in found])
