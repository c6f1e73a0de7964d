import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def own_mirrored_documents(apps, schema_editor):  # type: ignore[no-untyped-def]
    """Every content document that has a row today belongs to that row's folder."""
    YDoc = apps.get_model("lensrelay", "YDoc")
    Document = apps.get_model("lensrelay", "Document")
    owner = Document.objects.filter(doc_id=OuterRef("doc_id")).values("folder_id")[:1]
    YDoc.objects.filter(kind="content").update(folder_id=Subquery(owner))


class Migration(migrations.Migration):
    dependencies = [
        ("lensrelay", "0002_search_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="ydoc",
            name="folder",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="lensrelay.folder",
            ),
        ),
        migrations.RunPython(own_mirrored_documents, migrations.RunPython.noop),
    ]
