from django.apps import AppConfig


class SuggestionsConfig(AppConfig):
    name = "suggestions"
    verbose_name = "Suggestions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the listener that keeps rows in step with decisions made inside editors.
        from lensrelay.text.texts import set_view
        from suggestions import follow, restoring  # noqa: F401
        from suggestions.accepted_view import accepted_text

        # Tools and search read pending suggestions as accepted (read's footer lists them).
        set_view(accepted_text)
