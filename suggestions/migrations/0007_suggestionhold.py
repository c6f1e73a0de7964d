"""Holds on documents whose markup and rows change together, seen by the follower in any process."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("suggestions", "0006_rollback"),
    ]

    operations = [
        migrations.CreateModel(
            name="SuggestionHold",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("doc_id", models.CharField(db_index=True, max_length=100)),
                ("expires_at", models.DateTimeField(db_index=True)),
            ],
        ),
    ]
