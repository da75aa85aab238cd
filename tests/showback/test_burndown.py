"""The burn-down maths (apps/showback/burndown.py), by hand."""

from datetime import UTC, datetime

import pytest

from apps.showback import burndown


@pytest.mark.parametrize(
    ("used_pct", "state"),
    [
        (0, "ok"),
        (49.99, "ok"),
        (50, "50"),
        (74.9, "50"),
        (75, "75"),
        (90, "90"),
        (99.99, "90"),
        (100, "over"),
        (250, "over"),
    ],
)
def test_states(used_pct, state):
    assert burndown.state_of(used_pct) == state


def test_forecast_mid_month_uses_the_last_seven_complete_days():
    now = datetime(2026, 3, 15, 12, 30, tzinfo=UTC)
    window = burndown.forecast_window(now)
    assert (window.start, window.end, window.days) == (
        datetime(2026, 3, 8, tzinfo=UTC),
        datetime(2026, 3, 15, tzinfo=UTC),
        7,
    )
    # From 13:00 on the 15th to 1 April: 16 days and 11 hours.
    assert burndown.days_left(now) == pytest.approx(16 + 11 / 24)
    figures = burndown.Burndown(
        amount=1000,
        spent=600,
        window_spent=280,
        window_days=7,
        days_left=burndown.days_left(now),
    )
    assert figures.used_pct == pytest.approx(60)
    assert figures.state == "50"
    assert figures.mean_daily == pytest.approx(40)
    assert figures.forecast == pytest.approx(600 + 40 * (16 + 11 / 24))
    assert figures.forecast_pct == pytest.approx(figures.forecast / 10)
    assert not figures.short_window


def test_early_in_the_month_the_mean_takes_the_days_there_are():
    now = datetime(2026, 3, 3, 8, tzinfo=UTC)
    window = burndown.forecast_window(now)
    assert window.days == 2 and window.start == datetime(2026, 3, 1, tzinfo=UTC)
    figures = burndown.Burndown(1000, 150, 120, window.days, burndown.days_left(now))
    assert figures.short_window and figures.mean_daily == pytest.approx(60)


def test_no_complete_day_no_forecast_and_over_is_not_clamped():
    now = datetime(2026, 3, 1, 5, tzinfo=UTC)
    assert burndown.forecast_window(now).days == 0
    figures = burndown.Burndown(100, 130, 0, 0, burndown.days_left(now))
    assert figures.forecast is None
    assert figures.used_pct == pytest.approx(130) and figures.state == "over"


def test_december_ends_at_the_new_year():
    now = datetime(2026, 12, 31, 22, 10, tzinfo=UTC)
    assert burndown.days_left(now) == pytest.approx(1 / 24)
