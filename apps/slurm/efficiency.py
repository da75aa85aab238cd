"""Allocated against used: each Slurm job's GPU-hours joined with the telemetry of its
nodes, per job, user, account and team, over a span of whole UTC hours.

For a job j and a UTC hour h of the span:

- **allocated** a(j, h) = GPUs(j) × seconds of [start, end) inside h ÷ 3600 (a running
  job's end is its start + the elapsed seconds of its last import);
- the job's **reporting GPUs** D(j, h): the whole GPUs (no MIG slice) whose device
  hostname, or its first label (``gpu01`` of ``gpu01.cluster.local``), is one of the job's
  nodes, of a pool of the job's cluster (hostnames repeat across clusters, and nothing
  records the cluster of a GPU of no pool: those are not joined), with a measured
  utilisation u_d in h (the mean of its raw samples in h; else the samples-weighted mean
  of the device-hours a TSDB pull stored, as the pool rollup reads them); u_d is clamped
  to [0, 100] %;
- when D(j, h) is empty the hour is **unmeasured**: its a(j, h) is neither busy nor idle;
- otherwise each reporting GPU holds an equal share a(j, h) ÷ |D(j, h)| of the hour, and
  **busy** b(j, h) = Σ_d a(j, h) ÷ |D| × u_d ÷ 100, **idle** = a(j, h) − b(j, h);
- the **idle cost** = Σ_d a(j, h) ÷ |D| × (1 − u_d ÷ 100) × p_d, p_d the effective price per
  GPU-hour of d's pool in force at h (its price period, else its current price), in the
  period's currency, converted to US dollars at h's month's rate. A GPU without a price
  would have its idle GPU-hours counted as **unpriced**; every reporting GPU is in a pool,
  which always has a price, so the figure stays 0 (the CSV and the webhook keep it).

The **busy ratio** of a job, a user, an account or a team is Σ busy ÷ Σ measured over the
same measured hours (measured = allocated − unmeasured). Slurm does not say which of a
shared node's GPUs a job held, so on a node shared by several jobs every job reads the mean
of all the node's reporting GPUs.

A job **stayed under 1 %** when it has measured hours and no reporting GPU of it reached
1 % utilisation in any of them.

A user and an account are a cluster's: ``alice`` of one cluster and ``alice`` of another
are summed apart (a team's sum holds the jobs of every cluster).

The hour-by-hour work is one SQL statement; Python adds the jobs' rows up by user, account
and team and converts the idle cost's currencies (one query for the rates)."""

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.db import connection

from apps.core import money
from apps.currencies.codes import USD
from apps.currencies.rates import rates_of
from apps.slurm.services import GPU_HOURS_QUANTUM

# Below this utilisation in every measured hour, a job's GPUs count as unused.
UNUSED_UTILISATION_PCT = Decimal(1)

EFFICIENCY_SQL = """
WITH job AS (
    SELECT job.id, job.cluster_id, job.gpus, job.node_names,
           GREATEST(job.start, %(start)s) AS low,
           LEAST(COALESCE(job."end", job.start + job.elapsed_seconds * interval '1 second'),
                 %(end)s) AS high
    FROM slurm_slurmjob AS job
    WHERE job.gpus > 0 AND job.start IS NOT NULL AND job.start < %(end)s
      AND COALESCE(job."end", job.start + job.elapsed_seconds * interval '1 second') > %(start)s
      {job_filter}
),
job_hour AS (
    SELECT job.id AS job_id, job.cluster_id, job.node_names, hour,
           job.gpus * EXTRACT(EPOCH FROM LEAST(job.high, hour + interval '1 hour')
                                         - GREATEST(job.low, hour)) / 3600.0 AS allocated
    FROM job
    CROSS JOIN LATERAL generate_series(date_trunc('hour', job.low),
                                       job.high - interval '1 microsecond',
                                       interval '1 hour') AS hour
    WHERE job.high > job.low
),
-- A hostname is unique within a cluster only: a node meets the GPUs of its own cluster's
-- pools. Nothing records the cluster of a GPU of no pool, so those are not joined.
device AS (
    SELECT device.id, device.pool_id, node.name AS node, node.cluster_id
    FROM (SELECT DISTINCT cluster_id, unnest(node_names) AS name FROM job) AS node
    JOIN telemetry_gpudevice AS device
      ON device.hostname = node.name OR split_part(device.hostname, '.', 1) = node.name
    JOIN pools_pool AS pool ON pool.id = device.pool_id AND pool.cluster_id = node.cluster_id
    WHERE device.gpu_instance_id IS NULL
),
raw AS (
    SELECT sample.device_id, date_trunc('hour', sample.timestamp) AS hour,
           AVG(sample.utilization_pct) AS utilization_pct
    FROM telemetry_gpusample AS sample
    WHERE sample.device_id IN (SELECT id FROM device)
      AND sample.timestamp >= %(start)s AND sample.timestamp < %(end)s
    GROUP BY 1, 2
),
-- A device-hour that raw samples hold is read from them alone, as the pool rollup does.
stored AS (
    SELECT stored.device_id, stored.hour,
           SUM(stored.utilization_pct * stored.samples)
               / NULLIF(SUM(CASE WHEN stored.utilization_pct IS NOT NULL
                                 THEN stored.samples END), 0) AS utilization_pct
    FROM telemetry_gpudevicehour AS stored
    WHERE stored.device_id IN (SELECT id FROM device)
      AND stored.hour >= %(start)s AND stored.hour < %(end)s
      AND NOT EXISTS (SELECT 1 FROM raw
                      WHERE raw.device_id = stored.device_id AND raw.hour = stored.hour)
    GROUP BY 1, 2
),
device_hour AS (
    SELECT device_id, hour,
           LEAST(GREATEST(utilization_pct, 0), 100)::numeric AS utilization_pct
    FROM (SELECT * FROM raw UNION ALL SELECT * FROM stored) AS both_channels
    WHERE utilization_pct IS NOT NULL
),
-- Each job-hour's GPUs on its nodes, before their telemetry: built on its own so that the
-- planner joins the device-hours by (device, hour), never the job-hours by hour alone.
job_device AS MATERIALIZED (
    SELECT job_hour.job_id, job_hour.hour, job_hour.allocated, device.id AS device_id,
           device.pool_id
    FROM job_hour
    CROSS JOIN LATERAL unnest(job_hour.node_names) AS job_node(name)
    JOIN device ON device.node = job_node.name AND device.cluster_id = job_hour.cluster_id
),
share AS (
    SELECT job_device.job_id, job_device.hour, job_device.pool_id,
           device_hour.utilization_pct,
           job_device.allocated
               / COUNT(*) OVER (PARTITION BY job_device.job_id, job_device.hour) AS gpu_hours
    FROM job_device
    JOIN device_hour ON device_hour.device_id = job_device.device_id
                    AND device_hour.hour = job_device.hour
),
priced AS (
    SELECT share.*,
           CASE WHEN share.pool_id IS NOT NULL THEN COALESCE(
               period.effective_price_per_gpu_hour_usd, pool.effective_price_per_gpu_hour_usd)
           END AS price,
           COALESCE(NULLIF(COALESCE(period.currency, pool.currency), ''), %(usd)s) AS currency
    FROM share
    LEFT JOIN pools_pool AS pool ON pool.id = share.pool_id
    LEFT JOIN LATERAL (
        SELECT in_force.effective_price_per_gpu_hour_usd, in_force.currency
        FROM pools_poolpriceperiod AS in_force
        WHERE in_force.pool_id = share.pool_id AND in_force.effective_from <= share.hour
        ORDER BY in_force.effective_from DESC LIMIT 1
    ) AS period ON TRUE
),
measured AS (
    SELECT job_id,
           SUM(gpu_hours) AS measured,
           SUM(gpu_hours * utilization_pct / 100) AS busy,
           MAX(utilization_pct) AS max_utilization_pct,
           SUM(CASE WHEN price IS NULL THEN gpu_hours * (1 - utilization_pct / 100) END)
               AS unpriced_idle
    FROM priced GROUP BY job_id
),
cost AS (
    SELECT job_id,
           ARRAY_AGG(currency || ' ' || month::date || ' ' || amount::text) AS amounts
    FROM (
        SELECT job_id, currency, date_trunc('month', hour) AS month,
               SUM(gpu_hours * (1 - utilization_pct / 100) * price) AS amount
        FROM priced WHERE price IS NOT NULL GROUP BY 1, 2, 3
    ) AS by_month
    GROUP BY job_id
),
allocated AS (
    SELECT job_id, SUM(allocated) AS allocated FROM job_hour GROUP BY job_id
)
SELECT job.id, job.job_id, cluster.name, job.user, job.account, team.id, team.name,
       job.job_name, job.state, job.start, job."end", job.gpus, job.node_list,
       allocated.allocated, COALESCE(measured.measured, 0), COALESCE(measured.busy, 0),
       measured.max_utilization_pct, COALESCE(measured.unpriced_idle, 0), cost.amounts,
       job.cluster_id
FROM allocated
JOIN slurm_slurmjob AS job ON job.id = allocated.job_id
JOIN clusters_cluster AS cluster ON cluster.id = job.cluster_id
LEFT JOIN accounts_team AS team ON team.id = job.team_id
LEFT JOIN measured ON measured.job_id = job.id
LEFT JOIN cost ON cost.job_id = job.id
"""


@dataclass
class Figures:
    """GPU-hours and idle cost, unrounded (rounded once where shown: ``shown``)."""

    allocated: Decimal = Decimal(0)
    measured: Decimal = Decimal(0)
    busy: Decimal = Decimal(0)
    unpriced_idle: Decimal = Decimal(0)
    idle_cost_usd: Decimal = Decimal(0)
    jobs: int = 0

    @property
    def idle(self) -> Decimal:
        return self.measured - self.busy

    @property
    def unmeasured(self) -> Decimal:
        return self.allocated - self.measured

    @property
    def busy_ratio(self) -> Decimal | None:
        """Busy ÷ measured GPU-hours: both over the measured hours; None when none is."""
        return self.busy / self.measured if self.measured else None

    def add(self, other: "Figures") -> None:
        self.allocated += other.allocated
        self.measured += other.measured
        self.busy += other.busy
        self.unpriced_idle += other.unpriced_idle
        self.idle_cost_usd += other.idle_cost_usd
        self.jobs += other.jobs

    def shown(self) -> dict:
        """The figures as pages and files show them: GPU-hours to 0.000001, the cost to
        the cent, the busy ratio unrounded."""

        def hours(value):
            # + 0 turns the -0 of a difference that rounds to nothing into 0.
            return value.quantize(GPU_HOURS_QUANTUM, rounding=ROUND_HALF_UP) + 0

        return {
            "jobs": self.jobs,
            "allocated_gpu_hours": hours(self.allocated),
            "measured_gpu_hours": hours(self.measured),
            "busy_gpu_hours": hours(self.busy),
            "idle_gpu_hours": hours(self.idle),
            "unmeasured_gpu_hours": hours(self.unmeasured),
            "unpriced_idle_gpu_hours": hours(self.unpriced_idle),
            "busy_ratio": self.busy_ratio,
            "idle_cost_usd": money.to_cents(self.idle_cost_usd),
        }


@dataclass
class JobEfficiency:
    pk: int
    job_id: str
    cluster: str
    user: str
    account: str
    team_id: int | None
    team: str
    job_name: str
    state: str
    start: datetime
    end: datetime | None
    gpus: int
    node_list: str
    max_utilization_pct: Decimal | None
    figures: Figures
    cluster_id: int

    @property
    def user_key(self) -> tuple[int, str]:
        """The job's user as ``Efficiency.by_user`` keys it: Slurm user names are a
        cluster's own."""
        return (self.cluster_id, self.user)

    @property
    def stayed_unused(self) -> bool:
        return (
            self.figures.measured > 0
            and self.max_utilization_pct is not None
            and self.max_utilization_pct < UNUSED_UTILISATION_PCT
        )

    def row(self) -> dict:
        return {
            "job_id": self.job_id,
            "cluster": self.cluster,
            "user": self.user,
            "account": self.account,
            "team": self.team,
            "job_name": self.job_name,
            "state": self.state,
            "start": self.start,
            "end": self.end,
            "gpus": self.gpus,
            "node_list": self.node_list,
            **self.figures.shown(),
        }


@dataclass
class Efficiency:
    """A span's jobs and their sums by user and account, keyed by (cluster id, name) as
    Slurm names them per cluster, and by team (its id, None for the jobs of no team);
    the clusters' and teams' names in ``cluster_names`` and ``team_names``."""

    start: datetime
    end: datetime
    jobs: list[JobEfficiency] = field(default_factory=list)
    by_user: dict[tuple[int, str], Figures] = field(default_factory=dict)
    by_account: dict[tuple[int, str], Figures] = field(default_factory=dict)
    by_team: dict[int | None, Figures] = field(default_factory=dict)
    team_names: dict[int | None, str] = field(default_factory=dict)
    cluster_names: dict[int, str] = field(default_factory=dict)
    total: Figures = field(default_factory=Figures)
    # (currency, month) whose rate is missing: those amounts are left out of the cost.
    missing_rates: set[tuple[str, date]] = field(default_factory=set)

    @property
    def unused_jobs(self) -> list[JobEfficiency]:
        """The jobs that stayed under 1 % in every measured hour, most idle first."""
        return sorted(
            (job for job in self.jobs if job.stayed_unused),
            key=lambda job: (-job.figures.idle, job.job_id),
        )

    def ranked_jobs(self) -> list[JobEfficiency]:
        """The largest idle allocations first: by idle cost, then idle GPU-hours."""
        return sorted(
            self.jobs,
            key=lambda job: (-job.figures.idle_cost_usd, -job.figures.idle, job.job_id),
        )


def _amounts(texts) -> list[tuple[str, date, Decimal]]:
    amounts = []
    for text in texts or ():
        currency, month, amount = text.split(" ")
        amounts.append((currency, date.fromisoformat(month), Decimal(amount)))
    return amounts


def job_efficiency(
    start: datetime,
    end: datetime,
    *,
    cluster=None,
    user: str | None = None,
    team=None,
    no_team: bool = False,
) -> Efficiency:
    """The jobs with GPUs that ran in [start, end) (whole UTC hours), each counted inside
    the span only; ``cluster``, ``user`` and ``team`` (or ``no_team``) narrow them."""
    filters, params = [], {"start": start, "end": end, "usd": USD}
    if cluster is not None:
        filters.append("AND job.cluster_id = %(cluster)s")
        params["cluster"] = cluster.pk
    if user is not None:
        filters.append('AND job."user" = %(user)s')
        params["user"] = user
    if team is not None:
        filters.append("AND job.team_id = %(team)s")
        params["team"] = team.pk
    elif no_team:
        filters.append("AND job.team_id IS NULL")
    sql = EFFICIENCY_SQL.format(job_filter="\n      ".join(filters))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    amounts = {row[0]: _amounts(row[18]) for row in rows}
    currencies = {currency for values in amounts.values() for currency, _, _ in values}
    months = {month for values in amounts.values() for _, month, _ in values}
    rates = rates_of(currencies, months)
    report = Efficiency(start=start, end=end)
    for row in rows:
        cost = Decimal(0)
        for currency, month, amount in amounts[row[0]]:
            if currency == USD:
                cost += amount
            elif (currency, month) in rates:
                cost += amount / rates[(currency, month)]
            else:
                report.missing_rates.add((currency, month))
        figures = Figures(
            allocated=row[13],
            measured=row[14],
            busy=row[15],
            unpriced_idle=row[17],
            idle_cost_usd=cost,
            jobs=1,
        )
        pk, job_id, cluster_name, user_name, account, team_id, team_name, *described = row[:13]
        job = JobEfficiency(
            pk,
            job_id,
            cluster_name,
            user_name,
            account,
            team_id,
            team_name or "",
            *described,
            max_utilization_pct=row[16],
            figures=figures,
            cluster_id=row[19],
        )
        report.jobs.append(job)
        report.total.add(figures)
        report.team_names[job.team_id] = job.team
        report.cluster_names[job.cluster_id] = job.cluster
        for groups, key in (
            (report.by_user, job.user_key),
            (report.by_account, (job.cluster_id, job.account)),
            (report.by_team, job.team_id),
        ):
            groups.setdefault(key, Figures()).add(figures)
    return report


def week_start(day: date) -> date:
    """The Monday of ``day``'s ISO week."""
    return day - timedelta(days=day.weekday())


def grouped(figures: dict, names=None, *, clusters=None) -> list[dict]:
    """A row per group (its ``key`` and ``name``), the largest idle cost first. With
    ``clusters`` (cluster id → name) the keys are (cluster id, name), as users and
    accounts are, and each row says its ``cluster``."""
    rows = []
    for key, sums in figures.items():
        if clusters is not None:
            cluster_id, name = key
            rows.append({"key": key, "name": name, "cluster": clusters[cluster_id], **sums.shown()})
            continue
        name = names.get(key, key) if names is not None else key
        rows.append({"key": key, "name": name, **sums.shown()})
    return sorted(
        rows,
        key=lambda row: (
            -row["idle_cost_usd"],
            -row["idle_gpu_hours"],
            str(row["name"]),
            row.get("cluster", ""),
        ),
    )
