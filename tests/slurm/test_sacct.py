"""The sacct parser, rule by rule, on written lines and on real ones (tests/data/slurm/).
No database: the parser is framework-free. Every GPU-hour figure is computed by hand here
from the line's own numbers."""

from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from apps.slurm.sacct import expand_node_list, parse_elapsed, parse_sacct
from apps.slurm.services import gpu_hours

DATA = Path(__file__).resolve().parent.parent / "data" / "slurm"
HEADER = (
    "JobID|JobIDRaw|User|Account|Partition|QOS|JobName|State|Start|End|Elapsed|NNodes|"
    "NodeList|AllocTRES"
)


def _text(*lines, header=HEADER):
    return "\n".join([header, *lines]) + "\n"


def _row(
    job_id="123",
    *,
    state="COMPLETED",
    start="2026-11-02T08:00:00",
    end="2026-11-02T10:00:00",
    elapsed="02:00:00",
    nodes="1",
    node_list="gpu01",
    tres="billing=8,cpu=8,gres/gpu=4,node=1",
):
    return (
        f"{job_id}|{job_id}|alice|physics|gpu|normal|train|{state}|{start}|{end}|{elapsed}|"
        f"{nodes}|{node_list}|{tres}"
    )


def test_gpus_come_from_the_job_rows_alloc_tres():
    (job,) = parse_sacct(_text(_row())).rows
    assert (job.job_id, job.gpus, job.gpu_type, job.billing) == ("123", 4, "", "8")
    assert job.elapsed_seconds == Decimal(2 * 3600)
    assert job.start == datetime(2026, 11, 2, 8) and job.end == datetime(2026, 11, 2, 10)
    # 4 GPUs × 7,200 s ÷ 3,600 = 8 GPU-hours.
    assert gpu_hours(job.gpus, job.elapsed_seconds) == Decimal("8.000000")


def test_a_typed_gres_beside_the_untyped_one_is_the_same_gpus():
    tres = "billing=64,cpu=64,gres/gpu:a100=8,gres/gpu=8,mem=512G,node=2"
    (job,) = parse_sacct(_text(_row(tres=tres, nodes="2", node_list="gpu[01-02]"))).rows
    assert (job.gpus, job.gpu_type) == (8, "a100")  # never 16
    # 8 GPUs × 2 h.
    assert gpu_hours(job.gpus, job.elapsed_seconds) == Decimal("16.000000")


def test_typed_entries_alone_are_summed_and_more_typed_than_untyped_is_refused():
    (job,) = parse_sacct(_text(_row(tres="gres/gpu:a100=2,gres/gpu:a40=1"))).rows
    assert (job.gpus, job.gpu_type) == (3, "a100+a40")
    parsed = parse_sacct(_text(_row(tres="gres/gpu=2,gres/gpu:a100=4")))
    assert parsed.rows == []
    assert str(parsed.errors[0].message) == (
        "line 2: AllocTRES names 4 typed GPUs but gres/gpu=2 in all"
    )


def test_steps_are_read_and_never_jobs():
    text = _text(
        _row("123"),
        _row("123.batch", tres="cpu=8,gres/gpu=4,node=1"),
        _row("123.extern", tres="billing=8,cpu=8,gres/gpu=4,node=1"),
        _row("123.0", tres="cpu=8,gres/gpu=4,node=1"),
    )
    parsed = parse_sacct(text)
    assert [row.job_id for row in parsed.jobs] == ["123"]
    assert [row.step for row in parsed.steps] == ["batch", "extern", "0"]
    # Only the job row's 4 GPUs × 2 h count: the .extern row repeats them.
    assert sum(gpu_hours(job.gpus, job.elapsed_seconds) for job in parsed.jobs) == Decimal(8)


def test_array_tasks_and_heterogeneous_components_are_jobs_of_their_own():
    text = _text(_row("500_1"), _row("500_2"), _row("500_2.batch"), _row("600+0"), _row("600+1"))
    parsed = parse_sacct(text)
    assert [row.job_id for row in parsed.jobs] == ["500_1", "500_2", "600+0", "600+1"]
    assert [row.job_id for row in parsed.steps] == ["500_2.batch"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1-02:03:04", Decimal(86400 + 2 * 3600 + 3 * 60 + 4)),  # 93,784
        ("12:00:13", Decimal(12 * 3600 + 13)),
        ("00:43.900", Decimal("43.900")),
        ("17:02.5", Decimal(17 * 60 + 2) + Decimal("0.5")),
        ("00:00:00", Decimal(0)),
    ],
)
def test_elapsed_formats(text, seconds):
    assert parse_elapsed(text) == seconds


@pytest.mark.parametrize("text", ["1:2", "1-25:00:00", "10:61:00", "abc", "", "1:2:3:4"])
def test_elapsed_that_is_none_of_the_formats_refuses_its_line(text):
    parsed = parse_sacct(_text(_row(), _row("124", elapsed=text)))
    assert [row.job_id for row in parsed.rows] == ["123"]
    assert [str(error.message) for error in parsed.errors] == [
        f"line 3: Elapsed '{text}' is not D-HH:MM:SS, HH:MM:SS or MM:SS.mmm"
    ]


def test_elapsed_raw_is_read_before_elapsed():
    header = HEADER + "|ElapsedRaw"
    (job,) = parse_sacct(_text(_row() + "|7201", header=header)).rows
    assert job.elapsed_seconds == Decimal(7201)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("gpu[01-04,07]", ["gpu01", "gpu02", "gpu03", "gpu04", "gpu07"]),
        ("a[1-2],b3", ["a1", "a2", "b3"]),
        ("node[098-101]", ["node098", "node099", "node100", "node101"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("cpn-k07-05-[01-02]", ["cpn-k07-05-01", "cpn-k07-05-02"]),
        ("None assigned", []),
        ("", []),
    ],
)
def test_compressed_node_lists_are_expanded_keeping_their_padding(text, names):
    assert expand_node_list(text) == names


def test_a_broken_node_list_refuses_its_line():
    parsed = parse_sacct(_text(_row(node_list="gpu[01-")))
    assert [str(error.message) for error in parsed.errors] == [
        "line 2: NodeList 'gpu[01-' is not a Slurm host list"
    ]


def test_cancelled_by_a_user_is_cancelled_and_the_text_is_kept():
    (job,) = parse_sacct(_text(_row(state="CANCELLED by 1000"))).rows
    assert (job.state, job.state_raw) == ("CANCELLED", "CANCELLED by 1000")


def test_end_unknown_is_a_running_job_and_start_unknown_one_that_never_started():
    text = _text(
        _row("1", state="RUNNING", end="Unknown"),
        _row("2", state="PENDING", start="Unknown", end="Unknown", elapsed="00:00:00", tres=""),
    )
    running, pending = parse_sacct(text).rows
    assert running.end is None and running.start == datetime(2026, 11, 2, 8)
    assert pending.start is None and pending.gpus == 0


def test_columns_come_in_any_order_and_any_case():
    header = "alloctres|ELAPSED|jobid|state|end|start|user"
    text = _text(
        "gres/gpu=2|00:30:00|77|COMPLETED|2026-11-02T08:30:00|2026-11-02T08:00:00|bob",
        header=header,
    )
    (job,) = parse_sacct(text).rows
    assert (job.job_id, job.user, job.gpus, job.elapsed_seconds) == ("77", "bob", 2, Decimal(1800))
    # 2 GPUs × 1,800 s ÷ 3,600 = 1 GPU-hour.
    assert gpu_hours(job.gpus, job.elapsed_seconds) == Decimal(1)


def test_a_line_with_the_wrong_number_of_fields_is_refused_with_its_number():
    parsed = parse_sacct(_text(_row(), "124|124|bob"))
    assert [str(error.message) for error in parsed.errors] == [
        "line 3: 3 fields, where the header has 14"
    ]


def test_a_text_without_sacct_header_is_refused_whole():
    parsed = parse_sacct(_row() + "\n")
    assert parsed.rows == []
    assert str(parsed.errors[0].message).startswith("line 1: the first line is not sacct's header")
    parsed = parse_sacct("JobID|State\n1|COMPLETED\n")
    assert str(parsed.errors[0].message) == "line 1: the header lacks AllocTRES, Elapsed"


def test_bad_timestamps_states_and_counts_are_refused_not_guessed():
    parsed = parse_sacct(
        _text(
            _row("1", start="02/11/2026"),
            _row("2", state="weird"),
            _row("3", tres="gres/gpu=four"),
            _row("4", nodes="two"),
            _row("5.x.y"),
        )
    )
    assert [str(error.message) for error in parsed.errors] == [
        "line 2: Start '02/11/2026' is not YYYY-MM-DDTHH:MM:SS or Unknown",
        "line 3: State 'weird' is not a Slurm job state",
        "line 4: AllocTRES gres/gpu=four is not a whole number of GPUs",
        "line 5: NNodes 'two' is not a whole number",
        "line 6: JobID '5.x.y' is not a job id (123, 123_4, 123+0, 123.batch)",
    ]


def test_real_array_task_on_an_a100_with_its_steps():
    """RobinU434/LazySlurm's verbatim capture (tests/data/slurm/SOURCES.md)."""
    parsed = parse_sacct((DATA / "lazyslurm_array_task_a100.txt").read_text())
    assert parsed.errors == []
    (job,) = parsed.jobs
    assert (job.job_id, job.gpus, job.gpu_type, job.billing) == ("2736118_0", 1, "a100", "11")
    assert [row.step for row in parsed.steps] == ["batch", "extern", "0", "1"]
    # Elapsed 00:17:02 is 17 × 60 + 2 = 1,022 s; 1 GPU × 1,022 ÷ 3,600 = 0.28388…
    assert job.elapsed_seconds == Decimal(1022)
    assert gpu_hours(job.gpus, job.elapsed_seconds) == Decimal("0.283889")
    # The .extern step's gres/gpu=1 and the others' are never added.
    assert sum(gpu_hours(row.gpus, row.elapsed_seconds) for row in parsed.jobs) == Decimal(
        "0.283889"
    )
