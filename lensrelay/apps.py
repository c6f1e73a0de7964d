from importlib import import_module

from django.apps import AppConfig


class LensRelayConfig(AppConfig):
    name = "lensrelay"
    verbose_name = "Lens Relay"
    default_auto_field = "django.db.models.BigAutoField"

    def import_models(self) -> None:
        # Version history's, semantic search's and webhooks' tables belong to this app but live in their
        # packages (lensrelay/history, lensrelay/semantic, lensrelay/webhooks). Imported here, with
        # lensrelay.models, while Django loads the app's models, so that lensrelay.models never imports a
        # package built on it.
        super().import_models()
        import_module("lensrelay.history.models")
        import_module("lensrelay.semantic.models")
        import_module("lensrelay.webhooks.models")

    def ready(self) -> None:
        # These modules register document-store listeners (folder mirroring, text cache, purged rooms),
        # derived views (versions, search rows, vectors, backlinks: lensrelay.docstore.derived) and model
        # signal receivers (OAuth clients' names; the update log's first claim on SQLite's lock) on import;
        # suggestions and mcp_tools register their derived views from their own ready().
        from django.db.models.signals import post_migrate

        from lensrelay.access import actor_names  # noqa: F401
        from lensrelay.access.roles import role_groups_sync
        from lensrelay.docstore import logfirst, texts  # noqa: F401
        from lensrelay.docstore.derived import derive_backlog
        from lensrelay.history import listen as history_listen  # noqa: F401
        from lensrelay.observability.scrape import scrape_gauge
        from lensrelay.search import maintain  # noqa: F401
        from lensrelay.semantic import listen  # noqa: F401
        from lensrelay.vault import (
            backlinks,  # noqa: F401
            folders,  # noqa: F401
            purge,  # noqa: F401
        )
        from lensrelay.webhooks.selectors import webhook_scrape_gauges_register

        post_migrate.connect(role_groups_sync, dispatch_uid="lensrelay-role-groups")
        webhook_scrape_gauges_register()
        # Read when /metrics is scraped: how far the derive process is behind the update log.
        scrape_gauge(
            name="lensrelay_derive_backlog_rows",
            documentation="Update-log rows the derive process (backlinks, search, vectors) has not read yet.",
            read=derive_backlog,
        )
