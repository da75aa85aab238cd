"""Measured goodput against the goodput_measure library's own documentation."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from apps.training import goodput, parsers

DATA = Path(__file__).resolve().parents[1] / "data" / "goodput-measure"
ORIGIN = datetime(2025, 1, 1, tzinfo=UTC)


def _events(name):
    parsed = parsers.parse_jsonl((DATA / name).read_text())
    assert not parsed.errors
    return [
        goodput.Event(row.timestamp, row.event_type, row.step, row.node_rank, row.duration_seconds)
        for row in parsed.rows
    ]


def _at(minutes, event_type, **values):
    return goodput.Event(ORIGIN + timedelta(minutes=minutes), event_type, **values)


def test_the_primers_worked_example_exactly():
    """AI-Hypercomputer/resiliency, examples/goodput_measurement/README.md, "Goodput
    Primer": 200 min total, 50 steps × 2 min/step = 100 min effective, 50 % goodput;
    badput: loading 10, progress lost 40, restart 15, saving 10, slowdown 25 (minutes)."""
    result = goodput.job_goodput(_events("primer_worked_example.jsonl"), reference_step_seconds=120)
    assert result.total_seconds == 200 * 60
    assert (result.min_loaded_step, result.max_saved_step, result.step_difference) == (25, 75, 50)
    assert result.effective_seconds == 100 * 60
    assert result.goodput_pct == 50.0
    assert {name: seconds / 60 for name, seconds in result.badput_seconds.items()} == {
        "checkpoint_loading": 10,
        "progress_lost": 40,
        "restart": 15,
        "checkpoint_saving": 10,
        "slowdown": 25,
    }
    # The summary table's percentages: 5 + 20 + 7.5 + 5 + 12.5 = 50 % badput.
    assert sum(result.badput_seconds.values()) + result.effective_seconds == result.total_seconds
    assert result.flags == []


def test_without_save_durations_saving_is_part_of_the_slowdown():
    events = [
        goodput.Event(e.timestamp, e.event_type, e.step, e.node_rank)
        for e in _events("primer_worked_example.jsonl")
    ]
    result = goodput.job_goodput(events, reference_step_seconds=120)
    assert result.badput_seconds["checkpoint_saving"] == 0
    assert result.badput_seconds["slowdown"] == 35 * 60
    assert result.goodput_pct == 50.0


def test_the_documented_fsdp_log_gives_the_documented_output():
    """The same README, "Calculating Goodput from Event Logs": 27 events (26 lines and the
    calculator's proxy user_scheduled), 2 starts, 20 saves, min loaded step 0, max saved
    10000, goodput 21.72 % at --reference-step-time=0.002569."""
    events = _events("fsdp_example_event_log.jsonl")
    assert len(events) == 26
    assert sum(e.event_type == "checkpoint_saved" for e in events) == 20
    result = goodput.job_goodput(events, reference_step_seconds=0.002569)
    assert result.job_starts == 2
    assert (result.min_loaded_step, result.max_saved_step) == (0, 10000)
    assert round(result.total_seconds / 3600, 2) == 0.03
    assert round(result.effective_seconds / 3600, 2) == 0.01
    assert f"{result.goodput_pct:.2f}%" == "21.72%"


def test_per_node_starts_count_once_and_the_clock_starts_at_the_first():
    events = [
        _at(0, "job_started", node_rank=0),
        _at(1, "job_started", node_rank=1),
        _at(2, "checkpoint_loaded", step=0),
        _at(12, "checkpoint_saved", step=10),
        _at(12, "job_terminated", node_rank=1),
        _at(12, "job_terminated", node_rank=0),
    ]
    result = goodput.job_goodput(events, reference_step_seconds=60)
    assert result.job_starts == 1
    assert result.total_seconds == 12 * 60
    assert result.badput_seconds["checkpoint_loading"] == 60  # from the last start kept
    assert result.goodput_pct == pytest.approx(10 / 12 * 100)


def test_goodput_above_100_is_clamped_and_flagged():
    events = [
        _at(0, "job_started"),
        _at(0, "checkpoint_loaded", step=0),
        _at(10, "checkpoint_saved", step=100),
        _at(10, "job_terminated"),
    ]
    result = goodput.job_goodput(events, reference_step_seconds=60)
    assert result.goodput_pct == 100.0
    assert goodput.GOODPUT_ABOVE_100 in result.flags
    assert result.badput_seconds["slowdown"] == 0


def test_categories_above_the_total_are_flagged_not_hidden():
    events = [
        _at(0, "job_started"),
        _at(30, "checkpoint_loaded", step=0),
        _at(60, "checkpoint_saved", step=20),
        _at(60, "job_terminated"),
    ]
    result = goodput.job_goodput(events, reference_step_seconds=120)  # 40 min effective
    assert goodput.BADPUT_ABOVE_TOTAL in result.flags
    assert result.badput_seconds["slowdown"] == 0


def test_missing_inputs_are_flagged():
    events = [_at(0, "job_started"), _at(10, "job_terminated")]
    result = goodput.job_goodput(events, reference_step_seconds=None)
    assert result.effective_seconds == 0
    assert set(result.flags) == {
        goodput.NO_REFERENCE_STEP,
        goodput.NO_CHECKPOINT_LOADED,
        goodput.NO_CHECKPOINT_SAVED,
    }
    # A run that loaded and saved nothing loses everything since its start.
    assert result.badput_seconds["progress_lost"] == 600


def test_combine_adds_times_and_weighs_goodput_by_time():
    primer = goodput.job_goodput(_events("primer_worked_example.jsonl"), reference_step_seconds=120)
    combined = goodput.combine([primer, primer])
    assert combined.total_seconds == 2 * primer.total_seconds
    assert combined.goodput_pct == 50.0
    assert combined.badput_seconds["restart"] == 2 * 15 * 60


def test_the_librarys_own_multi_node_case():
    """AI-Hypercomputer/resiliency, tests/resiliency/goodput_measure/test_calculator.py,
    ``test_calculate_goodput_with_reference_time``: three nodes start at 1, 2, 3 min and
    terminate at 13, 14, 15 min after a user_scheduled at 0; step 100 loaded, 200 saved;
    8 s a step → 900 s total, 800 s effective, 88.89 %."""
    events = [
        _at(0, "user_scheduled"),
        *(_at(minute, "job_started", node_rank=rank) for rank, minute in enumerate((1, 2, 3))),
        _at(5, "checkpoint_loaded", step=100),
        _at(10, "checkpoint_saved", step=200),
        _at(12, "user_terminated"),
        *(
            _at(minute, "job_terminated", node_rank=rank)
            for rank, minute in enumerate((13, 14, 15))
        ),
    ]
    result = goodput.job_goodput(events, reference_step_seconds=8)
    assert (result.min_loaded_step, result.max_saved_step, result.step_difference) == (
        100,
        200,
        100,
    )
    assert result.total_seconds == 900
    assert result.effective_seconds == 800
    assert result.goodput_pct == pytest.approx(800 / 900 * 100, abs=1e-3)
    assert result.job_starts == 1
    # 8 s a step is longer than the 5 minutes between load and save allow: the loading
    # (2 min) and the progress lost (5 min) cannot both fit in the 100 s left, and the
    # result says so instead of showing a negative slowdown.
    assert goodput.BADPUT_ABOVE_TOTAL in result.flags
    assert result.badput_seconds["slowdown"] == 0


def test_combine_keeps_the_lowest_step_loaded_and_the_highest_saved():
    early = goodput.Goodput(min_loaded_step=0, max_saved_step=400)
    late = goodput.Goodput(min_loaded_step=300, max_saved_step=900)
    unsaved = goodput.Goodput()  # a job that loaded and saved nothing
    combined = goodput.combine([late, unsaved, early])
    assert (combined.min_loaded_step, combined.max_saved_step) == (0, 900)
