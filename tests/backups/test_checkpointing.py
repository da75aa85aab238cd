"""The checkpoint-interval maths against Daly's published examples.

J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
dumps", Future Generation Computer Systems 22 (2006) 303–312. Figures 3, 4 and 5 compare
his model with simulation for a dump time δ = 5 min, restart R = 10 min and solve time
Ts = 500 h, and state the model's optimum:
  Fig. 3: M = 24 h   → τopt = 117 min
  Fig. 4: M = 6 h    → τopt = 57 min
  Fig. 5: M = 15 min → τopt = 9.1 min
"""

import math

import pytest

from apps.backups import checkpointing

MINUTE = 60.0
DALY_FIGURES = [
    # (figure, M in minutes, published τopt in minutes)
    ("fig3", 24 * 60, 117.0),
    ("fig4", 6 * 60, 57.0),
    ("fig5", 15, 9.1),
]
DUMP_MINUTES = 5


def by_hand(c, m):
    """Daly's formula written out again, independently of the module."""
    x = c / (2 * m)
    return (2 * c * m) ** 0.5 * (1 + x**0.5 / 3 + x / 9) - c


@pytest.mark.parametrize(("figure", "mtbf_minutes", "published_minutes"), DALY_FIGURES)
def test_daly_matches_his_published_optima_within_one_percent(
    figure, mtbf_minutes, published_minutes
):
    tau = checkpointing.daly_interval_seconds(DUMP_MINUTES * MINUTE, mtbf_minutes * MINUTE)
    assert tau / MINUTE == pytest.approx(published_minutes, rel=0.01), figure
    assert tau / MINUTE == pytest.approx(by_hand(DUMP_MINUTES, mtbf_minutes), rel=1e-9)


def test_fig3_by_hand():
    # √(2·5·1440) = 120; C/2M = 5/2880; 120·(1 + 0.041667/3 + 0.001736/9) − 5 = 116.69
    tau = checkpointing.daly_interval_seconds(300, 86400) / MINUTE
    assert tau == pytest.approx(116.69, abs=0.01)


def test_young_is_the_square_root_of_two_c_m():
    assert checkpointing.young_interval_seconds(300, 86400) == pytest.approx(7200)


def test_daly_is_the_mtbf_when_the_write_takes_two_mtbfs_or_more():
    assert checkpointing.daly_interval_seconds(200, 100) == 100
    assert checkpointing.daly_interval_seconds(199, 100) < 200


def test_lost_fraction_adds_writing_rework_and_restart():
    # C/τ + τ/(2M) + R/M = 300/7200 + 7200/172800 + 600/86400
    fraction = checkpointing.expected_lost_fraction(7200, 300, 86400, 600)
    assert fraction == pytest.approx(300 / 7200 + 7200 / 172800 + 600 / 86400)
    assert checkpointing.expected_lost_fraction(10, 1000, 10) == 1.0  # capped


def test_the_optimum_loses_less_than_its_neighbours():
    c, m = 180.0, 246_000.0
    tau = checkpointing.daly_interval_seconds(c, m)
    at = checkpointing.expected_lost_fraction(tau, c, m)
    assert at < checkpointing.expected_lost_fraction(tau / 2, c, m)
    assert at < checkpointing.expected_lost_fraction(tau * 2, c, m)


def test_mtbf_of_a_job_shrinks_with_its_gpus():
    per_gpu = checkpointing.per_gpu_mtbf_seconds(observed_gpu_hours=10_000, failures=4)
    assert per_gpu == pytest.approx(2500 * 3600)
    assert checkpointing.job_mtbf_seconds(per_gpu, 64) == pytest.approx(2500 * 3600 / 64)
    assert checkpointing.per_gpu_mtbf_seconds(10_000, 0) is None


def test_retention_and_money():
    assert checkpointing.checkpoints_retained(3600, None, 2) == 48
    assert checkpointing.checkpoints_retained(3600, 4, 2) == 4
    assert checkpointing.checkpoints_retained(3600, None, None) is None
    cost = checkpointing.interval_cost(
        interval_seconds=3600,
        checkpoint_write_seconds=60,
        mtbf_seconds=36000,
        job_price_per_hour_usd=10.0,
        checkpoint_size_gb=100,
        retention_count=4,
        storage_price_per_gb_month_usd=0.02,
    )
    lost = 60 / 3600 + 3600 / 72000
    assert cost.lost_usd_per_month == pytest.approx(lost * 730.5 * 10)
    assert cost.storage_usd_per_month == pytest.approx(8.0)


@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan])
def test_bad_inputs_are_refused(bad):
    with pytest.raises(ValueError):
        checkpointing.daly_interval_seconds(bad, 100)
    with pytest.raises(ValueError):
        checkpointing.young_interval_seconds(100, bad)
