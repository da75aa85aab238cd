from datetime import UTC, datetime

import pytest

from apps.training import parsers


def test_jsonl_reads_floats_as_whole_numbers_and_naive_times_as_utc():
    parsed = parsers.parse_jsonl(
        '{"node_rank": 3.0, "event_type": "job_started", "job_name": "j",'
        ' "timestamp": "2025-04-02T06:08:24.318726"}\n\n'
        '{"job_name": "j", "event_type": "checkpoint_loaded", "timestamp":'
        ' "2025-04-02T06:10:12+02:00", "step": 40.0}\n'
    )
    assert not parsed.errors
    first, second = parsed.rows
    assert (first.line_number, first.node_rank, first.step) == (1, 3, None)
    assert first.timestamp == datetime(2025, 4, 2, 6, 8, 24, 318726, tzinfo=UTC)
    assert (second.line_number, second.step) == (3, 40)
    assert second.timestamp == datetime(2025, 4, 2, 4, 10, 12, tzinfo=UTC)


def test_jsonl_errors_name_the_line_and_what_was_expected():
    parsed = parsers.parse_jsonl(
        '{"job_name": "j", "event_type": "job_started", "timestamp": "2025-01-01T00:00:00"}\n'
        "not json\n"
        '{"job_name": "j", "event_type": "checkpoint_exploded", "timestamp": "yesterday",'
        ' "step": 1.5}\n'
        "[1, 2]\n"
    )
    messages = [(error.line_number, str(error.message)) for error in parsed.errors]
    assert messages[0][0] == 2 and "not a JSON object" in messages[0][1]
    assert (
        3,
        "event_type 'checkpoint_exploded' is not one of user_scheduled, job_started, "
        "checkpoint_loaded, checkpoint_saved, user_terminated, job_terminated",
    ) in messages
    assert (3, "timestamp 'yesterday' is neither ISO 8601 nor unix seconds") in messages
    assert (3, "step '1.5' is not a whole number") in messages
    assert messages[-1][0] == 4


def test_an_empty_text_is_refused_whole():
    with pytest.raises(parsers.TrainingFormatError, match="no training events"):
        parsers.parse_jsonl("\n\n")


def test_csv_through_a_column_mapping():
    text = (
        "when,job,what,ckpt_step,save_s\n2025-01-01T00:00:00,j,job_started,,\n"
        "1735690000,j,checkpoint_saved,50,300\n"
    )
    parsed = parsers.parse_csv(
        text,
        columns={
            "timestamp": "when",
            "job_name": "job",
            "event_type": "what",
            "step": "ckpt_step",
            "duration_seconds": "save_s",
        },
    )
    assert not parsed.errors
    assert [(row.line_number, row.step, row.duration_seconds) for row in parsed.rows] == [
        (2, None, None),
        (3, 50, 300.0),
    ]


def test_csv_mapping_problems_say_what_is_known_and_found():
    with pytest.raises(parsers.TrainingFormatError, match="known fields: timestamp, job_name"):
        parsers.parse_csv("a\n", columns={"stamp": "a"})
    with pytest.raises(parsers.TrainingFormatError, match="lacks 'job_name', 'event_type'"):
        parsers.parse_csv("a\n", columns={"timestamp": "a"})
    with pytest.raises(parsers.TrainingFormatError, match="headers found: 'a', 'b'"):
        parsers.parse_csv(
            "a,b\n", columns={"timestamp": "a", "job_name": "b", "event_type": "kind"}
        )


def test_csv_cell_count_is_checked_per_line():
    parsed = parsers.parse_csv(
        "t,j,e\n2025-01-01T00:00:00,j\n",
        columns={"timestamp": "t", "job_name": "j", "event_type": "e"},
    )
    assert [(e.line_number, str(e.message)) for e in parsed.errors] == [
        (2, "2 cells where the header has 3")
    ]
