from django.apps import AppConfig


class LensRelayConfig(AppConfig):
    name = "lensrelay"
    verbose_name = "Lens Relay"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # These modules register document-store listeners (folder mirroring, text cache, purged rooms)
        # on import.
        from lensrelay import folders, purge, texts  # noqa: F401
        from lensrelay.history import listen as history_listen  # noqa: F401
        from lensrelay.links import backlinks  # noqa: F401
        from lensrelay.search import maintain  # noqa: F401
        from lensrelay.semantic import listen  # noqa: F401
