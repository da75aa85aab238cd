"""Connect a fleet: ask the Prometheus (or VictoriaMetrics) that already scrapes the
fleet's dcgm-exporters what it holds, propose pools for the GPUs it finds, and on
acceptance create the pools, the GPUs and the pull source in one transaction, then pull
the last hour on a worker so that the new pools have figures at once.

- ``probe(url, credentials)``: instant queries (``/api/v1/query``) of every DCGM metric the
  pull reads (``prometheus.PROMETHEUS_METRICS``), each grouped by the labels that name a GPU or
  MIG slice (``IDENTITY_LABELS``), so a 1,000-GPU fleet with pod labels answers one series
  per device and metric, not one per pod. The series become devices through the pull's
  own reading of labels (``prometheus.rows_from_prometheus``), so the GPUs created here are the
  very rows a later pull finds by their key. Failures are ``ProbeError`` sentences a
  person can act on: nothing listening, an unknown host, credentials asked for or
  refused, a URL that is not a Prometheus API, no dcgm-exporter metric at all.
- ``propose_pools(devices, gpu_models, taken_names)``: one pool per reported model and
  hostname prefix (``hostname_prefix``: ``gpu-node-07`` → ``gpu-node``), with the catalog
  GPU models the reported name matches (``triage.gpu_model_matches``).
- ``connect_fleet(...)``: the writes; ``first_pull(run, source, since)``: the worker's.
"""

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from urllib.parse import urlencode, urlsplit, urlunsplit

from django.db import transaction
from django.db.models import Count, Max, Sum
from django.utils import timezone
from django.utils.translation import gettext

from apps.core.outbox import enqueue
from apps.core.slugs import unique_slug_from_name
from apps.core.texts import translated
from apps.currencies.rates import usd_price, usd_rates_at
from apps.pools.hours import floor_hour
from apps.pools.models import Deployment, Pool
from apps.pools.services import save_pool
from apps.telemetry.mig import compute_slices_of_profile
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    ImportRun,
    PendingRollup,
    PoolHourlyUsage,
    PullSource,
)
from apps.telemetry.pull import base, prometheus
from apps.telemetry.rollups import hourly
from apps.telemetry.triage import gpu_model_matches

PROBE_TIMEOUT_SECONDS = 10
# The labels that say which GPU (or MIG slice) a series is and what it is; the pull reads
# the same ones (prometheus._device_context).
IDENTITY_LABELS = (
    "UUID",
    "uuid",
    "GPU_I_ID",
    "GPU_I_PROFILE",
    "gpu",
    "Hostname",
    "hostname",
    "instance",
    "modelName",
    "DCGM_FI_DRIVER_VERSION",
)
UTILIZATION_METRIC = "DCGM_FI_DEV_GPU_UTIL"
# The first pull reaches this far back, so the new pools show an hour of figures at once.
FIRST_PULL_WINDOW = timedelta(hours=1)
# The task's name: views enqueue it through the outbox, pull_tasks.py defines it.
FIRST_PULL_TASK = "telemetry.connect_first_pull"
# The key of a connect run's ``task_arguments`` that lists the pools it created.
POOL_IDS_ARGUMENT = "connect_pool_ids"


class ProbeError(Exception):
    """The server could not be asked, or its answer holds no GPU: ``args[0]`` says why
    and what to do, in the active language."""


@dataclass(frozen=True)
class Credentials:
    """What the server is sent to let gpufleet in: HTTP basic authentication or a bearer
    token (the token wins when both are given)."""

    username: str = ""
    password: str = ""
    bearer_token: str = ""

    def headers(self) -> dict[str, str]:
        return base.authorization_headers(
            username=self.username, password=self.password, bearer_token=self.bearer_token
        )

    def __bool__(self) -> bool:
        return bool(self.username or self.password or self.bearer_token)


@dataclass(frozen=True)
class FoundDevice:
    """A GPU or a MIG slice as the server reports it, keyed as ``GpuDevice.key``."""

    key: str
    uuid: str
    gpu_instance_id: int | None
    hostname: str
    gpu_index: int | None
    model_name: str
    driver_version: str
    mig_profile: str


@dataclass
class Findings:
    """What the server holds: the devices it names by UUID, the GPUs without one (by
    hostname and index), and per DCGM metric the devices reporting it."""

    base_url: str
    devices: list[FoundDevice]
    unidentified_gpus: list[tuple[str, str]]
    devices_per_metric: dict[str, int]

    @property
    def gpu_count(self) -> int:
        """Physical GPUs: one per UUID (a MIG GPU's slices share it), and one per hostname
        and index of the series without a UUID."""
        return len({device.uuid for device in self.devices}) + len(self.unidentified_gpus)

    @property
    def models(self) -> list[tuple[str, int]]:
        """(reported model, physical GPUs), the most common first."""
        by_uuid = {device.uuid: device.model_name for device in self.devices}
        counts = Counter(by_uuid.values())
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    @property
    def hostnames(self) -> list[str]:
        names = {device.hostname for device in self.devices}
        names.update(hostname for hostname, _gpu in self.unidentified_gpus)
        return sorted(name for name in names if name)

    @property
    def metrics_present(self) -> list[tuple[str, int]]:
        return [(name, count) for name, count in self.devices_per_metric.items() if count]

    @property
    def metrics_missing(self) -> list[str]:
        return [name for name, count in self.devices_per_metric.items() if not count]

    @property
    def mig(self) -> bool:
        return any(
            device.gpu_instance_id is not None or device.mig_profile for device in self.devices
        )

    @property
    def mig_slice_count(self) -> int:
        return sum(1 for device in self.devices if device.gpu_instance_id is not None)


# --- Asking the server -----------------------------------------------------------------------


def base_url_of(url: str) -> str:
    """The API's base URL from what a person pastes: the query and fragment dropped, and a
    trailing UI or API path (``/graph``, ``/vmui``, ``/api/v1/query``) cut, so
    ``http://prom:9090/graph?g0.expr=up`` is ``http://prom:9090``; a path in front of the
    API (VictoriaMetrics cluster's ``/select/0/prometheus``) is kept."""
    parts = urlsplit(url.strip())
    path = re.sub(r"/(?:graph|vmui|api/v1(?:/.*)?)?/*$", "", parts.path)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _unreachable(base_url: str, error: base.PullError) -> ProbeError:
    """Why nothing answered, from the reason ``http_get`` gives (its ``__cause__``)."""
    reason = error.__cause__
    host = urlsplit(base_url).hostname or base_url
    if isinstance(reason, ConnectionRefusedError):
        return ProbeError(
            gettext(
                "Nothing answers at %(url)s (connection refused): check the host and port, "
                "and that the server runs and listens on an address gpufleet can reach."
            )
            % {"url": base_url}
        )
    if isinstance(reason, OSError) and type(reason).__name__ == "gaierror":
        return ProbeError(
            gettext(
                "%(host)s is not a host name gpufleet can resolve: check the URL's spelling "
                "and the DNS of gpufleet's server."
            )
            % {"host": host}
        )
    return ProbeError(
        gettext("gpufleet could not ask %(url)s: %(reason)s.")
        % {"url": base_url, "reason": translated(error.sentence)}
    )


def instant_query(
    base_url: str, query: str, *, credentials: Credentials = Credentials(), timeout_seconds=None
) -> dict:
    """The ``data`` of ``GET {base_url}/api/v1/query?query=…``; raises ProbeError saying
    what to do when the server cannot be reached, refuses the credentials, or is not a
    Prometheus API."""
    url = f"{base_url}/api/v1/query?" + urlencode({"query": query})
    try:
        response = base.http_get(
            url,
            accept="application/json",
            shown_as=base_url,
            timeout_seconds=timeout_seconds or PROBE_TIMEOUT_SECONDS,
            headers=credentials.headers(),
        )
    except base.PullError as error:
        raise _unreachable(base_url, error) from None
    if response.status in (401, 403):
        if credentials:
            raise ProbeError(
                gettext(
                    "%(url)s refused the credentials (HTTP %(status)s): check the user name "
                    "and password, or the bearer token."
                )
                % {"url": base_url, "status": response.status}
            )
        raise ProbeError(
            gettext(
                "%(url)s asks for credentials (HTTP %(status)s): enter its user name and "
                "password, or a bearer token."
            )
            % {"url": base_url, "status": response.status}
        )
    not_prometheus = ProbeError(
        gettext(
            "%(url)s answered HTTP %(status)s but not as a Prometheus API does: enter the base "
            "URL of the Prometheus or VictoriaMetrics server, e.g. http://prometheus:9090."
        )
        % {"url": base_url, "status": response.status}
    )
    try:
        payload = json.loads(response.body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise not_prometheus from None
    try:
        # Prometheus answers a refused query 400/422/503 with the error JSON.
        return prometheus.prometheus_data(payload, query=query)
    except base.PullError as error:
        if isinstance(payload, dict) and payload.get("status") == "error":
            raise ProbeError(
                gettext("%(url)s could not answer the probe: %(reason)s.")
                % {"url": base_url, "reason": translated(error.sentence)}
            ) from None
        raise not_prometheus from None


def identity_query(metric: str) -> str:
    """One series per device reporting ``metric``, with its identity labels only."""
    return f"group by ({', '.join(IDENTITY_LABELS)}) ({metric})"


def probe(url: str, credentials: Credentials = Credentials()) -> Findings:
    """Ask the server at ``url`` for the DCGM metrics the pull reads; raises ProbeError."""
    base_url = base_url_of(url)
    devices: dict[str, FoundDevice] = {}
    unidentified: set[tuple[str, str]] = set()
    devices_per_metric: dict[str, int] = {}
    for metric in prometheus.PROMETHEUS_METRICS:
        data = instant_query(base_url, identity_query(metric), credentials=credentials)
        if data.get("resultType") != "vector":
            raise ProbeError(
                gettext(
                    "%(url)s answered an instant query with a %(type)s, not a vector: is it a "
                    "Prometheus-compatible server?"
                )
                % {"url": base_url, "type": data.get("resultType")}
            )
        # Series without a UUID cannot be pulled (the pull names a GPU by it); they are
        # counted by hostname and index so that the person knows they are there.
        without_uuid = {
            (_hostname_of(labels), labels.get("gpu", ""))
            for labels, _points in prometheus.series_points(data)
            if not (labels.get("UUID") or labels.get("uuid"))
        }
        unidentified |= without_uuid
        keys = set()
        for row in prometheus.rows_from_prometheus([(metric, data)]).rows:
            key = GpuDevice.key_for(row.device.uuid, row.device.gpu_instance_id)
            keys.add(key)
            devices.setdefault(
                key,
                FoundDevice(
                    key=key,
                    uuid=row.device.uuid,
                    gpu_instance_id=row.device.gpu_instance_id,
                    hostname=row.hostname,
                    gpu_index=row.gpu_index,
                    model_name=row.model_name,
                    driver_version=row.driver_version,
                    mig_profile=row.mig_profile,
                ),
            )
        devices_per_metric[metric] = len(keys) + len(without_uuid)
    if not devices and not unidentified:
        raise ProbeError(
            gettext(
                "No series named %(metric)s (nor any other DCGM metric gpufleet reads): is "
                "dcgm-exporter scraped by this server?"
            )
            % {"metric": UTILIZATION_METRIC}
        )
    ordered = sorted(
        devices.values(),
        key=lambda device: (
            device.hostname,
            device.gpu_index if device.gpu_index is not None else -1,
            device.key,
        ),
    )
    return Findings(base_url, ordered, sorted(unidentified), devices_per_metric)


def _hostname_of(labels: dict) -> str:
    return (
        labels.get("Hostname")
        or labels.get("hostname")
        or prometheus._host_of(labels.get("instance", ""))
    )


# --- Proposed pools ----------------------------------------------------------------------------

_IP_ADDRESS = re.compile(r"^\d+(?:\.\d+){3}$|:")
_TRAILING_NUMBER = re.compile(r"[-_]?\d+$")


def hostname_prefix(hostname: str) -> str:
    """The name a host shares with its siblings: the first label of the name with its
    trailing number cut (``gpu-node-07.dc1.example`` → ``gpu-node``, ``dgx12`` → ``dgx``);
    "" for an IP address or no hostname (such hosts group by model alone)."""
    if not hostname or _IP_ADDRESS.search(hostname):
        return ""
    short = hostname.split(".")[0]
    return _TRAILING_NUMBER.sub("", short) or short


@dataclass
class Proposal:
    """One proposed pool: the devices of one reported model under one hostname prefix."""

    key: str
    model_name: str
    hostname_prefix: str
    devices: list[FoundDevice]
    catalog_matches: list = field(default_factory=list)  # GpuModel
    name: str = ""

    @property
    def gpu_count(self) -> int:
        return len({device.uuid for device in self.devices})

    @property
    def hostnames(self) -> list[str]:
        return sorted({device.hostname for device in self.devices if device.hostname})

    @property
    def gpus_per_node(self) -> int:
        """The largest count that divides every host's GPUs (8 for hosts of 8), so the
        pool's GPUs fill whole nodes as the pool form asks."""
        per_host = Counter(
            device.hostname for device in {device.uuid: device for device in self.devices}.values()
        )
        return math.gcd(*per_host.values()) or 1

    @property
    def mig_slice_count(self) -> int:
        return sum(1 for device in self.devices if device.gpu_instance_id is not None)

    @property
    def gpu_model(self):
        """The catalog GPU model when exactly one matches the reported name, else None."""
        return self.catalog_matches[0] if len(self.catalog_matches) == 1 else None


def matching_gpu_models(model_name: str, gpu_models) -> list:
    """The catalog models ``model_name`` may be (``triage.gpu_model_matches``)."""
    return [
        gpu_model
        for gpu_model in gpu_models
        if gpu_model_matches(model_name, gpu_model.name, gpu_model.memory_type or "")
    ]


def _unique_name(name: str, taken: set[str]) -> str:
    name = name[:100].strip()
    candidate, number = name, 2
    while candidate.casefold() in taken:
        suffix = f" {number}"
        candidate, number = f"{name[: 100 - len(suffix)]}{suffix}", number + 1
    taken.add(candidate.casefold())
    return candidate


def propose_pools(devices, gpu_models, taken_names=()) -> list[Proposal]:
    """One pool per (reported model, hostname prefix), named after the catalog model it
    matches (else the reported model) and the prefix, unlike ``taken_names`` and each
    other; ordered by model, then prefix."""
    gpu_models = list(gpu_models)
    groups: dict[tuple[str, str], list[FoundDevice]] = {}
    for device in devices:
        groups.setdefault((device.model_name, hostname_prefix(device.hostname)), []).append(device)
    taken = {name.casefold() for name in taken_names}
    proposals = []
    for (model_name, prefix), members in sorted(groups.items()):
        proposal = Proposal(
            key=f"{model_name}\u241f{prefix}",
            model_name=model_name,
            hostname_prefix=prefix,
            devices=members,
            catalog_matches=matching_gpu_models(model_name, gpu_models),
        )
        label = proposal.gpu_model.name if proposal.gpu_model else model_name or "GPUs"
        proposal.name = _unique_name(f"{label} {prefix}".strip(), taken)
        proposals.append(proposal)
    return proposals


# --- Accepting ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolChoice:
    """What the person made of a proposal: its name, catalog model and purpose."""

    proposal: Proposal
    name: str
    gpu_model: object  # GpuModel
    purpose: str


def _unique_slug(name: str, model) -> str:
    return unique_slug_from_name(name, model, max_length=90) or unique_slug_from_name(
        model._meta.model_name, model
    )


def source_name_for(base_url: str) -> str:
    return f"Prometheus {urlsplit(base_url).netloc or base_url}"[:100]


@transaction.atomic
def connect_fleet(
    *,
    base_url: str,
    credentials: Credentials,
    choices: list[PoolChoice],
    user,
    scope,
    now: datetime | None = None,
) -> ImportRun:
    """Create the chosen pools, put each of their GPUs in them (new GpuDevice rows keyed
    as a pull keys them, or unassigned ones adopted), create the Prometheus pull source
    (or use the one that already pulls ``base_url``), and queue the first pull of the last
    hour on a worker; returns its run. All or nothing.

    The pools are cloud on-demand at the catalog's reference price per GPU-hour, in
    service from the first hour pulled (or from the first sample of a GPU adopted), so
    the hour pulled is paid and its idle cost shows; their owner edits the price later.
    GPUs already in a pool keep it. The source's ``last_pulled_at`` is set to now so that
    beat's schedule takes over one interval later, after the first pull.
    """
    now = now or timezone.now()
    since = (now - FIRST_PULL_WINDOW).replace(second=0, microsecond=0)
    team_id = next(iter(scope.team_ids)) if len(scope.team_ids) == 1 else None
    keys = [device.key for choice in choices for device in choice.proposal.devices]
    known = {device.key: device for device in GpuDevice.objects.filter(key__in=keys)}
    pool_ids = []
    for choice in choices:
        members = [device for device in choice.proposal.devices if device.key not in known]
        adopted = [
            known[device.key]
            for device in choice.proposal.devices
            if device.key in known and known[device.key].pool_id is None
        ]
        if not members and not adopted:
            continue  # every GPU of it is already in a pool
        pool = _create_pool(
            choice,
            members,
            adopted,
            base_url=base_url,
            user=user,
            team_id=team_id,
            since=since,
            now=now,
        )
        _place_devices(pool, members, adopted, now=now)
        pool_ids.append(pool.pk)
    source = _pull_source_for(base_url, credentials, scope=scope, since=since, now=now)
    return _queue_first_pull(source, base_url, pool_ids, user=user, since=since)


def _create_pool(choice, members, adopted, *, base_url, user, team_id, since, now) -> Pool:
    """The pool of one chosen proposal, sized to the GPUs it takes (new and adopted)."""
    gpu_uuids = {device.uuid for device in members} | {device.uuid for device in adopted}
    first_seen = min([device.first_seen_at for device in adopted], default=since)
    pool = Pool(
        name=choice.name,
        slug=_unique_slug(choice.name, Pool),
        purpose=choice.purpose,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=choice.gpu_model,
        gpu_count=len(gpu_uuids),
        gpus_per_node=min(choice.proposal.gpus_per_node, len(gpu_uuids)),
        on_demand_price_per_gpu_hour_usd=choice.gpu_model.reference_price_per_gpu_hour_usd,
        owner=user,
        team_id=team_id,
        driver_version=_most_common(device.driver_version for device in members),
        in_service_from=floor_hour(min(first_seen, since)),
        description=gettext("Connected from %(url)s on %(date)s UTC.")
        % {"url": base_url, "date": f"{now:%Y-%m-%d %H:%M}"},
    )
    if pool.gpu_count % pool.gpus_per_node:
        pool.gpus_per_node = 1
    save_pool(pool)
    return pool


def _place_devices(pool: Pool, members, adopted, *, now) -> None:
    """New GpuDevice rows for the GPUs gpufleet has not seen, and the unassigned ones it
    has seen moved in; an adopted GPU's earlier samples then count for the pool."""
    GpuDevice.objects.bulk_create(
        [
            GpuDevice(
                key=device.key,
                uuid=device.uuid,
                gpu_instance_id=device.gpu_instance_id,
                hostname=device.hostname,
                gpu_index=device.gpu_index,
                model_name=device.model_name,
                driver_version=device.driver_version,
                mig_profile=device.mig_profile,
                mig_compute_slices=compute_slices_of_profile(device.mig_profile),
                pool=pool,
                assignment=GpuDevice.Assignment.MANUAL,
                first_seen_at=now,
                last_seen_at=now,
            )
            for device in members
        ]
    )
    if adopted:
        GpuDevice.objects.filter(pk__in=[device.pk for device in adopted]).update(
            pool=pool, assignment=GpuDevice.Assignment.MANUAL
        )
        if GpuSample.objects.filter(device__in=adopted).exists():
            # Their samples from before now count for the pool: its hours are rebuilt.
            enqueue("telemetry.rollup_pool_history", pool.pk)


def _pull_source_for(base_url: str, credentials: Credentials, *, scope, since, now):
    """The Prometheus source that pulls ``base_url``, made when there is none yet."""
    source = PullSource.objects.filter(kind=PullSource.Kind.PROMETHEUS, url=base_url).first()
    if source is not None:
        return source
    taken_names = set(PullSource.objects.values_list("name", flat=True))
    name = source_name_for(base_url)
    number = 2
    while name in taken_names:
        name, number = f"{source_name_for(base_url)[:95]} {number}", number + 1
    return PullSource.objects.create(
        name=name,
        slug=_unique_slug(name, PullSource),
        kind=PullSource.Kind.PROMETHEUS,
        url=base_url,
        username=credentials.username,
        password=credentials.password,
        bearer_token=credentials.bearer_token,
        pulled_until=since,
        last_pulled_at=now,
        pull_scope_key=scope.cache_key,
    )


def _queue_first_pull(source, base_url: str, pool_ids: list[int], *, user, since) -> ImportRun:
    """The run of the first pull (the last hour), queued for a worker once committed."""
    run = ImportRun.objects.create(
        kind="gpu",
        format="prometheus",
        source=ImportRun.Source.PROMETHEUS,
        filename=base_url[:255],
        created_by=user,
        skip_bad_rows=True,
        status=ImportRun.Status.PENDING,
        task_arguments={
            "source_id": source.pk,
            "since": since.isoformat(),
            POOL_IDS_ARGUMENT: pool_ids,
        },
    )
    enqueue(FIRST_PULL_TASK, run.pk, source.pk, since.isoformat())
    return run


def _most_common(values) -> str:
    counts = Counter(value for value in values if value)
    return counts.most_common(1)[0][0] if counts else ""


def first_pull(run: ImportRun, source: PullSource, since: datetime) -> ImportRun:
    """The worker's part: pull ``source`` from ``since`` (whatever its ``pulled_until``
    says: beat may have pulled it meanwhile, and samples are keyed, so nothing counts
    twice) on ``run``, then roll up the hours it queued, rather than wait for beat's next
    drain, so the new pools' first hour shows as soon as the run ends."""
    if source.pulled_until is None or source.pulled_until > since:
        source.pulled_until = since  # in memory: where this pull starts
    run = prometheus.pull_prometheus(source, run=run)
    hourly.rollup_pending()
    return run


# --- What the run shows ------------------------------------------------------------------------


@dataclass
class PoolFirstHours:
    """A new pool's figures over the hours the first pull covered."""

    pool: Pool
    hours: int
    reporting_gpus: int
    busy_gpu_hours: float
    capacity_gpu_hours: float
    reporting_gpu_hours: float
    # None when the pool's exchange rate for the month is missing (``missing_rate_text``).
    idle_cost_usd: Decimal | None
    missing_rate_text: str = ""

    @property
    def utilization_pct(self) -> float | None:
        """Busy ÷ reporting GPU-hours, as the reports' utilisation."""
        if not self.reporting_gpu_hours:
            return None
        return 100 * self.busy_gpu_hours / self.reporting_gpu_hours


def run_pool_ids(run: ImportRun) -> list[int]:
    return list((run.task_arguments or {}).get(POOL_IDS_ARGUMENT) or [])


def rollups_pending(run: ImportRun) -> bool:
    """Hours the run's pull queued are not rolled up yet."""
    return PendingRollup.objects.filter(pool_id__in=run_pool_ids(run)).exists()


def first_hours(run: ImportRun) -> list[PoolFirstHours]:
    """Per pool the run created: its hourly rollups from the first hour pulled on, summed
    in SQL. Idle cost = Σ over the hours of price × capacity × (1 − busy ÷ capacity), the
    reports' formula (apps/reports/cost/costmodel.py, ``idle_cost_usd``) for a cloud pool,
    whose hour costs its GPUs × its price whatever they do; the price converted from the
    pool's currency to US dollars at this month's rate (no figure when it is missing)."""
    since = datetime.fromisoformat(run.task_arguments["since"])
    pools = {
        pool.pk: pool
        for pool in Pool.objects.filter(pk__in=run_pool_ids(run)).select_related("gpu_model")
    }
    totals = {
        row["pool_id"]: row
        for row in PoolHourlyUsage.objects.filter(pool_id__in=pools, hour__gte=floor_hour(since))
        .values("pool_id")
        .annotate(
            hours=Count("hour"),
            busy=Sum("busy_gpu_hours"),
            capacity=Sum("capacity_gpu_hours"),
            reporting=Sum("reporting_gpus"),
            reporting_max=Max("reporting_gpus"),
        )
    }
    # The pools' prices in US dollars at this month's rate: one read for every pool.
    now = timezone.now()
    rates = usd_rates_at({pool.currency for pool in pools.values()}, now)
    results = []
    for pool_id in run_pool_ids(run):
        pool = pools.get(pool_id)
        if pool is None:
            continue  # deleted since
        row = totals.get(pool_id) or {}
        busy, capacity = row.get("busy") or 0.0, row.get("capacity") or 0.0
        idle_gpu_hours = Decimal(str(round(max(capacity - busy, 0.0), 6)))
        price = usd_price(pool, now, rates, "fixed_price_per_gpu_hour_usd")
        results.append(
            PoolFirstHours(
                pool=pool,
                hours=row.get("hours") or 0,
                reporting_gpus=row.get("reporting_max") or 0,
                busy_gpu_hours=busy,
                capacity_gpu_hours=capacity,
                reporting_gpu_hours=float(row.get("reporting") or 0),
                idle_cost_usd=None
                if price.usd is None
                else (idle_gpu_hours * price.usd).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP),
                missing_rate_text=price.missing_text,
            )
        )
    return results
