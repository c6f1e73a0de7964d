from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("mcp_tools", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="CredentialGeneration",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("value", models.BigIntegerField(default=0)),
            ],
        ),
    ]
