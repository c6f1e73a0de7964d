"""Accepting with changes: the row keeps the reviewer's revision beside the proposed hunks."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("suggestions", "0007_suggestionhold"),
    ]

    operations = [
        migrations.AddField(
            model_name="suggestion",
            name="revision",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="The inserted text of each hunk as the reviewer changed it before accepting "
                "(empty: accepted as proposed); the hunks keep what was proposed",
            ),
        ),
    ]
