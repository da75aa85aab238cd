"""apps/procurement/comparison/maths.py by hand: every expected number is worked out in the
test's comments."""

import pytest

from apps.procurement.comparison import maths as comparison
from apps.procurement.comparison.maths import Demand, OptionSpec


def test_capacity_mix_on_a_small_curve_worked_by_hand():
    # d = 0, 1, 2, 4; r = 1, o = 3 → Cost(R) = 4R + 3·Σ max(0, d − R)
    # R=0: 0 + 3·7 = 21; R=1: 4 + 3·(1+3) = 16; R=2: 8 + 3·2 = 14; R=3: 12 + 3 = 15;
    # R=4: 16. Optimum 2 — the (1 − 1/3) quantile of {0, 1, 2, 4}.
    mix = comparison.capacity_mix([0, 1, 2, 4], 1, 3)
    assert mix.cost_by_reserved_gpus == (21, 16, 14, 15, 16)
    assert mix.optimal_reserved_gpus == 2
    assert mix.total_cost == 14
    assert mix.break_even_utilization == pytest.approx(1 / 3)
    assert mix.hours == 4


def test_fractional_demand_and_ties_go_to_the_smaller_baseline():
    # d = 0.5, 1.5; r = 1, o = 2: R=0: 2·2 = 4; R=1: 2 + 2·0.5 = 3; R=2: 4. Optimum 1.
    assert comparison.capacity_mix([0.5, 1.5], 1, 2).cost_by_reserved_gpus == (4, 3, 4)
    # d = 1, 0; r = 1, o = 2: R=0 costs 2, R=1 costs 2: the smaller wins.
    assert comparison.capacity_mix([1, 0], 1, 2).optimal_reserved_gpus == 0


def test_reserved_dearer_than_on_demand_reserves_nothing():
    assert comparison.capacity_mix([5, 5, 5], 4, 3).optimal_reserved_gpus == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([], 1, 2), "at least one hour"),
        (([1, -1], 1, 2), "hourly_demand_gpus[1]"),
        (([1], 1, 0), "on_demand_price_per_gpu_hour must be above 0"),
        (([1], -1, 2), "reserved_price_per_gpu_hour"),
    ],
)
def test_capacity_mix_refuses_bad_input_naming_it(args, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        comparison.capacity_mix(*args)


def test_entered_demand_spreads_the_month_over_a_weighted_day():
    # 730 GPU-hours a month = 24 GPU-hours a day; weights 1 in hours 0–11, 3 in 12–23:
    # Σw = 48, so 0.5 GPUs in the morning and 1.5 in the afternoon.
    curve = comparison.entered_demand_curve(730, [1] * 12 + [3] * 12)
    assert curve[:12] == pytest.approx([0.5] * 12)
    assert curve[12:] == pytest.approx([1.5] * 12)
    assert comparison.entered_demand_curve(730) == pytest.approx([1.0] * 24)
    with pytest.raises(ValueError, match="24 weights"):
        comparison.entered_demand_curve(730, [1, 2])


def test_training_job_is_six_n_d_over_peak_times_mfu():
    # 6 · 8e9 · 1e12 / (1e15 · 0.5) = 9.6e7 s = 26,666.7 GPU-hours.
    assert comparison.training_gpu_hours(8e9, 1e12, 1e15, 0.5) == pytest.approx(96e6 / 3600)
    # 250 GPU-hours on 100 GPUs: 2 full hours, then half of the GPUs' hour, then idle.
    curve = comparison.training_demand_curve(250, 100, 5)
    assert curve == (100, 100, 50, 0, 0)


def _demand():
    # Six hours: 2, 2, 2, 4, 6, 8 reference GPUs (mean 4, peak 8), standing for a
    # 12-hour horizon (scale 2); 1,000,000 output tokens and 2,000 requests in the six.
    return Demand((2, 2, 2, 4, 6, 8), 12, output_tokens=1_000_000, requests=2_000)


def test_on_demand_pays_only_the_gpu_hours_used():
    result = comparison.cost_option(
        _demand(), OptionSpec("Rent", "on_demand", on_demand_price_per_gpu_hour=2.0)
    )
    # 24 GPU-hours in the curve × scale 2 = 48 paid, × $2 = $96.
    assert result.paid_gpu_hours == 48
    assert result.cost.compute == 96
    assert result.total_cost == 96
    assert result.cost_per_effective_gpu_hour == 2  # 96 ÷ 48 reference GPU-hours
    assert result.cost_per_million_tokens == pytest.approx(96 / 2_000_000 * 1e6)
    assert result.cost_per_thousand_requests == pytest.approx(96 / 4_000 * 1e3)
    assert result.paid_utilization == 1
    assert result.break_even_utilization is None


def test_reserved_is_sized_for_the_peak_and_paid_every_hour():
    result = comparison.cost_option(
        _demand(),
        OptionSpec(
            "Reserve",
            "reserved",
            on_demand_price_per_gpu_hour=2.0,
            baseline_compute_per_gpu_hour=1.0,
            storage_per_month=73.0,
            network_per_month=146.0,
        ),
    )
    # 8 GPUs × 12 h × $1 = $96 compute; storage 73 × 12/730 = 1.2; network 2.4.
    assert result.baseline_gpus == 8
    assert result.cost.compute == 96
    assert result.cost.storage == pytest.approx(1.2)
    assert result.cost.network == pytest.approx(2.4)
    assert result.total_cost == pytest.approx(99.6)
    assert result.paid_utilization == pytest.approx(48 / 96)
    assert result.break_even_utilization == 0.5
    assert result.baseline_utilization == pytest.approx(24 / 48)


def test_owned_costs_split_into_compute_power_and_operations():
    spec = OptionSpec(
        "Own",
        "owned",
        baseline_compute_per_gpu_hour=0.5,
        baseline_power_per_gpu_hour=0.25,
        baseline_colocation_per_gpu_hour=0.125,
        operations_per_month=730.0,
    )
    result = comparison.cost_option(_demand(), spec)
    # 8 GPUs × 12 h = 96 GPU-hours: compute 48, power 24, colocation 12; staff 730 × 12/730.
    assert (result.cost.compute, result.cost.power) == (48, 24)
    assert result.cost.operations == pytest.approx(12 + 12)
    assert spec.baseline_price_per_gpu_hour == 0.875


def test_hybrid_takes_the_newsvendor_baseline_and_bursts_above_it():
    spec = OptionSpec(
        "Mix", "hybrid", on_demand_price_per_gpu_hour=2.0, baseline_compute_per_gpu_hour=1.0
    )
    result = comparison.cost_option(_demand(), spec)
    # Curve hours: Cost(R) = 6R + 2·Σ max(0, d − R). R=2: 12 + 2·12 = 36; R=3: 18 + 2·9 = 36;
    # R=4: 24 + 2·6 = 36; R=5: 30 + 2·4 = 38… R=0: 48. Ties → 2. Horizon ×2: 72.
    assert result.optimal_baseline_gpus == 2
    assert result.baseline_gpus == 2
    assert result.cost_by_baseline_gpus[:6] == (96, 84, 72, 72, 72, 76)
    assert result.total_cost == 72
    assert result.burst_gpu_hours == 24  # (2 + 4 + 6) × 2
    assert result.break_even_utilization == 0.5


def test_a_fixed_hybrid_baseline_says_what_the_optimum_would_save():
    spec = OptionSpec(
        "Mix",
        "hybrid",
        on_demand_price_per_gpu_hour=2.0,
        baseline_compute_per_gpu_hour=1.0,
        baseline_gpus=6,
    )
    result = comparison.cost_option(_demand(), spec)
    # R=6: 36 + 2·2 = 40 per curve → 80 over the horizon, 8 more than the optimum.
    assert result.total_cost == 80
    assert any("2 would cost 8 less" in note for note in result.notes)


def test_faster_gpus_need_fewer_of_them():
    # Twice the work per GPU: 1, 1, 1, 2, 3, 4 GPUs; paid 12 GPU-hours × 2 scale × $3.
    result = comparison.cost_option(
        _demand(),
        OptionSpec("Fast", "on_demand", throughput_ratio=2.0, on_demand_price_per_gpu_hour=3.0),
    )
    assert result.gpus_needed_by_hour == (1, 1, 1, 2, 3, 4)
    assert result.total_cost == 72
    assert result.cost_per_effective_gpu_hour == pytest.approx(72 / 48)
    # 1.5× the work per GPU: ⌈2/1.5⌉ = 2, ⌈8/1.5⌉ = 6; 1.5 units of work delivered per GPU.
    assert comparison.gpus_needed_by_hour(_demand(), 1.5) == (2, 2, 2, 3, 4, 6)
    assert comparison.throughput_ratio(800, 0.5, 400, 0.5) == 2


def test_comparison_recommends_the_cheapest_with_reasons():
    specs = [
        OptionSpec("Rent", "on_demand", on_demand_price_per_gpu_hour=2.0),
        OptionSpec(
            "Reserve", "reserved", on_demand_price_per_gpu_hour=2.0, baseline_compute_per_gpu_hour=1
        ),
        OptionSpec(
            "Mix",
            "hybrid",
            on_demand_price_per_gpu_hour=2.0,
            baseline_compute_per_gpu_hour=1.0,
            needs_icp_filing=True,
        ),
    ]
    result = comparison.compare(_demand(), specs, currency="EUR")
    assert result.cheapest.spec.name == "Mix"
    # mean 4 ÷ peak 8 = 50 %: "variable"; Mix 72 vs Rent 96: 25 % less.
    assert result.recommendation == (
        "Variable load (50% of peak on average): Mix costs 72 EUR over 0 months, "
        "25% less than Rent."
    )
    assert any("keep 2 GPUs as the baseline and burst above 2 GPUs" in r for r in result.reasons)
    assert any("breaks even against on-demand at 50%" in r for r in result.reasons)
    assert any("ICP filing" in r for r in result.reasons)


def test_missing_prices_are_named():
    with pytest.raises(ValueError, match="on-demand price"):
        comparison.cost_option(_demand(), OptionSpec("Rent", "on_demand"))
