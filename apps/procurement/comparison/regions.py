"""Region criteria of procurement options beside their cost (framework-free).

Plain functions over numbers and dataclasses, no Django imports. Two parts:

- Reading a round-trip time from what an operator pastes: the summary line of Linux
  iputils ``ping`` (``rtt min/avg/max/mdev = 14.492/15.447/17.837/0.927 ms``; iputils
  ping.c prints min/avg/max/mdev in ms) and an ``mtr --report`` table (columns Loss%,
  Snt, Last, Avg, Best, Wrst, StDev; mtr(8), "--report"): the Avg of the last hop, which
  is the destination.
- Checking an option's criteria against a scenario's requirements: every requirement an
  option misses is named with how far it is off, and a criterion the option does not
  state is a miss of its own ("not stated"), never a pass.
"""

import re
from dataclasses import dataclass, field

from apps.core.sentences import gettext

# Translated as the text is built, in the reader's language (apps/core/sentences.py).
_ = gettext


class RttParseError(ValueError):
    """The pasted text is not ping or mtr output; the message names the line."""


_PING_SUMMARY = re.compile(
    r"^\s*(?:rtt|round-trip)\s+min/avg/max/(?:mdev|stddev)\s*=\s*"
    r"(?P<min>[\d.]+)/(?P<avg>[\d.]+)/(?P<max>[\d.]+)/(?P<dev>[\d.]+)\s*ms\b"
)
_MTR_HEADER = re.compile(r"\bLoss%\s+Snt\s+Last\s+Avg\s+Best\s+Wrst\s+StDev\b")
_MTR_HOP = re.compile(r"^\s*(?P<hop>\d+)\.(?:\|--)?\s+(?P<rest>.*)$")
_MTR_STATS = re.compile(
    r"(?P<loss>[\d.]+)%\s+(?P<sent>\d+)\s+(?P<last>[\d.]+)\s+(?P<avg>[\d.]+)\s+"
    r"(?P<best>[\d.]+)\s+(?P<worst>[\d.]+)\s+(?P<stdev>[\d.]+)\s*$"
)


def parse_ping_avg_rtt_ms(text: str) -> float:
    """The average RTT (ms) from iputils ping's ``rtt min/avg/max/mdev`` summary line."""
    lines = text.splitlines()
    for line in lines:
        match = _PING_SUMMARY.match(line)
        if match:
            return float(match["avg"])
    for number, line in enumerate(lines, start=1):
        if "packets transmitted" in line and " 0 received" in line:
            raise RttParseError(
                _("Line %(line)s: no reply was received, so there is no round-trip time.")
                % {"line": number}
            )
    raise RttParseError(
        _(
            "No line reads “rtt min/avg/max/mdev = …/…/…/… ms” (the summary ping prints at "
            "the end); paste the whole output of ping."
        )
    )


def parse_mtr_last_hop_avg_rtt_ms(text: str) -> float:
    """The Avg column (ms) of the last hop of an ``mtr --report`` table."""
    lines = text.splitlines()
    header_line = next(
        (number for number, line in enumerate(lines, start=1) if _MTR_HEADER.search(line)), None
    )
    if header_line is None:
        raise RttParseError(
            _(
                "No header line with “Loss% Snt Last Avg Best Wrst StDev” (mtr --report); "
                "paste the whole report."
            )
        )
    last = None
    for number, line in enumerate(lines[header_line:], start=header_line + 1):
        hop = _MTR_HOP.match(line)
        if not hop:
            continue
        stats = _MTR_STATS.search(hop["rest"])
        if stats is None:
            raise RttParseError(
                _(
                    "Line %(line)s: hop %(hop)s has no “Loss%% Snt Last Avg Best Wrst StDev” "
                    "numbers (expected e.g. “0.0%%  10  1.2  1.5  0.8  3.2  0.7”)."
                )
                % {"line": number, "hop": hop["hop"]}
            )
        last = (number, stats)
    if last is None:
        raise RttParseError(
            _("Line %(line)s: the header is not followed by any hop line (“1.|-- host …”).")
            % {"line": header_line}
        )
    number, stats = last
    if float(stats["loss"]) >= 100:
        raise RttParseError(
            _("Line %(line)s: the last hop lost every packet, so there is no round-trip time.")
            % {"line": number}
        )
    return float(stats["avg"])


def parse_rtt_ms(text: str) -> float:
    """The RTT (ms) from pasted ping or mtr --report output, whichever it is."""
    if _MTR_HEADER.search(text):
        return parse_mtr_last_hop_avg_rtt_ms(text)
    return parse_ping_avg_rtt_ms(text)


# --- Requirements ----------------------------------------------------------------------


@dataclass(frozen=True)
class RegionCriteria:
    """What one option states; None: not stated."""

    ddos_protection_gbps: float | None = None
    line_type: str | None = None  # a LineType value
    line_type_label: str = ""
    ip_address_count: int | None = None
    needs_icp_filing: bool | None = None
    rtt_ms_by_region: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Requirements:
    """What a scenario asks for; None or empty: no requirement."""

    min_ddos_protection_gbps: float | None = None
    accepted_line_types: dict[str, str] = field(default_factory=dict)  # value → label
    no_icp_filing: bool = False
    min_ip_address_count: int | None = None
    max_rtt_ms_by_region: dict[str, float] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        return bool(
            self.min_ddos_protection_gbps is not None
            or self.accepted_line_types
            or self.no_icp_filing
            or self.min_ip_address_count is not None
            or self.max_rtt_ms_by_region
        )


@dataclass(frozen=True)
class Miss:
    criterion: str  # "ddos", "line_type", "icp_filing", "ip_addresses", "rtt:<region>"
    message: str
    not_stated: bool = False

    def as_dict(self) -> dict:
        return {"criterion": self.criterion, "message": self.message, "not_stated": self.not_stated}


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def misses(criteria: RegionCriteria, requirements: Requirements) -> tuple[Miss, ...]:
    """Every requirement the option misses, in the order the scenario states them."""
    found = []
    minimum = requirements.min_ddos_protection_gbps
    if minimum is not None:
        stated = criteria.ddos_protection_gbps
        if stated is None:
            found.append(
                Miss(
                    "ddos",
                    _("DDoS protection not stated (%(min)s Gbps required)")
                    % {"min": _number(minimum)},
                    not_stated=True,
                )
            )
        elif stated < minimum:
            found.append(
                Miss(
                    "ddos",
                    _("DDoS protection %(stated)s Gbps < %(min)s Gbps required")
                    % {"stated": _number(stated), "min": _number(minimum)},
                )
            )
    accepted = requirements.accepted_line_types
    if accepted:
        names = ", ".join(accepted.values())
        if not criteria.line_type:
            found.append(
                Miss(
                    "line_type",
                    _("Line type not stated (%(accepted)s accepted)") % {"accepted": names},
                    not_stated=True,
                )
            )
        elif criteria.line_type not in accepted:
            found.append(
                Miss(
                    "line_type",
                    _("Line type %(stated)s not accepted (%(accepted)s accepted)")
                    % {"stated": criteria.line_type_label or criteria.line_type, "accepted": names},
                )
            )
    if requirements.no_icp_filing:
        if criteria.needs_icp_filing is None:
            found.append(
                Miss(
                    "icp_filing",
                    _("ICP filing (备案) not stated (no filing required)"),
                    not_stated=True,
                )
            )
        elif criteria.needs_icp_filing:
            found.append(
                Miss("icp_filing", _("Needs an ICP filing (备案); the scenario allows none"))
            )
    minimum_ips = requirements.min_ip_address_count
    if minimum_ips is not None:
        stated_ips = criteria.ip_address_count
        if stated_ips is None:
            found.append(
                Miss(
                    "ip_addresses",
                    _("IP addresses not stated (%(min)s required)") % {"min": minimum_ips},
                    not_stated=True,
                )
            )
        elif stated_ips < minimum_ips:
            found.append(
                Miss(
                    "ip_addresses",
                    _("%(stated)s IP addresses < %(min)s required")
                    % {"stated": stated_ips, "min": minimum_ips},
                )
            )
    for region, maximum in requirements.max_rtt_ms_by_region.items():
        rtt = criteria.rtt_ms_by_region.get(region)
        values = {"region": region, "max": _number(maximum)}
        if rtt is None:
            found.append(
                Miss(
                    f"rtt:{region}",
                    _("RTT to %(region)s not stated (%(max)s ms required)") % values,
                    not_stated=True,
                )
            )
        elif rtt > maximum:
            found.append(
                Miss(
                    f"rtt:{region}",
                    _("RTT to %(region)s %(rtt)s ms > %(max)s ms required")
                    % {**values, "rtt": _number(rtt)},
                )
            )
    return tuple(found)
