"""``sacct --parsable2`` text in, job rows out: framework-free (no Django, no database).

The text starts with sacct's header line (``JobID|User|…``); the columns come in any
order, ``|`` separated, names compared without regard to case. A line that cannot be read
is refused with its number and why; nothing is guessed, and the other lines are still
read. The rules (docs/slurm.md):

- A job's GPUs are its job row's ``AllocTRES`` ``gres/gpu=N``. A typed ``gres/gpu:a100=N``
  beside it counts the same GPUs again under their type: it names ``gpu_type`` and is
  never added to the count (only typed entries, without the untyped one, are summed).
- Steps (``123.batch``, ``123.extern``, ``123.0``) add no GPU-hours: an ``.extern`` row
  repeats the job's whole allocation. They are read (a broken one is refused) and counted.
- Array tasks (``123_4``) and heterogeneous components (``123+0``) are jobs of their own.
- ``Elapsed`` is ``D-HH:MM:SS``, ``HH:MM:SS`` or ``MM:SS.mmm``; ``ElapsedRaw`` (whole
  seconds) is read when present, ``Elapsed`` otherwise.
- ``State`` such as ``CANCELLED by 1000`` is the state ``CANCELLED`` (the text is kept).
- ``Start``/``End`` are ISO local times without an offset (the cluster's zone); ``End``
  ``Unknown`` is a running job, ``Start`` ``Unknown``/``None`` a job that never started.
- Compressed node lists (``gpu[01-04,07]``, ``a[1-2],b3``) are expanded, zero padding kept.
"""

import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from apps.core.sentences import Sentence, gettext_noop

# Column names as sacct prints them, by their lower-case spelling.
COLUMNS = {
    name.lower(): name
    for name in (
        "JobID",
        "JobIDRaw",
        "User",
        "Account",
        "Partition",
        "QOS",
        "JobName",
        "State",
        "Start",
        "End",
        "Elapsed",
        "ElapsedRaw",
        "NNodes",
        "NodeList",
        "AllocTRES",
        "ReqTRES",
        "TRESUsageInTot",
        "AdminComment",
    )
}
# Without State, Start or End a row is still a job with its GPUs and Elapsed (a report of
# finished jobs often leaves them out); without End it is never read as running.
REQUIRED_COLUMNS = ("JobID", "AllocTRES")
# Start or End of a job that has not started or not ended.
NOT_YET = frozenset({"unknown", "none", ""})
NO_NODES = frozenset({"", "none assigned", "(null)", "none"})

_JOB_ID = re.compile(r"^(?P<job>\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?)(?:\.(?P<step>[^.|]+))?$")
_ELAPSED = (
    re.compile(r"^(?P<days>\d+)-(?P<hours>\d{1,2}):(?P<minutes>\d{2}):(?P<seconds>\d{2})$"),
    re.compile(r"^(?P<hours>\d+):(?P<minutes>\d{2}):(?P<seconds>\d{2})$"),
    re.compile(r"^(?P<minutes>\d{1,2}):(?P<seconds>\d{2})\.(?P<millis>\d{1,3})$"),
)
_STATE = re.compile(r"^(?P<state>[A-Z][A-Z_]*)(?:\+)?(?: by \d+)?$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_TRES_GPU = re.compile(r"^gres/gpu(?::(?P<type>[^=]+))?$")


class SacctError(ValueError):
    """Why a line cannot be read; ``args[0]`` is a ``Sentence``."""


@dataclass
class SacctRow:
    line: int
    job_id: str
    job_id_raw: str
    step: str  # "" on a job row; "batch", "extern", "0", … on a step row
    user: str
    account: str
    partition: str
    qos: str
    job_name: str
    state: str
    state_raw: str
    start: datetime | None  # naive: the cluster's local time
    end: datetime | None
    elapsed_seconds: Decimal
    nodes: int
    node_list: str
    node_names: list[str]
    alloc_tres: str
    req_tres: str
    billing: str
    gpus: int
    gpu_type: str
    tres_usage_in_tot: str
    admin_comment: str
    fields: dict = field(default_factory=dict)

    @property
    def is_step(self) -> bool:
        return bool(self.step)


@dataclass
class LineError:
    line: int
    message: Sentence


@dataclass
class SacctText:
    rows: list[SacctRow]
    errors: list[LineError]

    @property
    def jobs(self) -> list[SacctRow]:
        return [row for row in self.rows if not row.is_step]

    @property
    def steps(self) -> list[SacctRow]:
        return [row for row in self.rows if row.is_step]


def _line_error(line: int, reason: Sentence) -> LineError:
    return LineError(
        line, Sentence(gettext_noop("line %(line)s: %(reason)s"), line=line, reason=reason)
    )


def parse_sacct(text: str) -> SacctText:
    """Every line of ``text`` read: its rows, and the lines refused with why. A header
    that lacks a required column refuses the whole text (on the header's line)."""
    lines = text.splitlines()
    header_at = next((index for index, line in enumerate(lines) if line.strip()), None)
    if header_at is None:
        return SacctText([], [_line_error(1, Sentence(gettext_noop("the text is empty")))])
    header_line = lines[header_at].strip()
    names = [name.strip() for name in header_line.split("|")]
    problem = _header_problem(names)
    if problem is not None:
        return SacctText([], [_line_error(header_at + 1, problem)])
    columns = [COLUMNS.get(name.lower(), name) for name in names]
    rows, errors = [], []
    for index in range(header_at + 1, len(lines)):
        line = lines[index].rstrip("\r\n")
        number = index + 1
        # Blank lines, and the header repeated where outputs were joined, carry nothing.
        if not line.strip() or line.strip() == header_line:
            continue
        values = line.split("|")
        if len(values) != len(columns):
            errors.append(
                _line_error(
                    number,
                    Sentence(
                        gettext_noop("%(count)s fields, where the header has %(columns)s"),
                        count=len(values),
                        columns=len(columns),
                    ),
                )
            )
            continue
        try:
            rows.append(parse_row(number, dict(zip(columns, values, strict=True))))
        except SacctError as error:
            errors.append(_line_error(number, error.args[0]))
    return SacctText(rows, errors)


def _header_problem(names: list[str]) -> Sentence | None:
    lowered = [name.lower() for name in names]
    if "jobid" not in lowered:
        return Sentence(
            gettext_noop(
                "the first line is not sacct's header (JobID|…): run sacct with --parsable2 "
                "and without --noheader"
            )
        )
    seen = set()
    for name in lowered:
        if name in seen:
            return Sentence(gettext_noop("the header names %(column)s twice"), column=name)
        seen.add(name)
    missing = [name for name in REQUIRED_COLUMNS if name.lower() not in seen]
    if "elapsed" not in seen and "elapsedraw" not in seen:
        missing.append("Elapsed")
    if missing:
        return Sentence(gettext_noop("the header lacks %(columns)s"), columns=", ".join(missing))
    return None


def parse_row(line: int, fields: dict[str, str]) -> SacctRow:
    """One line's columns (by their sacct names) as a row; ``SacctError`` says why not."""

    def value(name: str) -> str:
        return fields.get(name, "").strip()

    match = _JOB_ID.match(value("JobID"))
    if not match:
        raise SacctError(
            Sentence(
                gettext_noop("JobID '%(value)s' is not a job id (123, 123_4, 123+0, 123.batch)"),
                value=value("JobID"),
            )
        )
    start = parse_timestamp("Start", value("Start"))
    end = parse_timestamp("End", value("End"))
    state, state_raw = parse_state(value("State")) if value("State") else ("", "")
    if "ElapsedRaw" in fields and value("ElapsedRaw") != "":
        raw = value("ElapsedRaw")
        if not raw.isdigit():
            raise SacctError(
                Sentence(
                    gettext_noop("ElapsedRaw '%(value)s' is not a whole number of seconds"),
                    value=raw,
                )
            )
        elapsed = Decimal(raw)
    else:
        elapsed = parse_elapsed(value("Elapsed"))
    nodes_text = value("NNodes")
    if nodes_text and not nodes_text.isdigit():
        raise SacctError(
            Sentence(gettext_noop("NNodes '%(value)s' is not a whole number"), value=nodes_text)
        )
    node_list = value("NodeList")
    alloc_tres = value("AllocTRES")
    tres = parse_tres("AllocTRES", alloc_tres)
    gpus, gpu_type = gpus_of(tres)
    return SacctRow(
        line=line,
        job_id=match["job"] + (f".{match['step']}" if match["step"] else ""),
        job_id_raw=value("JobIDRaw"),
        step=match["step"] or "",
        user=value("User"),
        account=value("Account"),
        partition=value("Partition"),
        qos=value("QOS"),
        job_name=fields.get("JobName", ""),
        state=state,
        state_raw=state_raw,
        start=start,
        end=end,
        elapsed_seconds=elapsed,
        nodes=int(nodes_text) if nodes_text else 0,
        node_list=node_list,
        node_names=expand_node_list(node_list),
        alloc_tres=alloc_tres,
        req_tres=value("ReqTRES"),
        billing=tres.get("billing", ""),
        gpus=gpus,
        gpu_type=gpu_type,
        tres_usage_in_tot=value("TRESUsageInTot"),
        admin_comment=value("AdminComment"),
        fields={name: fields[name] for name in sorted(fields)},
    )


def parse_elapsed(text: str) -> Decimal:
    """Seconds of ``D-HH:MM:SS``, ``HH:MM:SS`` or ``MM:SS.mmm``."""
    for pattern in _ELAPSED:
        match = pattern.match(text)
        if not match:
            continue
        parts = match.groupdict()
        minutes, seconds = int(parts["minutes"]), int(parts["seconds"])
        hours = int(parts.get("hours") or 0)
        if minutes > 59 or seconds > 59 or ("days" in parts and hours > 23):
            break
        total = Decimal((int(parts.get("days") or 0) * 24 + hours) * 3600 + minutes * 60 + seconds)
        if parts.get("millis"):
            total += Decimal(parts["millis"].ljust(3, "0")) / 1000
        return total
    raise SacctError(
        Sentence(
            gettext_noop("Elapsed '%(value)s' is not D-HH:MM:SS, HH:MM:SS or MM:SS.mmm"),
            value=text,
        )
    )


def parse_timestamp(column: str, text: str) -> datetime | None:
    """A naive local time, or None for ``Unknown``/``None``/empty."""
    if text.lower() in NOT_YET:
        return None
    if _TIMESTAMP.match(text):
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            pass
    raise SacctError(
        Sentence(
            gettext_noop("%(column)s '%(value)s' is not YYYY-MM-DDTHH:MM:SS or Unknown"),
            column=column,
            value=text,
        )
    )


def parse_state(text: str) -> tuple[str, str]:
    """(state, as printed): ``CANCELLED by 1000`` is ``CANCELLED``."""
    match = _STATE.match(text)
    if not match:
        raise SacctError(
            Sentence(gettext_noop("State '%(value)s' is not a Slurm job state"), value=text)
        )
    return match["state"], text


def parse_tres(column: str, text: str) -> dict[str, str]:
    """``billing=16,cpu=16,gres/gpu=4`` as a dict; empty for an empty column."""
    tres = {}
    for item in filter(None, text.split(",")):
        name, equals, amount = item.partition("=")
        if not equals or not name or not amount:
            raise SacctError(
                Sentence(
                    gettext_noop("%(column)s item '%(item)s' is not name=value"),
                    column=column,
                    item=item,
                )
            )
        tres[name] = amount
    return tres


def gpus_of(tres: dict[str, str]) -> tuple[int, str]:
    """(GPUs, their type) of a TRES dict. ``gres/gpu=N`` is the count; typed entries name
    the type (several types: joined with ``+``) and are summed only without it."""
    untyped, typed = None, {}
    for name, amount in tres.items():
        match = _TRES_GPU.match(name)
        if not match:
            continue
        if not amount.isdigit():
            raise SacctError(
                Sentence(
                    gettext_noop("AllocTRES %(name)s=%(value)s is not a whole number of GPUs"),
                    name=name,
                    value=amount,
                )
            )
        if match["type"] is None:
            untyped = int(amount)
        else:
            typed[match["type"]] = int(amount)
    typed_total = sum(typed.values())
    gpu_type = "+".join(sorted(name for name, count in typed.items() if count))
    if untyped is None:
        return typed_total, gpu_type
    if typed_total > untyped:
        raise SacctError(
            Sentence(
                gettext_noop(
                    "AllocTRES names %(typed)s typed GPUs but gres/gpu=%(untyped)s in all"
                ),
                typed=typed_total,
                untyped=untyped,
            )
        )
    return untyped, gpu_type if untyped else ""


def expand_node_list(text: str) -> list[str]:
    """``gpu[01-04,07]`` → gpu01, gpu02, gpu03, gpu04, gpu07; ``a[1-2],b3`` → a1, a2, b3.
    Several bracketed parts in one name multiply (``r[1-2]n[1-2]``)."""
    if text.strip().lower() in NO_NODES:
        return []
    names = []
    for item in _split_top_level(text):
        names.extend(_expand_item(text, item))
    return names


def _node_list_error(text: str) -> SacctError:
    return SacctError(
        Sentence(gettext_noop("NodeList '%(value)s' is not a Slurm host list"), value=text)
    )


def _split_top_level(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for character in text:
        if character == "[":
            depth += 1
            if depth > 1:
                raise _node_list_error(text)
        elif character == "]":
            depth -= 1
            if depth < 0:
                raise _node_list_error(text)
        if character == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += character
    if depth:
        raise _node_list_error(text)
    items.append(current)
    if any(not item for item in items):
        raise _node_list_error(text)
    return items


def _expand_item(text: str, item: str) -> list[str]:
    names = [""]
    for literal, ranges in re.findall(r"([^\[\]]*)(?:\[([^\]]*)\])?", item):
        choices = _expand_ranges(text, ranges) if ranges else [""]
        names = [name + literal + choice for name in names for choice in choices]
    return names


def _expand_ranges(text: str, ranges: str) -> list[str]:
    expanded = []
    for part in ranges.split(","):
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise _node_list_error(text)
        if not dash:
            expanded.append(first)
            continue
        if int(last) < int(first):
            raise _node_list_error(text)
        width = len(first)
        expanded.extend(str(number).zfill(width) for number in range(int(first), int(last) + 1))
    return expanded
