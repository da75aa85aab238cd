"""The demo's Slurm cluster (``manage.py seed_demo``): ``campus-slurm``, whose four nodes of
eight A100s are the demo's shared on-premises pool, with jobs for the whole demo history.

Everything goes through the paths a real cluster's data takes:

- hostname rules place the nodes (``hz-a100-01``…``04``) in the pool, and mapping rules
  give the Slurm accounts to the pool's workloads; the notebooks and ad-hoc evaluations
  of ``ml-research`` stay unmapped, for the jobs page to count;
- the nodes' 32 GPUs report what a Prometheus pull of their DCGM metrics stores, one
  ``GpuDeviceHour`` per GPU and hour: a GPU's utilisation is that of the jobs that held
  it during the hour, 0 % while none did, and nothing while its node is down; the pool's
  hours are rolled up from them as a pulled pool's are (apps/telemetry/rollups/hourly.py);
- the jobs are ``sacct --parsable2`` text in the shape of real Slurm 22.05 output
  (demo_data/SOURCES.md), imported by the importer (apps/slurm/services.py): the history
  up to a week before the first seed at once, then one local day at a time, as a daily
  cron posting to the API would; a job still running when one day's text is printed is
  completed by the next day's.

The cluster's days (local time, Asia/Shanghai): the nightly batch fills two nodes from
00:30 for about five hours; the search re-ranker holds a node all week, redeployed each
Monday at 04:00; on weekdays LoRA fine-tunes take those two nodes by day (one ends
``NODE_FAIL``, its node down for two hours, and is resubmitted; one started late is
``PREEMPTED`` by the nightly batch), and the first node carries notebooks, mostly idle,
and evaluations, some of them failing at once. Every Friday evening someone leaves a
two-GPU notebook running, untouched, until its time limit on Monday morning: the
efficiency page's job whose GPUs stayed under 1 %.

Deterministic: the jobs follow a timeline of the cluster's days drawn from seeds of each
day, from the demo history's start on; a job's GPUs, id and figures depend only on the
jobs that started before it. A later seed prints the jobs again (duplicates, or the
running ones completed) and adds the hours after the last stored one.
"""

import random
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from django.db.models import Max

from apps.clusters.models import Cluster
from apps.pools.hours import floor_hour
from apps.slurm.mapping import remap_jobs
from apps.slurm.models import SlurmImport, SlurmMappingRule
from apps.slurm.services import import_sacct
from apps.telemetry.models import GpuDevice, GpuDeviceHour, HostnameRule
from apps.telemetry.pull.tsdb import upsert_device_hours
from apps.telemetry.rollups.hourly import rollup_pool_hours

TEMPLATE = Path(__file__).parent / "demo_data" / "real_job_and_steps.sacct"

DEMO_CLUSTER = {
    "slug": "campus-slurm",
    "name": "Campus Slurm",
    "kind": Cluster.Kind.SLURM,
    "region": "cn-hangzhou",
    "timezone": "Asia/Shanghai",
    "description": (
        "The research data centre's Slurm cluster: four nodes of 8 × A100 shared by the "
        "fine-tunes by day, the nightly batch and the search re-ranker."
    ),
}
# The demo pool whose GPUs are the cluster's nodes (its key in apps/demo/fleet.py).
DEMO_CLUSTER_POOL = "mixed-a100-onprem"
NODES = ("hz-a100-01", "hz-a100-02", "hz-a100-03", "hz-a100-04")
NODE_PATTERN = "hz-a100-*"
GPUS_PER_NODE = 8
NOTEBOOK_NODE, TRAIN_NODES, SERVE_NODE = NODES[0], NODES[1:3], NODES[3]
ZONE = ZoneInfo(DEMO_CLUSTER["timezone"])

# (account, the demo workload its jobs count for); the first rule that matches wins.
ACCOUNT_WORKLOADS = (
    ("support-llm", "mistral-7b-lora-support"),
    ("stores-batch", "nightly-batch-summaries"),
    ("search", "search-rerank-online"),
)

# Slurm user → uid, for "CANCELLED by <uid>".
UIDS = {
    "wliu": 1012,
    "zchen": 1017,
    "jmartin": 1023,
    "akumar": 1031,
    "ywang": 1036,
    "lhu": 1042,
    "svc-stores": 2001,
    "svc-search": 2002,
}
TRAINERS = ("wliu", "zchen")
NOTEBOOK_USERS = ("jmartin", "akumar", "ywang", "lhu", "wliu")
EVALUATORS = ("akumar", "ywang", "lhu")
BENCHMARKS = ("mmlu", "ceval", "gsm8k", "humaneval", "cmmlu")
# What a job holds per GPU (sbatch --cpus-per-gpu, --mem-per-gpu) and the weight of a GPU in
# its billing (TRESBillingWeights="CPU=1.0,GRES/gpu=16.0").
CPUS_PER_GPU, MEMORY_GB_PER_GPU, BILLING_PER_GPU = 16, 120, 16
# The first job id of the demo history's first day is FIRST_JOB_ID + JOB_IDS_PER_DAY × its
# days since JOB_ID_EPOCH: ids rise with the days, as a real cluster's do.
FIRST_JOB_ID, JOB_IDS_PER_DAY = 2_400_000, 60
JOB_ID_EPOCH = date(2024, 1, 1)

# A GPU's board power (A100 SXM 80GB: 400 W TDP) idle and per utilisation point, and the
# DCGM scrape interval a device-hour's sample count follows (one sample per 15 s).
IDLE_POWER_W, POWER_W_PER_PCT = 58.0, 3.42
SAMPLES_PER_HOUR = 240
IDLE_MEMORY_MIB = 512.0
NODE_DOWN = timedelta(hours=2, minutes=10)
# The days before the first seed that a daily import each brought in (the rest came in one).
DAILY_IMPORT_DAYS = 7
ONE_HOUR = timedelta(hours=1)


# Each kind of job's Slurm account, partition and QOS.
KINDS = {
    "train": ("support-llm", "gpu", "normal"),
    "batch": ("stores-batch", "batch", "high"),
    "serve": ("search", "serve", "service"),
    "notebook": ("ml-research", "interactive", "normal"),
    "forgotten": ("ml-research", "interactive", "normal"),
    "eval": ("ml-research", "gpu", "normal"),
}


@dataclass
class DemoJob:
    """A job of the timeline; ``state`` is how it ends (as sacct prints it)."""

    kind: str  # a key of KINDS
    user: str
    name: str
    nodes: tuple[str, ...]
    gpus_per_node: int
    start: datetime
    end: datetime
    state: str
    memory_mib: float
    # (array key, task index) of an array task
    array: tuple[str, int] | None = None
    job_id: str = ""
    job_id_raw: str = ""
    gpu_indices: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * len(self.nodes)

    @property
    def account(self) -> str:
        return KINDS[self.kind][0]

    @property
    def partition(self) -> str:
        return KINDS[self.kind][1]

    @property
    def qos(self) -> str:
        return KINDS[self.kind][2]


# --- the timeline ------------------------------------------------------------------------


def _local(day: date, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime.combine(day, time(hour, minute, second), tzinfo=ZONE)


def _cancelled_by(user: str) -> str:
    return f"CANCELLED by {UIDS[user]}"


def _for(hours: float) -> timedelta:
    return timedelta(hours=hours)


def nightly_batch_start(day: date) -> datetime:
    """When the nightly batch of ``day`` starts (its QOS preempts what holds its nodes)."""
    rng = random.Random(f"slurm-demo:batch:{day.isoformat()}")  # noqa: S311 (demo data)
    return _local(day, 0, 30) + timedelta(seconds=rng.randrange(20, 300))


def _batch_jobs(day: date, rng: random.Random) -> list[DemoJob]:
    def batch(start, hours, state):
        return DemoJob(
            kind="batch",
            user="svc-stores",
            name="summaries-nightly",
            nodes=TRAIN_NODES,
            gpus_per_node=GPUS_PER_NODE,
            start=start,
            end=start + _for(hours),
            state=state,
            memory_mib=73_000.0,
        )

    start = nightly_batch_start(day)
    if day.toordinal() % 13 == 5:
        # Its input was not there yet: it fails, and the rerun an hour later completes.
        failed = batch(start, rng.uniform(0.55, 0.8), "FAILED")
        rerun = _local(day, 1, 45) + timedelta(seconds=rng.randrange(0, 120))
        return [failed, batch(rerun, rng.uniform(4.4, 5.0), "COMPLETED")]
    return [batch(start, rng.uniform(4.6, 5.6), "COMPLETED")]


def _serve_jobs(day: date, rng: random.Random) -> list[DemoJob]:
    if day.isoweekday() != 1:
        return []
    start = _local(day, 4, 0, rng.randrange(5, 40))
    # Redeployed next Monday at 04:00: the old job is cancelled two minutes before.
    end = _local(day + timedelta(days=7), 3, 58, rng.randrange(0, 50))
    state = _cancelled_by("svc-search")
    return [
        DemoJob(
            kind="serve",
            user="svc-search",
            name="rerank-serve",
            nodes=(SERVE_NODE,),
            gpus_per_node=GPUS_PER_NODE,
            start=start,
            end=end,
            state=state,
            memory_mib=38_500.0,
        )
    ]


def _train_jobs(day: date, rng: random.Random) -> tuple[list[DemoJob], list[tuple]]:
    """The day's fine-tunes and the node outages they meet: (jobs, [(node, from, until)])."""
    if day.isoweekday() > 5:
        return [], []

    def lora(node, start, hours, state, user, rank):
        return DemoJob(
            kind="train",
            user=user,
            name=f"mistral7b-lora-tickets-r{rank}",
            nodes=(node,),
            gpus_per_node=GPUS_PER_NODE,
            start=start,
            end=start + _for(hours),
            state=state,
            memory_mib=rng.uniform(66_000, 74_000),
        )

    jobs, outages = [], []
    user, rank = rng.choice(TRAINERS), rng.choice((8, 16, 32))
    start = _local(day, 9) + timedelta(minutes=rng.randrange(0, 90), seconds=rng.randrange(60))
    hours = rng.uniform(6.0, 9.0)
    if day.toordinal() % 9 == 2:
        # The node fails mid-run; the job is resubmitted once the node is back.
        ran_hours = rng.uniform(2.0, 4.0)
        failed = lora(TRAIN_NODES[0], start, ran_hours, "NODE_FAIL", user, rank)
        outages.append((TRAIN_NODES[0], failed.end, failed.end + NODE_DOWN))
        again = failed.end + NODE_DOWN + timedelta(minutes=10, seconds=rng.randrange(60))
        jobs += [failed, lora(TRAIN_NODES[0], again, hours - ran_hours, "COMPLETED", user, rank)]
    else:
        jobs.append(lora(TRAIN_NODES[0], start, hours, "COMPLETED", user, rank))
    user, rank = rng.choice(TRAINERS), rng.choice((8, 16, 32))
    if day.toordinal() % 11 == 3:
        # Started late with a long time limit: the nightly batch's QOS preempts it.
        start = _local(day, 17) + timedelta(minutes=rng.randrange(0, 60))
        preempted = lora(TRAIN_NODES[1], start, 1, "PREEMPTED", user, rank)
        preempted.end = nightly_batch_start(day + timedelta(days=1))
        jobs.append(preempted)
    elif rng.random() < 0.6:
        start = _local(day, 13) + timedelta(minutes=rng.randrange(0, 120))
        jobs.append(lora(TRAIN_NODES[1], start, rng.uniform(5.0, 8.0), "COMPLETED", user, rank))
    return jobs, outages


def _notebook_jobs(day: date, rng: random.Random) -> list[DemoJob]:
    """Notebooks and evaluations on the first node, all ended by 19:00; on Fridays the
    notebook left running from 19:30 to its time limit."""
    if day.isoweekday() > 5:
        return []
    jobs = []
    for _ in range(rng.choice((2, 3, 3, 4))):
        user, gpus = rng.choice(NOTEBOOK_USERS), rng.choice((1, 1, 2))
        start = _local(day, 9) + timedelta(minutes=rng.randrange(0, 240), seconds=rng.randrange(60))
        ending = rng.random()
        if ending < 0.2 and start < _local(day, 10, 30):
            hours, state = 8.0, "TIMEOUT"  # --time=8:00:00
        elif ending < 0.45:
            hours, state = rng.uniform(0.5, 3.0), _cancelled_by(user)
        else:
            hours, state = rng.uniform(1.5, 5.5), "COMPLETED"
        memory_mib = rng.uniform(9_000, 22_000)
        jobs.append(
            DemoJob(
                kind="notebook",
                user=user,
                name="jupyter",
                nodes=(NOTEBOOK_NODE,),
                gpus_per_node=gpus,
                start=start,
                end=start + _for(hours),
                state=state,
                memory_mib=memory_mib,
            )
        )
    for _ in range(rng.choice((1, 1, 2))):
        user, benchmark = rng.choice(EVALUATORS), rng.choice(BENCHMARKS)
        start = _local(day, 10) + timedelta(
            minutes=rng.randrange(0, 300), seconds=rng.randrange(60)
        )
        if rng.random() < 0.2:
            hours, state = rng.uniform(0.05, 0.15), "FAILED"  # a wrong path, a CUDA OOM
        else:
            hours, state = rng.uniform(1.0, 3.0), "COMPLETED"
        jobs.append(
            DemoJob(
                kind="eval",
                user=user,
                name=f"eval-{benchmark}",
                nodes=(NOTEBOOK_NODE,),
                gpus_per_node=4,
                start=start,
                end=start + _for(hours),
                state=state,
                memory_mib=52_000.0,
            )
        )
    if day.isoweekday() in (2, 4):
        # A sweep as an array of three 2-GPU tasks (sbatch --array=0-2).
        user = rng.choice(EVALUATORS)
        start = _local(day, 15) + timedelta(minutes=rng.randrange(0, 60))
        for task in range(3):
            end = start + _for(rng.uniform(0.7, 1.6))
            array = (f"{day.isoformat()}:sweep", task)
            jobs.append(
                DemoJob(
                    kind="eval",
                    user=user,
                    name="eval-sweep",
                    nodes=(NOTEBOOK_NODE,),
                    gpus_per_node=2,
                    start=start,
                    end=end,
                    state="COMPLETED",
                    memory_mib=44_000.0,
                    array=array,
                )
            )
    if day.isoweekday() == 5:
        user = rng.choice(NOTEBOOK_USERS)
        start = _local(day, 19, 30) + timedelta(minutes=rng.randrange(0, 60))
        # --time=2-12:00:00, and nobody comes back before it runs out.
        jobs.append(
            DemoJob(
                kind="forgotten",
                user=user,
                name="jupyter",
                nodes=(NOTEBOOK_NODE,),
                gpus_per_node=2,
                start=start,
                end=start + _for(60),
                state="TIMEOUT",
                memory_mib=11_264.0,
            )
        )
    return jobs


def _fits(busy, job) -> dict[str, tuple[int, ...]] | None:
    """The lowest GPU indices of each of the job's nodes free over its run, or None."""
    chosen = {}
    for node in job.nodes:
        free = [
            index
            for index in range(GPUS_PER_NODE)
            if all(job.end <= begin or until <= job.start for begin, until in busy[node][index])
        ]
        if len(free) < job.gpus_per_node:
            return None
        chosen[node] = tuple(free[: job.gpus_per_node])
    return chosen


def demo_timeline(first: datetime, until: datetime) -> tuple[list[DemoJob], list[tuple]]:
    """The jobs that run in [first, until) with their GPUs and ids, and the node outages:
    a job that finds no free GPU on its node is left out (it would have waited). Jobs
    started before ``first`` still running then are in, as sacct prints them."""
    candidates, outages = [], []
    # The longest job (the re-ranker's week) began at most this long before ``first``.
    day = first.astimezone(ZONE).date() - timedelta(days=7)
    while _local(day, 0) < until:
        rng = random.Random(f"slurm-demo:{day.isoformat()}")  # noqa: S311 (demo data)
        train, down = _train_jobs(day, rng)
        candidates += _batch_jobs(day, rng) + _serve_jobs(day, rng) + train
        candidates += _notebook_jobs(day, rng)
        outages += down
        day += timedelta(days=1)
    candidates = [job for job in candidates if job.end > first and job.start < until]
    # Stable: jobs starting at the same instant keep the order they were drawn in.
    candidates.sort(key=lambda job: job.start)
    busy = {node: [[] for _ in range(GPUS_PER_NODE)] for node in NODES}
    for node, begin, end in outages:
        for index in range(GPUS_PER_NODE):
            busy[node][index].append((begin, end))
    placed = []
    for job in candidates:
        indices = _fits(busy, job)
        if indices is None:
            continue
        job.gpu_indices = indices
        for node, chosen in indices.items():
            for index in chosen:
                busy[node][index].append((job.start, job.end))
        placed.append(job)
    _number(placed, first)
    return placed, outages


def _number(jobs: list[DemoJob], first: datetime) -> None:
    """Job ids in submission order; an array's tasks share its id (``id_task``), each
    task but the last with a raw id of its own, as Slurm numbers them."""
    next_id = FIRST_JOB_ID + (first.astimezone(ZONE).date() - JOB_ID_EPOCH).days * JOB_IDS_PER_DAY
    arrays = defaultdict(list)
    for job in jobs:
        if job.array is not None:
            arrays[job.array[0]].append(job)
    for job in jobs:
        if job.job_id:
            continue
        if job.array is None:
            job.job_id = job.job_id_raw = str(next_id)
            next_id += 1
            continue
        tasks = arrays[job.array[0]]
        for position, task in enumerate(tasks):
            task.job_id = f"{next_id}_{task.array[1]}"
            last = position == len(tasks) - 1
            task.job_id_raw = str(next_id if last else next_id + 1 + position)
        next_id += len(tasks)


# --- what the GPUs report ----------------------------------------------------------------


def utilization_pct(job: DemoJob, hour: datetime, relative: dict) -> float:
    """The job's GPUs' mean utilisation in ``hour``: steady for training and batch, the
    day's request curve for the re-ranker, mostly idle for notebooks."""
    rng = random.Random(f"{job.job_id}:{hour:%Y-%m-%dT%H}")  # noqa: S311 (demo data)
    wobble = rng.uniform(-1, 1)
    if job.kind == "train":
        # The first hour loads the model and the data.
        return 58.0 + 10 * wobble if hour <= job.start else 89.0 + 5 * wobble
    if job.kind == "batch":
        return 77.0 + 7 * wobble
    if job.kind == "serve":
        local = hour.astimezone(ZONE)
        shape = relative.get((local.isoweekday(), local.hour), 1.0)
        return max(0.0, min(100.0, 12.0 + 26.0 * min(shape, 2.8) + 4 * wobble))
    if job.kind == "notebook":
        return 18.0 + 20 * abs(wobble) if rng.random() < 0.3 else 1.5 * abs(wobble)
    if job.kind == "eval":
        return 64.0 + 9 * wobble
    return 0.0  # forgotten


def _hours(begin: datetime, end: datetime):
    hour = floor_hour(begin)
    while hour < end:
        yield hour, (min(end, hour + ONE_HOUR) - max(begin, hour)).total_seconds()
        hour += ONE_HOUR


def device_hours(jobs, outages, devices, start, end, relative, now) -> list[tuple]:
    """Every demo GPU's hours in [start, end) as a TSDB pull stores them (rows for
    ``upsert_device_hours``): utilisation = Σ over the jobs holding the GPU of seconds
    held × their utilisation ÷ the seconds the node was up (0 % when idle); samples every
    15 s while up; no row while it is down."""
    held = defaultdict(float)  # (node, index, hour) → Σ seconds × utilisation
    memory = {}
    for job in jobs:
        for hour, seconds in _hours(max(job.start, start), min(job.end, end)):
            pct = utilization_pct(job, hour, relative)
            for node, indices in job.gpu_indices.items():
                for index in indices:
                    held[(node, index, hour)] += seconds * pct
                    memory[(node, index, hour)] = max(
                        memory.get((node, index, hour), 0.0), job.memory_mib
                    )
    down = defaultdict(float)  # (node, hour) → seconds down
    for node, begin, until in outages:
        for hour, seconds in _hours(max(begin, start), min(until, end)):
            down[(node, hour)] += seconds
    rows = []
    for hour, _ in _hours(start, end):
        pulled_at = min(hour + ONE_HOUR, now)
        for node in NODES:
            up_seconds = 3600.0 - down[(node, hour)]
            if up_seconds <= 0:
                continue
            for index in range(GPUS_PER_NODE):
                pct = round(held[(node, index, hour)] / up_seconds, 2)
                power_w = round(IDLE_POWER_W + POWER_W_PER_PCT * pct, 1)
                rows.append(
                    (
                        devices[(node, index)].pk,
                        hour,
                        "",  # no pod: Slurm runs the jobs, not Kubernetes
                        "",
                        "",
                        round(SAMPLES_PER_HOUR * up_seconds / 3600),
                        pct,
                        memory.get((node, index, hour), IDLE_MEMORY_MIB),
                        power_w * up_seconds / 3600 / 1000,
                        power_w,
                        None,  # no pull source: the demo stores them itself
                        pulled_at,
                    )
                )
    return rows


# --- sacct text --------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """How Slurm 22.05 printed a job that ended one way (demo_data/): its row and its
    steps' rows, each as the columns it printed."""

    job: dict
    steps: tuple[dict, ...]


def sacct_shapes() -> tuple[list[str], dict[str, Shape]]:
    """(the header's columns, ending → its shape) from the real rows in demo_data/."""
    lines = TEMPLATE.read_text(encoding="utf-8").splitlines()
    columns = lines[0].split("|")
    shapes, job, steps = {}, None, []
    for line in lines[1:]:
        row = dict(zip(columns, line.split("|"), strict=True))
        if "." not in row["JobID"]:
            if job is not None:
                shapes[job["State"].split(" ")[0]] = Shape(job, tuple(steps))
            job, steps = row, []
        else:
            steps.append(row)
    shapes[job["State"].split(" ")[0]] = Shape(job, tuple(steps))
    # Endings the real rows lack take the nearest one's rows: the controller ended them.
    shapes["NODE_FAIL"] = shapes["PREEMPTED"] = shapes["CANCELLED"]
    shapes["RUNNING"] = shapes["COMPLETED"]
    return columns, shapes


def _elapsed(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def _node_list(nodes: tuple[str, ...]) -> str:
    """``hz-a100-[02-03]`` for consecutive nodes, as sacct compresses them."""
    if len(nodes) == 1:
        return nodes[0]
    prefix = nodes[0].rsplit("-", 1)[0]
    return f"{prefix}-[{nodes[0].rsplit('-', 1)[1]}-{nodes[-1].rsplit('-', 1)[1]}]"


def _tres(template: str, values: dict) -> str:
    """The template row's TRES items, in its order, with the demo job's amounts."""
    if not template:
        return ""
    return ",".join(
        f"{item.split('=')[0]}={values[item.split('=')[0]]}" for item in template.split(",")
    )


def job_lines(job: DemoJob, at: datetime, columns, shapes) -> list[str]:
    """The job's rows as sacct prints them at ``at``: running, or as it ended."""
    running = job.end > at
    state = "RUNNING" if running else job.state
    shape = shapes[state.split(" ")[0]]
    end = at if running else job.end
    seconds = int((end - job.start).total_seconds())
    local = "%Y-%m-%dT%H:%M:%S"
    times = {
        "Start": job.start.astimezone(ZONE).strftime(local),
        "End": "Unknown" if running else job.end.astimezone(ZONE).strftime(local),
        "Elapsed": _elapsed(seconds),
        "ElapsedRaw": str(seconds),
    }

    def tres(gpus, nodes, memory_gb):
        cpus = CPUS_PER_GPU * gpus
        return {
            "billing": cpus + BILLING_PER_GPU * gpus,
            "cpu": cpus,
            "gres/gpu:a100": gpus,
            "gres/gpu": gpus,
            "mem": f"{memory_gb}G",
            "node": nodes,
        }

    whole = tres(job.gpus, len(job.nodes), MEMORY_GB_PER_GPU * job.gpus)
    first_node = tres(job.gpus_per_node, 1, MEMORY_GB_PER_GPU * job.gpus_per_node)
    lines = []
    for template in (shape.job, *shape.steps):
        step = template["JobID"].partition(".")[2]
        # The batch script runs on the first node only.
        on_first = step == "batch"
        values = {
            "JobID": job.job_id + (f".{step}" if step else ""),
            "JobIDRaw": job.job_id_raw + (f".{step}" if step else ""),
            "User": job.user,
            "Account": job.account,
            "Partition": job.partition,
            "QOS": job.qos,
            "JobName": step or job.name,
            "State": state if not step or running else template["State"],
            "NNodes": "1" if on_first else str(len(job.nodes)),
            "NodeList": job.nodes[0] if on_first else _node_list(job.nodes),
            "AllocTRES": _tres(template["AllocTRES"], first_node if on_first else whole),
            "ReqTRES": _tres(template["ReqTRES"], whole),
            **times,
        }
        # A column the real row left blank stays blank (a step's user, partition, QOS).
        lines.append("|".join(values[name] if template[name] else "" for name in columns))
    return lines


def sacct_text(jobs, since: datetime, at: datetime, columns, shapes) -> str:
    """``sacct --starttime=<since> --endtime=now`` run at ``at``: every job that ran in
    the window, in job id order, with its steps."""
    printed = [job for job in jobs if job.start < at and job.end > since]
    printed.sort(key=lambda job: (int(job.job_id.split("_")[0]), job.job_id))
    lines = ["|".join(columns)]
    for job in printed:
        lines += job_lines(job, at, columns, shapes)
    return "\n".join(lines) + "\n"


def import_windows(first: datetime, last_import_at: datetime | None, now: datetime) -> list:
    """[(since, at)] of the imports up to ``now``: the cluster was connected with one
    import of its history up to a week before the first seed, then a daily cron posted
    each local day's jobs (the last window ends at ``now``). None while the last import
    is of this hour."""
    if last_import_at is not None and floor_hour(now) <= floor_hour(last_import_at):
        return []
    since, windows = last_import_at or first, []
    if last_import_at is None:
        connected = _local(now.astimezone(ZONE).date() - timedelta(days=DAILY_IMPORT_DAYS), 0)
        if connected > since:
            windows.append((since, connected))
            since = connected
    midnight = _local(since.astimezone(ZONE).date() + timedelta(days=1), 0)
    while midnight < now:
        windows.append((since, midnight))
        since, midnight = midnight, midnight + timedelta(days=1)
    windows.append((since, now))
    return windows


# --- seeding -----------------------------------------------------------------------------


@dataclass
class SlurmDemoResult:
    imports: int = 0
    jobs_added: int = 0
    jobs_updated: int = 0
    pool_hours: int = 0


def _device_key(node: str, index: int) -> str:
    # Fixed per GPU, like the UUID a board keeps: a later seed finds the same devices.
    return "GPU-" + str(
        uuid.uuid5(uuid.NAMESPACE_URL, f"https://demo.gpufleet.invalid/{node}/{index}")
    )


def seed_demo_devices(pool, first_seen: datetime, now: datetime) -> dict:
    """The nodes' GPUs in ``pool`` (made once, placed by the hostname rule): (node, index)
    → device, those still in the pool only (a GPU someone moved is no longer fed)."""
    keys = {
        (node, index): _device_key(node, index) for node in NODES for index in range(GPUS_PER_NODE)
    }
    stored = set(GpuDevice.objects.filter(key__in=keys.values()).values_list("key", flat=True))
    GpuDevice.objects.bulk_create(
        GpuDevice(
            key=key,
            uuid=key,
            hostname=node,
            gpu_index=index,
            model_name="NVIDIA A100-SXM4-80GB",
            driver_version=pool.driver_version,
            pool=pool,
            assignment=GpuDevice.Assignment.RULE,
            first_seen_at=first_seen,
            last_seen_at=now,
        )
        for (node, index), key in keys.items()
        if key not in stored
    )
    devices = GpuDevice.objects.filter(key__in=keys.values(), pool=pool)
    devices.filter(last_seen_at__lt=now).update(last_seen_at=now)
    by_key = {device.key: device for device in devices}
    return {slot: by_key[key] for slot, key in keys.items() if key in by_key}


def seed_demo_rules(cluster, pool, workloads: dict) -> int:
    """The hostname rule of the nodes and the mapping rules the demo knows by their
    pattern, made when missing; returns how many mapping rules were made."""
    if not pool.hostname_rules.filter(hostname_pattern=NODE_PATTERN).exists():
        HostnameRule.objects.create(pool=pool, hostname_pattern=NODE_PATTERN)
    wanted = [(account, workloads[key]) for account, key in ACCOUNT_WORKLOADS if key in workloads]
    made = 0
    account = SlurmMappingRule.Field.ACCOUNT
    for pattern, workload in wanted:
        rules = SlurmMappingRule.objects.filter(cluster=cluster, field=account, pattern=pattern)
        if not rules.exists():
            SlurmMappingRule.objects.create(
                cluster=cluster, field=account, pattern=pattern, workload=workload
            )
            made += 1
    return made


def seed_slurm_demo(
    *, cluster, pool, workloads: dict, user, history_start: datetime, now: datetime, relative
) -> SlurmDemoResult:
    """Bring ``cluster`` (the demo's) up to ``now``: its rules, its GPUs' hours after the
    last stored one and the pool's hours rolled up from them, and the jobs of each local
    day since its last import. ``workloads`` maps the demo's keys to its workloads;
    ``relative`` is the request curve the re-ranker's GPUs follow ((ISO weekday, hour) →
    demand ÷ its mean)."""
    result = SlurmDemoResult()
    if cluster.archived_at is not None:
        return result  # retired by hand: it takes no more imports
    seed_demo_rules(cluster, pool, workloads)
    devices = seed_demo_devices(pool, history_start, now)
    end = floor_hour(now) + ONE_HOUR
    jobs, outages = demo_timeline(history_start, end)
    last_hour = GpuDeviceHour.objects.filter(device__in=list(devices.values())).aggregate(
        last=Max("hour")
    )["last"]
    start = history_start if last_hour is None else last_hour + ONE_HOUR
    if devices and start < end:
        upsert_device_hours(device_hours(jobs, outages, devices, start, end, relative, now))
        result.pool_hours = rollup_pool_hours(pool.pk, start, end)
    last_import_at = SlurmImport.objects.filter(cluster=cluster).aggregate(last=Max("imported_at"))[
        "last"
    ]
    columns, shapes = sacct_shapes()
    for since, at in import_windows(history_start, last_import_at, now):
        text = sacct_text(jobs, since, at, columns, shapes)
        imported = import_sacct(cluster, text, user=user, source=SlurmImport.Source.API, now=at)
        result.imports += 1
        result.jobs_added += imported.accepted
        result.jobs_updated += imported.updated
    return result


def seed_slurm_teams(cluster) -> int:
    """Once the demo's workloads have their teams: the cluster's jobs mapped again (a
    job's team is its workload's when it is imported, before the teams existed). Returns
    how many jobs changed."""
    if cluster.archived_at is not None:
        return 0
    return remap_jobs(cluster=cluster)
