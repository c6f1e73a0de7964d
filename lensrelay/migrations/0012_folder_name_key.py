# Folder names are unique once folded (case, Unicode normalisation, percent-encoding, trailing dots and
# spaces: `lensrelay.text.vaultpath.folder_name_key`), so a rename can never retarget links that resolve
# case-insensitively. The services check it inside their transaction; this unique column stops any
# writer that does not. A folder that already collides with an older one keeps a NULL key (NULLs never
# collide, on SQLite and PostgreSQL alike): nothing is renamed behind its owners' backs, and the services
# still compare its name, so no new folder can join the collision.

from typing import Any

from django.db import migrations, models

from lensrelay.text.vaultpath import folder_name_key


def fill_keys(apps: Any, schema_editor: Any) -> None:
    folder_model = apps.get_model("lensrelay", "Folder")
    taken: set[str] = set()
    for folder in folder_model.objects.order_by("pk").only("pk", "name"):
        key = folder_name_key(folder.name)
        if key in taken:
            print(f"\n  folder {folder.name!r} collides with an older folder once folded; left without a key")
            continue
        taken.add(key)
        folder_model.objects.filter(pk=folder.pk).update(name_key=key)


# SQLite adds a unique column by rebuilding the table, which drops its triggers: the search generation's
# (migration 0010) must be put back, or kept search answers would miss folder renames.
_BUMP = "UPDATE lensrelay_search_generation SET n = n + 1"
_FOLDER_TRIGGERS = [
    *(
        f"CREATE TRIGGER IF NOT EXISTS lensrelay_search_generation_lensrelay_folder_{event.lower()}"
        f" AFTER {event} ON lensrelay_folder BEGIN {_BUMP}; END"
        for event in ("INSERT", "DELETE")
    ),
    "CREATE TRIGGER IF NOT EXISTS lensrelay_search_generation_lensrelay_folder_update"
    " AFTER UPDATE OF id, name ON lensrelay_folder"
    f" WHEN OLD.id IS NOT NEW.id OR OLD.name IS NOT NEW.name BEGIN {_BUMP}; END",
]


def restore_triggers(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for statement in _FOLDER_TRIGGERS:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("lensrelay", "0011_search_titles"),
    ]

    operations = [
        migrations.AddField(
            model_name="folder",
            name="name_key",
            field=models.TextField(editable=False, null=True, unique=True),
        ),
        migrations.RunPython(fill_keys, migrations.RunPython.noop),
        migrations.RunPython(restore_triggers, migrations.RunPython.noop),
    ]
