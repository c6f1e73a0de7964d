"""Hypothesis profiles of the suggestion engine's property tests, chosen by ``HYPOTHESIS_PROFILE``.

Named ``engine-<name>`` and applied per test, so other test modules' profiles are left alone.
``ci`` (the default) keeps the CI cost to about a minute per database pass.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# name: (examples per pure test, examples of the live-store test)
# "db" is ./scripts/test's PostgreSQL pass, which reruns only the database-level tests: the live-store one,
# whose engine is database-agnostic and has just run its `ci` examples on SQLite; 25 more drive the
# store's writes, claims and decisions through the second database.
EXAMPLES = {"dev": (50, 10), "db": (50, 25), "ci": (700, 100), "deep": (20_000, 2_000)}
_NAME = os.environ.get("HYPOTHESIS_PROFILE", "ci")
_PURE, _LIVE = EXAMPLES.get(_NAME, EXAMPLES["ci"])

for name, (pure, _) in EXAMPLES.items():
    settings.register_profile(
        f"engine-{name}", max_examples=pure, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )

PURE = settings(settings.get_profile(f"engine-{_NAME if _NAME in EXAMPLES else 'ci'}"))
LIVE = settings(
    PURE,
    max_examples=_LIVE,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
