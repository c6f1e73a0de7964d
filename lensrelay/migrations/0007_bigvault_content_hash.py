from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("lensrelay", "0006_scale_change_feed"),
    ]

    operations = [
        migrations.AddField(
            model_name="ydoc",
            name="content_hash",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="ydoc",
            name="content_upto",
            field=models.BigIntegerField(default=0),
        ),
    ]
