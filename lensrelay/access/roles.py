"""The product's roles as Django groups, so a team is set up by putting people in one rather than by
ticking permissions: kept in step with the permissions on every ``migrate`` (a group holds exactly its
role's permissions; make your own groups for other mixes).

Each role is written as ``(app label, codename)`` pairs: the suggestions app's permissions are named here,
not imported (lensrelay imports nothing of it).
"""

from __future__ import annotations

from typing import Any

READ = (
    ("lensrelay", "view_folder"),
    ("lensrelay", "view_document"),
    ("suggestions", "view_suggestion"),
)
REVIEW = (*READ, ("suggestions", "review_suggestion"))
EDIT = (*REVIEW, ("lensrelay", "edit_live"))

ROLE_GROUPS: dict[str, tuple[tuple[str, str], ...]] = {
    "Readers": READ,
    "Reviewers": REVIEW,
    "Editors": EDIT,
}


def role_groups_sync(**kwargs: Any) -> None:
    """Receiver of ``post_migrate`` (sent once per app, after its permissions are made): every role's
    group with exactly the permissions of it that exist so far; the last app's call completes them."""
    from django.contrib.auth.models import Group, Permission

    for name, wanted in ROLE_GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        permissions = [
            permission
            for permission in Permission.objects.filter(codename__in=[c for _, c in wanted]).select_related(
                "content_type"
            )
            if (permission.content_type.app_label, permission.codename) in wanted
        ]
        group.permissions.set(permissions)
