"""The launcher's interpreter switch interval: from LENSRELAY_SWITCH_INTERVAL_MS, refused when malformed."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from lensrelay.server.switching import switch_interval_seconds, switch_interval_tune


@pytest.fixture
def restored_interval() -> Iterator[float]:
    before = sys.getswitchinterval()
    yield before
    sys.setswitchinterval(before)


def test_tuning_sets_the_interval(restored_interval: float) -> None:
    with override_settings(LENSRELAY_SWITCH_INTERVAL_MS="0.25"):
        switch_interval_tune()
    assert sys.getswitchinterval() == pytest.approx(0.00025)


@pytest.mark.parametrize("text", ["", "fast", "0", "-1", "nan", "inf", "1e9", "0.001"])
def test_a_malformed_setting_is_refused_naming_it(text: str, restored_interval: float) -> None:
    with override_settings(LENSRELAY_SWITCH_INTERVAL_MS=text), pytest.raises(ImproperlyConfigured) as refused:
        switch_interval_tune()
    assert "LENSRELAY_SWITCH_INTERVAL_MS" in str(refused.value)
    assert sys.getswitchinterval() == restored_interval


def test_the_default_hands_the_lock_over_ten_times_sooner_than_python() -> None:
    assert switch_interval_seconds() == pytest.approx(0.0005)
