"""How each figure of the cost report was computed, with its actual numbers
(framework-free).

A report row (``rows.CostRow``) is a sum of *parts*: the pools it holds, the share of a
shared pool a workload's labelled samples carry, and the requests and interruptions of
its workloads. The row records its parts as it adds them up (``CostRow.parts``); this
module turns them back into steps a reader can check with a calculator:

    cost = 8 GPUs × 672 h × $2.49/GPU-h = $13,386.24; of which unmeasured 672 h
    idle = $1,100.00 measured cost × (1 − 212.8 busy ÷ 440 measured GPU-h) = $568.00

The formulas are the cost model's (apps/reports/cost/costmodel.py, FORMULAS.md "Cost of owned
GPUs per hour"): a pool's measured cost is fixed price × measured capacity + price per
kWh × (measured energy + TDP × busy GPU-hours of the hours without it); its unmeasured
cost is unmeasured hours × GPUs × (fixed price + price per kWh × TDP); idle = measured
cost × (1 − busy ÷ measured capacity); utilisation = 100 × busy ÷ measured capacity. A
row of several parts shows each part's line, then their sum.

The last step of every breakdown carries the row's own figure, the very number the table
cell shows; the steps before it carry each part's contribution computed from its inputs,
which add up to it (tests/reports/test_explain.py checks both for every figure).
"""

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from apps.core import money
from apps.core.sentences import gettext, gettext_noop
from apps.reports.cost.formatting import (
    count,
    format_value,
    hours_text,
    kilowatts,
    price,
    quantity,
    unit_word,
    usd,
)

TRAINING = "training"
INFERENCE = "inference"


@dataclass(frozen=True)
class Step:
    """One line of a breakdown: ``label = expression = value unit``; ``note`` qualifies
    it ("of which unmeasured 5 h")."""

    label: str
    expression: str
    value: float | int | None
    unit: str
    note: str = ""
    # "line": one part's contribution or an input; "sum": the lines above added up.
    kind: str = "line"

    @property
    def value_text(self) -> str:
        return format_value(self.value, self.unit)

    def as_dict(self) -> dict:
        return {
            "label": self.label,
            "expression": self.expression,
            "value": self.value,
            "unit": self.unit,
            "note": self.note,
            "kind": self.kind,
        }


# --- parts of a row ----------------------------------------------------------------------


@dataclass(frozen=True)
class PoolPart:
    """All of one pool's figures (``rows.PoolFigures``) in a row. ``counts_as`` is the
    purpose whose unit costs count the pool: its own, or its only workload's kind."""

    figures: Any
    counts_as: str
    share: float = 1.0


@dataclass(frozen=True)
class AttributedPart:
    """The GPU-hours a workload's labelled samples carry in a shared pool, at the pool's
    measured cost per GPU-hour; ``sign`` −1 where they leave the pool's unattributed rest.
    ``counts_as``: the workload's kind on its own row, the pool's purpose on the rest."""

    figures: Any
    workload_label: str
    allocated_gpu_hours: float
    busy_gpu_hours: float
    cost_usd: Decimal
    idle_cost_usd: Decimal
    counts_as: str
    sign: int = 1


@dataclass(frozen=True)
class DeclaredPart:
    """A running workload's declared share of its pool, less the labelled GPU-hours
    (apps/reports/cost/split.py): ``values`` = GPUs ÷ pool GPUs × ``weighted_rest``, the
    pool's figures over the hours it ran (each hour × the fraction of it the workload ran
    × the scale-down, if any). ``rule`` is the sentence that names the rule."""

    pool_name: str
    workload_label: str
    rule: str
    gpus: int
    pool_gpus: int
    weighted_rest: dict
    values: dict
    counts_as: str


@dataclass(frozen=True)
class SlurmPart:
    """The GPU-hours Slurm jobs held in a shared pool and the pool's figures they carry
    (apps/reports/cost/split.py, rule 1b): a workload's, or the unmapped jobs'."""

    pool_name: str
    label: str
    gpu_hours: float
    values: dict
    counts_as: str


@dataclass(frozen=True)
class UnallocatedPart:
    """A pool's figures that no running workload holds (apps/reports/cost/split.py)."""

    pool_name: str
    values: dict
    counts_as: str


@dataclass(frozen=True)
class RequestsPart:
    """Requests and tokens a pool's workloads, or one workload, logged in the range."""

    label: str
    requests: int
    tokens: int


@dataclass(frozen=True)
class LostPart:
    """GPU-hours a workload of a shared pool lost to its recorded interruptions, at the
    pool's price of an hour without telemetry; ``sign`` −1 where they leave the pool's
    unattributed rest (the pool counts its workloads' lost hours there)."""

    label: str
    lost_gpu_hours: float
    usd_per_gpu_hour: Decimal = Decimal(0)
    sign: int = 1


@dataclass(frozen=True)
class EffectivePart:
    """A training workload's effective GPU-hours (``workloads.EffectiveHours``): measured
    over the hours its event log covers, estimated over the rest of the range."""

    label: str
    effective: Any


@dataclass(frozen=True)
class StoredPart:
    """Figures read back rather than computed: a closed month's row as it was frozen, or
    an adjustment (live − frozen). ``expression`` says where they come from; ``values``
    maps a figure's name to its value."""

    label: str
    expression: str
    values: Any


# Translated as the text is built, in the reader's language (apps/core/sentences.py).
_ = gettext


# --- what a part adds to a figure --------------------------------------------------------


FIGURES = {
    # name: (label, unit)
    "capacity_gpu_hours": (gettext_noop("Capacity"), "GPU-h"),
    "measured_capacity_gpu_hours": (gettext_noop("Measured capacity"), "GPU-h"),
    "unmeasured_gpu_hours": (gettext_noop("Unmeasured"), "GPU-h"),
    "busy_gpu_hours": (gettext_noop("Busy"), "GPU-h"),
    "utilization_pct": (gettext_noop("Utilisation"), "%"),
    "cost_usd": (gettext_noop("Cost"), "USD"),
    "measured_cost_usd": (gettext_noop("Measured cost"), "USD"),
    "unmeasured_cost_usd": (gettext_noop("Unmeasured cost"), "USD"),
    "idle_cost_usd": (gettext_noop("Idle cost"), "USD"),
    "cost_per_busy_gpu_hour_usd": (gettext_noop("Cost per busy GPU-hour"), "USD/GPU-h"),
    "requests": (gettext_noop("Requests"), "requests"),
    "tokens": (gettext_noop("Tokens"), "tokens"),
    "cost_per_1k_requests_usd": (gettext_noop("Cost per 1k requests"), "USD/1k requests"),
    "cost_per_1m_tokens_usd": (gettext_noop("Cost per 1M tokens"), "USD/1M tokens"),
    "lost_gpu_hours": (gettext_noop("Lost to interruptions"), "GPU-h"),
    "effective_training_gpu_hours": (gettext_noop("Effective training"), "GPU-h"),
    "cost_per_effective_training_gpu_hour_usd": (
        gettext_noop("Cost per effective training GPU-hour"),
        "USD/GPU-h",
    ),
    "interruption_cost_usd": (gettext_noop("Interruption cost"), "USD"),
    "training_busy_gpu_hours": (gettext_noop("Busy training"), "GPU-h"),
    "training_cost_usd": (gettext_noop("Training cost"), "USD"),
    "inference_cost_usd": (gettext_noop("Inference cost"), "USD"),
}
# The figures the report shows (CostRow.as_dict), in its column order.
REPORTED = (
    "capacity_gpu_hours",
    "measured_capacity_gpu_hours",
    "unmeasured_gpu_hours",
    "busy_gpu_hours",
    "utilization_pct",
    "cost_usd",
    "unmeasured_cost_usd",
    "idle_cost_usd",
    "cost_per_busy_gpu_hour_usd",
    "requests",
    "cost_per_1k_requests_usd",
    "tokens",
    "cost_per_1m_tokens_usd",
    "lost_gpu_hours",
    "effective_training_gpu_hours",
    "cost_per_effective_training_gpu_hour_usd",
    "interruption_cost_usd",
)


def _pool_prices(figures) -> tuple[float, float, float]:
    """(fixed USD per GPU-hour, USD per GPU kWh, TDP in kW) in force over the range."""
    fixed, per_kwh = figures.price_split
    return fixed, per_kwh, figures.pool.gpu_model.tdp_watts / 1000


def _prices_changed_text() -> str:
    return _(
        "each hour at the prices in force in it (they changed in the range: the pool's "
        "price history lists them)"
    )


def _unmeasured_price_text(figures) -> str:
    if figures.prices_changed:
        return _("%(price)s/GPU-h on average (%(why)s)") % {
            "price": price(figures.unmeasured_usd_per_gpu_hour),
            "why": _prices_changed_text(),
        }
    fixed, per_kwh, tdp_kw = _pool_prices(figures)
    if not per_kwh:
        return f"{price(fixed)}/GPU-h"
    return _("%(price)s/GPU-h (fixed %(fixed)s + %(per_kwh)s/kWh × %(tdp)s kW TDP)") % {
        "price": price(figures.unmeasured_usd_per_gpu_hour),
        "fixed": price(fixed),
        "per_kwh": price(per_kwh),
        "tdp": kilowatts(tdp_kw),
    }


def _measured_cost_text(figures) -> str:
    fixed, per_kwh, tdp_kw = _pool_prices(figures)
    usage = figures.usage
    if figures.prices_changed:
        return _("%(gpu_hours)s measured GPU-h, %(why)s") % {
            "gpu_hours": quantity(usage.measured_capacity_gpu_hours),
            "why": _prices_changed_text(),
        }
    text = _("%(price)s/GPU-h × %(gpu_hours)s measured GPU-h") % {
        "price": price(fixed),
        "gpu_hours": quantity(usage.measured_capacity_gpu_hours),
    }
    # The power terms that are there: measured energy, and TDP × busy where none was.
    power = []
    if usage.energy_kwh:
        power.append(_("%(kwh)s kWh measured") % {"kwh": quantity(usage.energy_kwh)})
    if usage.busy_gpu_hours_without_energy:
        power.append(
            _("%(tdp)s kW TDP × %(busy)s busy GPU-h without energy")
            % {"tdp": kilowatts(tdp_kw), "busy": quantity(usage.busy_gpu_hours_without_energy)}
        )
    if per_kwh and power:
        terms = power[0] if len(power) == 1 else f"({' + '.join(power)})"
        text += f" + {price(per_kwh)}/kWh × {terms}"
    return text


def _unmeasured_cost_text(figures) -> str:
    return _("%(hours)s unmeasured h × %(gpus)s GPUs × %(price)s") % {
        "hours": hours_text(figures.unmeasured_hours),
        "gpus": figures.pool.gpu_count,
        "price": _unmeasured_price_text(figures),
    }


def _is_flat_rate(figures) -> bool:
    """A pool with no power term whose measured hours all report its full capacity: its
    cost is simply GPUs × paid hours × price."""
    fixed, per_kwh, _tdp_kw = _pool_prices(figures)
    usage = figures.usage
    full = figures.pool.gpu_count * usage.measured_hours
    return (
        not figures.prices_changed
        and not per_kwh
        and abs(usage.measured_capacity_gpu_hours - full) < 1e-9
    )


def _times_share(text: str, share: float) -> str:
    return (
        text
        if share == 1
        else _("(%(text)s) × %(share)s share") % {"text": text, "share": f"{share:.4g}"}
    )


def _pool_line(part: PoolPart, figure: str):
    """(expression, value, note) of what ``part`` adds to ``figure``, or None."""
    figures, share = part.figures, part.share
    if figure in ("training_busy_gpu_hours", "training_cost_usd") and part.counts_as != TRAINING:
        return None
    if figure == "inference_cost_usd" and part.counts_as != INFERENCE:
        return None
    found = _pool_hours_line(figures, figure)
    if found is not None:
        expression, gpu_hours = found
        return _times_share(expression, share), gpu_hours * share, ""
    found = _pool_money_line(figures, figure)
    if found is not None:
        expression, amount_usd, note = found
        return _times_share(expression, share), amount_usd * money.as_decimal(share), note
    return None


def _pool_hours_line(figures, figure: str):
    """(expression, GPU-hours) of a whole pool's hour figure, or None."""
    pool, usage = figures.pool, figures.usage
    if figure == "capacity_gpu_hours":
        expression = _("%(gpus)s GPUs × %(hours)s h paid") % {
            "gpus": pool.gpu_count,
            "hours": hours_text(figures.paid_hours),
        }
        return expression, pool.gpu_count * figures.paid_hours
    if figure == "measured_capacity_gpu_hours":
        expression = _("%(gpu_hours)s GPU-h reported in the %(hours)s h with telemetry") % {
            "gpu_hours": quantity(usage.measured_capacity_gpu_hours),
            "hours": hours_text(usage.measured_hours),
        }
        return expression, usage.measured_capacity_gpu_hours
    if figure == "unmeasured_gpu_hours":
        expression = _("(%(paid)s h paid − %(measured)s h with telemetry) × %(gpus)s GPUs") % {
            "paid": hours_text(figures.paid_hours),
            "measured": hours_text(usage.measured_hours),
            "gpus": pool.gpu_count,
        }
        return expression, figures.unmeasured_hours * pool.gpu_count
    if figure in ("busy_gpu_hours", "training_busy_gpu_hours"):
        expression = _("Σ busy GPU-h reported in the %(hours)s h with telemetry") % {
            "hours": hours_text(usage.measured_hours)
        }
        return expression, usage.busy_gpu_hours
    if figure == "lost_gpu_hours":
        expression = _(
            "Σ (minutes since the last checkpoint + restart) ÷ 60 × job GPUs over the "
            "interruptions recorded in the range"
        )
        return expression, figures.lost_gpu_hours
    return None


def _pool_money_line(figures, figure: str):
    """(expression, USD, note) of a whole pool's money figure, or None."""
    usage = figures.usage
    if figure == "measured_cost_usd":
        expression = (
            _measured_cost_text(figures) if usage.measured_hours else _("no hour with telemetry")
        )
        return expression, usage.measured_cost_usd, ""
    if figure == "unmeasured_cost_usd":
        return _unmeasured_cost_text(figures), figures.unmeasured_cost_usd, ""
    if figure in ("cost_usd", "training_cost_usd", "inference_cost_usd"):
        expression, note = _pool_cost_text(figures)
        return expression, figures.cost_usd, note
    if figure == "idle_cost_usd":
        expression = _(
            "%(cost)s measured cost × (1 − %(busy)s busy ÷ %(capacity)s measured GPU-h)"
        ) % {
            "cost": usd(usage.measured_cost_usd),
            "busy": quantity(usage.busy_gpu_hours),
            "capacity": quantity(usage.measured_capacity_gpu_hours),
        }
        if not usage.measured_capacity_gpu_hours:
            expression = _("no hour with telemetry: nothing measured can be idle")
        return expression, figures.idle_cost_usd, ""
    if figure == "interruption_cost_usd":
        expression = _("%(lost)s lost GPU-h × %(price)s") % {
            "lost": quantity(figures.lost_gpu_hours),
            "price": _unmeasured_price_text(figures),
        }
        return expression, figures.interruption_cost_usd, ""
    return None


def _pool_cost_text(figures) -> tuple[str, str]:
    """(expression, note) of a pool's cost: GPUs × hours × price at a flat rate, else its
    measured and unmeasured terms."""
    if _is_flat_rate(figures):
        fixed, _per_kwh, _tdp_kw = _pool_prices(figures)
        expression = _("%(gpus)s GPUs × %(hours)s h × %(price)s/GPU-h") % {
            "gpus": figures.pool.gpu_count,
            "hours": hours_text(figures.paid_hours),
            "price": price(fixed),
        }
        note = ""
        if figures.unmeasured_hours:
            note = _("of which unmeasured %(hours)s h") % {
                "hours": hours_text(figures.unmeasured_hours)
            }
        return expression, note
    if not figures.usage.measured_hours:
        return _unmeasured_cost_text(figures), _("no hour with telemetry")
    expression = _measured_cost_text(figures)
    if figures.unmeasured_hours:
        expression += f" + {_unmeasured_cost_text(figures)}"
    return expression, ""


def _attributed_line(part: AttributedPart, figure: str):
    figures, sign = part.figures, part.sign
    usage = figures.usage
    workload = part.workload_label
    if figure in ("capacity_gpu_hours", "measured_capacity_gpu_hours"):
        held = _("GPU-h %(workload)s's labelled samples hold") % {"workload": workload}
        return held, sign * part.allocated_gpu_hours, ""
    if figure == "busy_gpu_hours" or (
        figure == "training_busy_gpu_hours" and part.counts_as == TRAINING
    ):
        busy = _("busy GPU-h %(workload)s's labelled samples report") % {"workload": workload}
        return busy, sign * part.busy_gpu_hours, ""
    cost_text = _("%(cost)s measured pool cost × %(allocated)s ÷ %(capacity)s measured GPU-h") % {
        "cost": usd(usage.measured_cost_usd),
        "allocated": quantity(part.allocated_gpu_hours),
        "capacity": quantity(usage.measured_capacity_gpu_hours),
    }
    cost_text = _("measured: pod labels: %(cost)s") % {"cost": cost_text}
    if figure in ("cost_usd", "measured_cost_usd"):
        return cost_text, sign * part.cost_usd, ""
    if figure == "training_cost_usd" and part.counts_as == TRAINING:
        return cost_text, sign * part.cost_usd, ""
    if figure == "inference_cost_usd" and part.counts_as == INFERENCE:
        return cost_text, sign * part.cost_usd, ""
    if figure == "idle_cost_usd":
        expression = _("%(cost)s × (1 − %(busy)s busy ÷ %(allocated)s GPU-h)") % {
            "cost": usd(part.cost_usd),
            "busy": quantity(part.busy_gpu_hours),
            "allocated": quantity(part.allocated_gpu_hours),
        }
        return expression, sign * part.idle_cost_usd, ""
    return None


def _shared_figure(part, figure: str) -> str | None:
    """The figure of a share's ``values`` that adds to ``figure``, or None."""
    if figure in ("training_busy_gpu_hours", "training_cost_usd"):
        if part.counts_as != TRAINING:
            return None
        return "busy_gpu_hours" if figure == "training_busy_gpu_hours" else "cost_usd"
    if figure == "inference_cost_usd":
        return "cost_usd" if part.counts_as == INFERENCE else None
    return figure if figure in part.values else None


def _declared_line(part: DeclaredPart, figure: str):
    name = _shared_figure(part, figure)
    if name is None:
        return None
    unit = FIGURES[figure][1]
    expression = _(
        "%(rule)s: %(gpus)s ÷ %(pool_gpus)s × %(rest)s of the pool in those hours, "
        "less labelled GPU-h"
    ) % {
        "rule": part.rule,
        "gpus": part.gpus,
        "pool_gpus": part.pool_gpus,
        "rest": format_value(part.weighted_rest.get(name, 0.0), unit),
    }
    return expression, part.values.get(name, 0.0), ""


def _unallocated_line(part: UnallocatedPart, figure: str):
    name = _shared_figure(part, figure)
    if name is None:
        return None
    expression = _(
        "unallocated: Σ hour by hour (1 − running workloads' declared GPUs ÷ pool GPUs) × "
        "the hour's figure less labelled GPU-h"
    )
    return expression, part.values.get(name, 0.0), ""


def _slurm_line(part: SlurmPart, figure: str):
    name = _shared_figure(part, figure)
    if name is None:
        return None
    expression = _(
        "measured: Slurm jobs: %(hours)s GPU-h of jobs ÷ the pool's GPU-h × its figure "
        "in those hours, less labelled GPU-h"
    ) % {"hours": quantity(part.gpu_hours)}
    return expression, part.values.get(name, 0.0), ""


def _part_label(part) -> str:
    if isinstance(part, SlurmPart):
        return _("%(label)s's Slurm jobs in %(pool)s") % {
            "label": part.label,
            "pool": part.pool_name,
        }
    if isinstance(part, DeclaredPart):
        values = {"workload": part.workload_label, "pool": part.pool_name}
        return _("%(workload)s's share of %(pool)s") % values
    if isinstance(part, UnallocatedPart):
        return _("unallocated capacity of %(pool)s") % {"pool": part.pool_name}
    if isinstance(part, PoolPart):
        return part.figures.pool.name
    if isinstance(part, AttributedPart):
        values = {"workload": part.workload_label, "pool": part.figures.pool.name}
        if part.sign > 0:
            return _("%(workload)s's share of %(pool)s") % {**values}
        return _("less %(workload)s's share of %(pool)s") % {**values}
    return _("less %(part)s") % {"part": part.label} if getattr(part, "sign", 1) < 0 else part.label


def _line(part, figure: str):
    if isinstance(part, SlurmPart):
        return _slurm_line(part, figure)
    if isinstance(part, DeclaredPart):
        return _declared_line(part, figure)
    if isinstance(part, UnallocatedPart):
        return _unallocated_line(part, figure)
    if isinstance(part, PoolPart):
        return _pool_line(part, figure)
    if isinstance(part, AttributedPart):
        return _attributed_line(part, figure)
    if isinstance(part, RequestsPart) and figure in ("requests", "tokens"):
        value = getattr(part, figure)
        if figure == "requests":
            return _("requests logged in the range"), value, ""
        return _("input + output tokens logged in the range"), value, ""
    if isinstance(part, StoredPart) and figure in part.values:
        return part.expression, part.values[figure], ""
    if isinstance(part, EffectivePart) and figure == "effective_training_gpu_hours":
        effective = part.effective
        values = {
            "measured": quantity(effective.measured_gpu_hours),
            "covered": hours_text(effective.covered_hours),
            "estimated": quantity(effective.estimated_gpu_hours),
            "other": hours_text(effective.estimated_hours),
        }
        if not effective.estimated_hours:
            expression = _(
                "%(measured)s GPU-h measured by the event log over the %(covered)s h it covers"
            )
        else:
            expression = _(
                "%(measured)s GPU-h measured by the event log over the %(covered)s h it "
                "covers + %(estimated)s GPU-h estimated (busy − lost GPU-h) over the other "
                "%(other)s h"
            )
        return expression % values, effective.gpu_hours, ""
    if isinstance(part, LostPart) and figure == "lost_gpu_hours":
        return (
            _(
                "Σ (minutes since the last checkpoint + restart) ÷ 60 × job GPUs over its "
                "interruptions recorded in the range"
            ),
            part.sign * part.lost_gpu_hours,
            "",
        )
    if isinstance(part, LostPart) and figure == "interruption_cost_usd" and part.usd_per_gpu_hour:
        return (
            _("%(lost)s lost GPU-h × %(price)s/GPU-h")
            % {"lost": quantity(part.lost_gpu_hours), "price": usd(part.usd_per_gpu_hour)},
            part.sign * money.times(part.lost_gpu_hours, part.usd_per_gpu_hour),
            "",
        )
    return None


def _sum_steps(row, figure: str) -> list[Step]:
    """A sum figure: each part's line, then the total (the row's own figure)."""
    label, unit = FIGURES[figure]
    label = _(label)
    total = getattr(row, figure)
    lines = []
    for part in row.parts:
        found = _line(part, figure)
        if found is not None:
            expression, value, note = found
            lines.append(Step(_part_label(part), expression, value, unit, note))
    if not lines:
        return [Step(label, _("nothing in this row adds to it"), total, unit)]
    if len(lines) == 1:
        only = lines[0]
        of = _("%(figure)s of %(part)s") % {"figure": label, "part": only.label}
        return [Step(of, only.expression, total, unit, only.note)]
    terms = " + ".join(format_value(line.value, unit) for line in lines)
    above = _("Σ of the %(count)s lines above: %(terms)s") % {"count": len(lines), "terms": terms}
    summed = Step(label, above, total, unit, kind="sum")
    return [*lines, summed]


def explain_figure(row, figure: str) -> list[Step]:
    """The steps that compute ``getattr(row, figure)``; the last one carries it."""
    if figure not in FIGURES:
        raise KeyError(figure)
    ratio = _RATIOS.get(figure)
    if figure == "effective_training_gpu_hours":
        ratio = (
            _measured_effective_ratio
            if row.effective_training_source == "measured"
            else _estimated_effective_ratio
        )
    if ratio is None:
        return _sum_steps(row, figure)
    steps, expression, undefined = ratio(row, figure)
    label, unit = FIGURES[figure]
    result = getattr(row, figure)
    if result is None:
        expression = _("undefined: %(why)s") % {"why": undefined}
    return [*steps, Step(_(label), expression, result, unit)]


# A ratio figure's steps: (the sums it divides, its expression, why it may be undefined).


def _utilization_ratio(row, figure: str):
    return (
        _sum_steps(row, "busy_gpu_hours") + _sum_steps(row, "measured_capacity_gpu_hours"),
        _("100 × %(busy)s busy ÷ %(capacity)s measured GPU-h")
        % {
            "busy": quantity(row.busy_gpu_hours),
            "capacity": quantity(row.measured_capacity_gpu_hours),
        },
        _("no hour with telemetry"),
    )


def _per_busy_gpu_hour_ratio(row, figure: str):
    return (
        _sum_steps(row, "measured_cost_usd") + _sum_steps(row, "busy_gpu_hours"),
        _("%(cost)s measured cost ÷ %(busy)s busy GPU-h")
        % {"cost": usd(row.measured_cost_usd), "busy": quantity(row.busy_gpu_hours)},
        _("no busy GPU-hours"),
    )


def _per_request_ratio(row, figure: str):
    per, scale = ("requests", 1_000) if "requests" in figure else ("tokens", 1_000_000)
    return (
        _sum_steps(row, "inference_cost_usd") + _sum_steps(row, per),
        _("%(cost)s inference cost ÷ %(count)s %(per)s × %(scale)s")
        % {
            "cost": usd(row.inference_cost_usd),
            "count": count(getattr(row, per)),
            "per": unit_word(per),
            "scale": f"{scale:,}",
        },
        (_("no requests") if per == "requests" else _("no tokens"))
        if not getattr(row, per)
        else _("no inference cost"),
    )


def _measured_effective_ratio(row, figure: str):
    expression = _(
        "measured from the training event logs: Σ effective seconds × GPUs ÷ 3600 (goodput_measure)"
    )
    if any(
        isinstance(part, EffectivePart) and part.effective.estimated_hours for part in row.parts
    ):
        expression = _(
            "measured from the training event logs over the hours they cover (Σ "
            "effective seconds × GPUs ÷ 3600, goodput_measure), estimated as busy − lost "
            "GPU-h over the rest of the range"
        )
    if row.effective_training_above_busy:
        expression = _(
            "%(expression)s — above the %(busy)s busy training GPU-h the telemetry "
            "measured: check the workload's GPUs and reference step time"
        ) % {"expression": expression, "busy": quantity(row.training_busy_gpu_hours)}
    return (
        _sum_steps(row, "training_busy_gpu_hours")
        + _sum_steps(row, "effective_training_gpu_hours"),
        expression,
        _("no job with a step loaded and a step saved"),
    )


def _estimated_effective_ratio(row, figure: str):
    return (
        _sum_steps(row, "training_busy_gpu_hours") + _sum_steps(row, "lost_gpu_hours"),
        _("max(0, %(busy)s busy training GPU-h − %(lost)s lost GPU-h)")
        % {
            "busy": quantity(row.training_busy_gpu_hours),
            "lost": quantity(row.training_lost_gpu_hours),
        },
        _("no busy training GPU-hours"),
    )


def _per_effective_training_ratio(row, figure: str):
    effective = row.effective_training_gpu_hours
    return (
        _sum_steps(row, "training_cost_usd") + explain_figure(row, "effective_training_gpu_hours"),
        _("%(cost)s training cost ÷ %(effective)s effective training GPU-h")
        % {"cost": usd(row.training_cost_usd), "effective": quantity(effective)},
        _("no effective training GPU-hours") if not effective else _("no training cost"),
    )


_RATIOS = {
    "utilization_pct": _utilization_ratio,
    "cost_per_busy_gpu_hour_usd": _per_busy_gpu_hour_ratio,
    "cost_per_1k_requests_usd": _per_request_ratio,
    "cost_per_1m_tokens_usd": _per_request_ratio,
    "cost_per_effective_training_gpu_hour_usd": _per_effective_training_ratio,
}


def explain_row(row, figures=REPORTED) -> dict[str, list[Step]]:
    """Every reported figure of ``row`` → its steps."""
    return {figure: explain_figure(row, figure) for figure in figures}
