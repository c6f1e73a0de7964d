"""The launcher's garbage collector settings: thresholds from LENSRELAY_GC_THRESHOLDS, startup frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from lensrelay.server.collector import collector_tune, gc_thresholds


@pytest.fixture
def restored_collector() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_tuning_sets_the_thresholds_and_freezes_what_startup_made(restored_collector: None) -> None:
    with override_settings(LENSRELAY_GC_THRESHOLDS="12000,40,30"):
        collector_tune()
    assert gc.get_threshold() == (12000, 40, 30)
    assert gc.get_freeze_count() > 0


@pytest.mark.parametrize("text", ["", "700,10", "700,10,10,1", "a,b,c", "700,0,10", "-1,10,10", "7e2,10,10"])
def test_a_malformed_setting_is_refused_naming_it(text: str, restored_collector: None) -> None:
    before = gc.get_threshold()
    with override_settings(LENSRELAY_GC_THRESHOLDS=text), pytest.raises(ImproperlyConfigured) as refused:
        collector_tune()
    assert "LENSRELAY_GC_THRESHOLDS" in str(refused.value)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_the_default_makes_full_collections_rare() -> None:
    young, middle, old = gc_thresholds()
    assert young * middle * old > 700 * 10 * 10 * 100
