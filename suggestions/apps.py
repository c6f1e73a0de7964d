from django.apps import AppConfig


class SuggestionsConfig(AppConfig):
    name = "suggestions"
    verbose_name = "Suggestions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the listeners that keep rows in step with decisions made inside editors, restores
        # and purges, and the one that tells webhooks of decisions.
        from lensrelay.docstore.derived import derived_view
        from lensrelay.docstore.texts import set_view
        from lensrelay.sync.suggesting import set_suggesting_rule
        from lensrelay.vault.importexport import set_export_addition
        from suggestions import webhooks  # noqa: F401
        from suggestions.lifecycle import commenting, emailing, follow, purging, restoring  # noqa: F401
        from suggestions.lifecycle.suggesting import PeopleSuggesting
        from suggestions.markup.accepted_view import accepted_text
        from suggestions.metrics import connect_metrics

        # The suggestion follower, a derived view: with a derive process, a view of its every pass; inline,
        # a moment after this process's edits.
        derived_view(
            follow.FOLLOWER,
            feed=follow.FollowerView,
            handle=follow.follow_changed,
            delay=lambda: follow.DEBOUNCE_SECONDS,
        )

        # Suggestions created, decided and pending, for /metrics.
        connect_metrics()

        # People in suggesting mode: what their sockets may change, and the rows of what they typed.
        set_suggesting_rule(PeopleSuggesting())

        # Tools and search read pending suggestions as accepted (read's footer lists them).
        set_view(accepted_text)

        # An exported vault keeps every comment, those of threads whose markup was deleted too.
        set_export_addition(commenting.lost_threads_markup)
