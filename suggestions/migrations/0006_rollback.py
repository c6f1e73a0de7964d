"""Rolling an assistant back: two statuses and who rolled an accepted change back, and when."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("suggestions", "0005_undo_decisions"),
    ]

    operations = [
        migrations.AddField(
            model_name="suggestion",
            name="rolled_back_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When its accepted text was rolled back (while rolling back: claimed)",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="suggestion",
            name="rolled_back_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="suggestion",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("accepting", "Being accepted"),
                    ("rejecting", "Being rejected"),
                    ("undoing", "Being undone"),
                    ("reverting", "Being rolled back"),
                    ("reverted", "Rolled back"),
                    ("accepted", "Accepted"),
                    ("rejected", "Rejected"),
                    ("superseded", "Superseded"),
                    ("stale", "Stale"),
                ],
                db_index=True,
                default="pending",
                max_length=12,
            ),
        ),
    ]
