import importlib.util

from django.apps import AppConfig


class McpToolsConfig(AppConfig):
    name = "mcp_tools"
    verbose_name = "MCP endpoint"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Tools, resource providers and the conformance fixtures register themselves on import. The
        # fixtures are always registered but only offered while LENSRELAY_MCP_CONFORMANCE_FIXTURES is on,
        # so tests can switch them with override_settings.
        from lensrelay.docstore.derived import derived_view
        from mcp_tools import conformance  # noqa: F401
        from mcp_tools.callers.memory import connect_credential_signals
        from mcp_tools.callers.sessions import connect_token_signals
        from mcp_tools.notifications import produce
        from mcp_tools.notifications.task_status import connect_task_status_signals
        from mcp_tools.resources import documents  # noqa: F401
        from mcp_tools.tasks.records import connect_task_signals

        connect_token_signals()
        connect_credential_signals()
        produce.connect_notification_signals()
        # The tasks' rows move with a decision before their watchers are told of it.
        connect_task_signals()
        connect_task_status_signals()
        # `resources/updated` for the notes that changed, a derived view: with a derive process, once per
        # pass, run first (cheap, and what a waiting client hears; the other views write what is read
        # later: backlinks, search rows, vectors); inline, a moment after this process's edits.
        derived_view(
            produce.NOTIFIER,
            handle=produce.notify_changed,
            delay=lambda: produce.DEBOUNCE_SECONDS,
            first=True,
        )

        if importlib.util.find_spec("mcp_tools.tools") is not None:
            importlib.import_module("mcp_tools.tools")
            # The knowledge base's prompts use the tools' listings.
            importlib.import_module("mcp_tools.prompt_library")
