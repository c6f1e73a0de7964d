from django.apps import AppConfig


class LensRelayConfig(AppConfig):
    name = "lensrelay"
    verbose_name = "Lens Relay"
    default_auto_field = "django.db.models.BigAutoField"
