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
        from mcp_tools import conformance, resources_documents  # noqa: F401
        from mcp_tools.callers import connect_credential_signals
        from mcp_tools.notifications.produce import connect_notification_signals
        from mcp_tools.sessions import connect_token_signals

        connect_token_signals()
        connect_credential_signals()
        connect_notification_signals()

        if importlib.util.find_spec("mcp_tools.tools") is not None:
            importlib.import_module("mcp_tools.tools")
