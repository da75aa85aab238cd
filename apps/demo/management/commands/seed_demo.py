"""``manage.py seed_demo``: a small, believable GPU fleet and one demo user per role.

It writes only the demo's own objects. Each object it makes is marked (DemoObject,
apps/demo/registry.py) under the demo's key for it; later runs refresh the marked objects
in place and nothing else, so pools, devices, telemetry, workloads, teams, budgets and
users the user made beside the demo are never written to. A user's object that holds a
slug, name or username the demo wants keeps it, and the demo's object is named apart
("train-h100-sh-demo", "Training · H100 SXM · Shanghai (demo)"); the command says so.

Idempotent and deterministic: no randomness decides what is created, and the clock only
how far the demo usage reaches (up to the current hour; each run extends it, a second run
within the hour adds nothing). Demo pools are in service from the start of their usage
history. Cloud prices are the Lambda on-demand list prices in SkyPilot's catalog
(tests/data/gpu-specs/), per GPU; owned pools carry purchase and running costs from which
the effective price follows.
"""

import argparse
from datetime import date, datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Team
from apps.backups.demo import seed_backups_demo
from apps.bills.demo import seed_bills_demo
from apps.catalog.models import GpuModel, ModelArchitecture
from apps.catalog.seed import load_gpu_models, load_model_architectures
from apps.clusters.models import Cluster
from apps.core.roles import FINANCE, OPS, PROCUREMENT, TECHNICAL_LEAD
from apps.currencies.models import ExchangeRate
from apps.demo.fleet import (
    DEMO_CNY_PER_USD,
    DEMO_POOLS,
    DEMO_RATE_SOURCE,
    DEMO_WORKLOADS,
    PRICE_CUT_POOL,
    PRICE_CUT_USD,
)
from apps.demo.registry import APART_NAME, APART_SLUG, DemoRegistry
from apps.demo.training import DEMO_WORKLOAD as TRAINING_DEMO_WORKLOAD
from apps.demo.training import seed_training_demo
from apps.pilots.demo import DEMO_WORKLOAD as PILOT_DEMO_WORKLOAD
from apps.pilots.demo import seed_pilots_demo
from apps.pools.hours import floor_hour
from apps.pools.models import (
    Pool,
    PoolPricePeriod,
    Workload,
)
from apps.pools.prices import PERIOD_FIELDS, ensure_first_period
from apps.pools.services import save_pool
from apps.procurement.demo import SCENARIO_NAME, SCENARIO_SLUG, seed_procurement_demo
from apps.procurement.models import Scenario
from apps.reports.demo import demo_history_start, load_relative_demand, seed_usage_demo
from apps.reports.models import ClosedMonth
from apps.showback.demo import BUDGET_NOTE, TEAMS, seed_showback_demo, size_budgets
from apps.showback.models import Budget
from apps.showback.months import last_complete_month
from apps.showback.periods import close_month
from apps.slurm.demo import DEMO_CLUSTER, DEMO_CLUSTER_POOL, seed_slurm_demo, seed_slurm_teams

DEMO_PASSWORD = "gpufleet-demo"  # noqa: S105 - printed for the demo on purpose
# The cloud pool whose provider's bill for the last full month the demo imports.
DEMO_BILLED_POOL = "train-burst-h100-us"
# The demo's closed month's key in its registry.
DEMO_CLOSED_MONTH = "closed-month"

DEMO_USERS = (
    # username, full name, role (None = superuser)
    ("lead", "Lena Lead", TECHNICAL_LEAD.name),
    ("ops", "Oskar Ops", OPS.name),
    ("procurement", "Priya Procurement", PROCUREMENT.name),
    ("finance", "Fiona Finance", FINANCE.name),
    ("lead-serving", "Sam Serving", TECHNICAL_LEAD.name),
    ("admin", "Ada Admin", None),
)


class Command(BaseCommand):
    help = (
        "Load the demo fleet and one demo user per role, or refresh the demo's own objects "
        "(safe to run repeatedly: nothing the user made is written to)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--without-teams",
            action="store_true",
            help="Leave every pool and workload shared: no teams, no budgets.",
        )
        parser.add_argument(
            "--now",
            type=_instant,
            help="Seed as of this instant (ISO 8601 with its UTC offset, e.g. "
            "2026-11-20T10:30:00+00:00) instead of the clock's: the usage reaches its hour.",
        )

    def handle(self, *args, **options):
        now = options.get("now") or timezone.now()
        # Everything or nothing: a demo half seeded is worse than none.
        with transaction.atomic():
            registry = DemoRegistry.load()
            if registry.is_empty:
                _adopt_earlier_demo(registry)
            fresh = registry.is_empty
            users = self.seed_users(registry)
            history_start = demo_history_start(registry.all_of(Pool).values(), now)
            seed_exchange_rates(history_start, now)
            cluster, pools, workloads = self.seed_fleet(
                registry, owner=users["lead"], in_service_from=history_start, now=now
            )
            pool_hours, workload_hours = seed_usage_demo(
                pools=pools, workloads=workloads, now=now, measured={DEMO_CLUSTER_POOL}
            )
            # Before the teams: their budgets are sized from spend the jobs split.
            slurm = seed_slurm_demo(
                cluster=cluster,
                pool=pools[DEMO_CLUSTER_POOL],
                workloads=workloads,
                user=users["ops"],
                history_start=history_start,
                now=now,
                relative=load_relative_demand(),
            )
            seed_backups_demo(workloads=workloads, ops=users["ops"], now=now)
            seed_training_demo(workloads.get(TRAINING_DEMO_WORKLOAD))
            seed_pilots_demo(workloads.get(PILOT_DEMO_WORKLOAD), user=users["lead"])
            scenario = registry.get(Scenario, SCENARIO_SLUG)
            scenario = seed_procurement_demo(
                workload=workloads.get("chat-api-asia"),
                l40s_pool=pools.get("infer-l40s-hk"),
                h100_pool=pools.get("infer-h100-bj"),
                scenario=scenario,
                **({} if scenario else _identity(registry, Scenario, SCENARIO_SLUG, SCENARIO_NAME)),
            )
            if scenario is not None:
                registry.mark(scenario, SCENARIO_SLUG)
            budgets = {}
            if not options.get("without_teams"):
                budgets = self.seed_teams(registry, users, pools, workloads, now)
                seed_slurm_teams(cluster)
            closed = self.seed_closed_month(registry, users["finance"], now)
            seed_bills_demo(pools.get(DEMO_BILLED_POOL), last_complete_month(now).date())
        untouched = _user_objects(registry)
        self.stdout.write(
            f"Demo {'loaded' if fresh else 'refreshed'}: {len(pools)} pools, "
            f"{len(workloads)} workloads, {len(users)} users"
            + (f", {len(budgets)} budgets" if budgets else "")
            + (f", {closed.month:%Y-%m} closed" if closed else "")
            + f"; {pool_hours + slurm.pool_hours:,} pool-hours and {workload_hours:,} "
            f"workload-hours of usage added (from {history_start:%Y-%m-%d %H:%M} UTC up to "
            f"this hour); {cluster.name}: {slurm.jobs_added:,} Slurm jobs added and "
            f"{slurm.jobs_updated:,} updated in {slurm.imports:,} imports. "
            + (
                f"Left as they are: {untouched}, not the demo's."
                if untouched
                else "No pools, workloads, teams or users of anyone else's beside it."
            )
        )
        apart = ", ".join(f"{noun} {key} → {name}" for noun, key, name in registry.named_apart)
        self.stdout.write(
            f"Demo logins (password {DEMO_PASSWORD}): "
            + ", ".join(
                f"{users[username].username} ({role or 'superuser'})"
                for username, _, role in DEMO_USERS
            )
            + "."
            + (f" Named apart from yours, which keep their names: {apart}." if apart else "")
        )

    def seed_users(self, registry):
        user_model = get_user_model()
        users = {}
        for username, full_name, role in DEMO_USERS:
            first_name, last_name = full_name.split(" ", 1)
            user = registry.get(user_model, username)
            if user is None:
                name = registry.free_value(user_model, "username", username, APART_SLUG, 150)
                if name != username:
                    registry.named_apart.append(("user", username, name))
                user = user_model(
                    username=name,
                    first_name=first_name,
                    last_name=last_name,
                    email=f"{username}@example.com",
                )
                user.set_password(DEMO_PASSWORD)
                user.save()
                registry.mark(user, username)
            if user.is_superuser != (role is None) or user.is_staff != (role is None):
                user.is_superuser = user.is_staff = role is None
                user.save()
            if role is not None:
                user.groups.set([Group.objects.get(name=role)])
            users[username] = user
        return users

    def seed_fleet(self, registry, *, owner, in_service_from, now):
        """The demo's Slurm cluster, pools and workloads, made or refreshed; (cluster,
        key → pool, key → workload)."""
        # The catalog arrives with its data migration; restore rows missing since (e.g.
        # deleted by hand, or flushed by a test) without touching edited ones.
        load_gpu_models(GpuModel, overwrite=False)
        load_model_architectures(ModelArchitecture, overwrite=False)
        gpu_models = {gpu.slug: gpu for gpu in GpuModel.objects.all()}
        architectures = {model.slug: model for model in ModelArchitecture.objects.all()}
        # Made before the pools: its pool joins it when made, with one history record.
        cluster = _save_demo_object(registry, Cluster, DEMO_CLUSTER)
        pools = {}
        for spec in DEMO_POOLS:
            values = {
                **spec,
                "gpu_model": gpu_models[spec["gpu_model"]],
                "owner": owner,
                # Charged from the first demo hour on, not from when the command ran.
                "in_service_from": in_service_from,
            }
            if spec["slug"] == DEMO_CLUSTER_POOL:
                values["cluster"] = cluster
            pools[spec["slug"]] = _save_demo_object(registry, Pool, values, save=save_pool)
        if (pool := pools.get(PRICE_CUT_POOL)) is not None:
            seed_price_cut(pool, in_service_from, now)
        workloads = {}
        for spec in DEMO_WORKLOADS:
            values = {**spec, "pool": pools[spec["pool"]], "owner": owner}
            values["model_architecture"] = architectures[values.pop("model")]
            workloads[spec["slug"]] = _save_demo_object(registry, Workload, values)
        _date_back_first_records(workloads.values(), in_service_from)
        return cluster, pools, workloads

    def seed_closed_month(self, registry, finance, now):
        """The previous full month, closed by the demo's Finance user: once, and only over
        a fleet of the demo's own (closing freezes every pool's figures). A month the
        user closed or reopened since is left as it is."""
        month = last_complete_month(now).date()
        earlier = registry.get(ClosedMonth, DEMO_CLOSED_MONTH)
        if earlier is not None:
            return earlier
        existing = ClosedMonth.objects.filter(month=month).first()
        if existing is not None:
            # Closed by the demo's Finance user: an earlier seed's, which marked nothing.
            if existing.closed_by_id == finance.pk:
                registry.mark(existing, DEMO_CLOSED_MONTH)
                return existing
            return None
        demo_pools = list(registry.ids.get(Pool, {}).values())
        if Pool.objects.exclude(pk__in=demo_pools).exists():
            return None
        closed = close_month(month, finance, now=now)
        registry.mark(closed, DEMO_CLOSED_MONTH)
        return closed

    def seed_teams(self, registry, users, pools, workloads, now):
        teams = {}
        for key, name, description, *_owned in TEAMS:
            teams[key] = _save_demo_object(
                registry, Team, {"slug": key, "name": name, "description": description}
            )
        earlier = {
            key: budget
            for key in ("team:" + key for key, *_ in TEAMS)
            if (budget := registry.get(Budget, key)) is not None
        }
        earlier |= {
            key: budget
            for key in ("pool:" + key for key in pools)
            if (budget := registry.get(Budget, key)) is not None
        }
        # Budgets an earlier seed_demo sized from its first days' spend, never edited since:
        # sized again, once, as new ones are.
        size_budgets({key: earlier[key] for key in registry.to_resize if key in earlier}, now)
        made = seed_showback_demo(
            teams=teams, pools=pools, workloads=workloads, users=users, budgets=earlier, now=now
        )
        for key, budget in made.items():
            registry.mark(budget, key)
        return earlier | made


def seed_exchange_rates(history_start: datetime, now: datetime) -> int:
    """A CNY rate for every month of the demo's history that has none (a rate someone
    recorded is kept): the Shanghai pool is priced in yuan. One query and one insert."""
    months, cursor = [], date(history_start.year, history_start.month, 1)
    while cursor <= now.date():
        months.append(cursor)
        cursor = date(cursor.year + cursor.month // 12, cursor.month % 12 + 1, 1)
    recorded = set(
        ExchangeRate.objects.filter(currency="CNY", month__in=months).values_list(
            "month", flat=True
        )
    )
    rates = [
        ExchangeRate(
            month=month,
            currency="CNY",
            units_per_usd=DEMO_CNY_PER_USD[(month.year * 12 + month.month) % len(DEMO_CNY_PER_USD)],
            source=DEMO_RATE_SOURCE,
        )
        for month in months
        if month not in recorded
    ]
    ExchangeRate.objects.bulk_create(rates)
    return len(rates)


def seed_price_cut(pool: Pool, history_start: datetime, now: datetime) -> None:
    """Give the on-demand burst pool the price cut of ``PRICE_CUT_USD`` halfway through
    its history, so reports that span it price each hour at the price in force then.

    Only on a pool without price periods: a period once recorded, by this or by a user,
    is history and stays as it is."""
    if pool.price_periods.exists():
        return
    current_usd = pool.on_demand_price_per_gpu_hour_usd
    before_usd, after_usd = PRICE_CUT_USD
    if current_usd != after_usd:
        return  # someone priced the demo pool otherwise: no cut of theirs to invent
    pool.on_demand_price_per_gpu_hour_usd = before_usd
    pool.refresh_effective_price()
    ensure_first_period(pool)
    # Back to the stored prices, unsaved: the pool's own row and its history are those
    # of a pool that has paid the list price since the cut.
    pool.on_demand_price_per_gpu_hour_usd = current_usd
    pool.refresh_effective_price()
    cut_at = floor_hour(history_start + (floor_hour(now) - history_start) / 2)
    PoolPricePeriod.objects.create(
        pool=pool,
        effective_from=max(cut_at, floor_hour(history_start)),
        **{name: getattr(pool, name) for name in PERIOD_FIELDS},
    )


def _date_back_first_records(workloads, since: datetime) -> None:
    """The demo's workloads are as first seeded since its history starts: the cost report
    charges a workload for the hours its status history shows it running
    (apps/pools/running.py), so a running one carries its share of every demo hour and a
    planned or paused one none. A first record already at or before ``since`` stays."""
    history = Workload.history.model
    for workload in workloads:
        first = history.objects.filter(id=workload.id).order_by("history_date").first()
        if first is not None and first.history_date > since:
            history.objects.filter(pk=first.pk).update(history_date=since)


def _instant(text: str) -> datetime:
    try:
        instant = datetime.fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 date and time, e.g. 2026-11-20T10:30:00+00:00."
        ) from error
    if instant.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no UTC offset: add one, e.g. {text}+00:00.")
    return instant


def _identity(registry, model, slug, name) -> dict:
    """The slug and name a new demo object of ``model`` takes: the demo's own, or, when a
    user's object holds either, both named apart, so the demo's reads as the demo's in
    every list."""
    if registry.free_value(model, "slug", slug, APART_SLUG, 100) == slug and (
        registry.free_value(model, "name", name, APART_NAME, 100) == name
    ):
        return {"slug": slug, "name": name}
    apart = {
        "slug": registry.free_value(model, "slug", slug, APART_SLUG, 100, apart=True),
        "name": registry.free_value(model, "name", name, APART_NAME, 100, apart=True),
    }
    registry.named_apart.append((model._meta.verbose_name, slug, apart["slug"]))
    return apart


def _save_demo_object(registry, model, values, *, save=None):
    """Refresh the demo's object under ``values["slug"]`` (its slug and name stay as they
    are), or make it, named apart from a user's object that holds the slug or name; saved
    (by ``save(instance)``, the model's service, when it has one) only when something
    differs, so running the command again adds no entries to the objects' change
    history."""
    key = values["slug"]
    instance = registry.get(model, key)
    fields = {name: value for name, value in values.items() if name not in ("slug", "name")}
    if instance is None:
        instance = model(**_identity(registry, model, key, values["name"]))
    for name, value in fields.items():
        setattr(instance, name, value)
    save = save or model.save
    if instance.pk is None:
        save(instance)
        registry.mark(instance, key)
    elif _differs_from_stored(instance):
        save(instance)
    return instance


def _differs_from_stored(instance) -> bool:
    stored = type(instance).objects.get(pk=instance.pk)
    return any(
        getattr(stored, field.attname) != getattr(instance, field.attname)
        for field in instance._meta.concrete_fields
        if field.name not in ("created_at", "updated_at")
    )


def _user_objects(registry) -> str:
    """What of the user's the database holds beside the demo, in words ("3 pools, 2
    workloads, 1 user"), or an empty string."""
    counts = []
    for model, noun in ((Pool, "pool"), (Workload, "workload"), (Team, "team")):
        mine = model.objects.exclude(pk__in=list(registry.ids.get(model, {}).values())).count()
        if mine:
            counts.append(f"{mine} {noun}{'s' if mine != 1 else ''}")
    user_model = get_user_model()
    users = user_model.objects.exclude(
        pk__in=list(registry.ids.get(user_model, {}).values())
    ).count()
    if users:
        counts.append(f"{users} user{'s' if users != 1 else ''}")
    return ", ".join(counts)


def _adopt_earlier_demo(registry) -> None:
    """Mark what a seed_demo from before the marks made, so a database seeded then is
    refreshed rather than given a second fleet. Runs only while nothing is marked, and
    takes an object only when it is the demo's spec to the letter: a user with its
    username, full name and example.com address; a pool with its slug, name and
    description; a workload with its slug and name on such a pool; a team with its slug,
    name and description; the Slurm cluster with its slug, name and description; the
    scenario with its slug and name; a budget the demo noted
    as its own on such a team or pool (sized again when nobody edited it: the earlier
    seed_demo sized budgets from the month's first days, which forecast several times
    their amount)."""
    cluster = Cluster.objects.filter(
        slug=DEMO_CLUSTER["slug"],
        name=DEMO_CLUSTER["name"],
        description=DEMO_CLUSTER["description"],
    ).first()
    if cluster is not None:
        registry.mark(cluster, DEMO_CLUSTER["slug"])
    user_model = get_user_model()
    for username, full_name, _role in DEMO_USERS:
        first_name, last_name = full_name.split(" ", 1)
        user = user_model.objects.filter(
            username=username,
            first_name=first_name,
            last_name=last_name,
            email=f"{username}@example.com",
        ).first()
        if user is not None:
            registry.mark(user, username)
    for spec in DEMO_POOLS:
        pool = Pool.objects.filter(
            slug=spec["slug"], name=spec["name"], description=spec["description"]
        ).first()
        if pool is not None:
            registry.mark(pool, spec["slug"])
    pools = registry.all_of(Pool)
    for spec in DEMO_WORKLOADS:
        if spec["pool"] not in pools:
            continue
        workload = Workload.objects.filter(
            slug=spec["slug"], name=spec["name"], pool=pools[spec["pool"]]
        ).first()
        if workload is not None:
            registry.mark(workload, spec["slug"])
    for key, name, description, *_owned in TEAMS:
        team = Team.objects.filter(slug=key, name=name, description=description).first()
        if team is not None:
            registry.mark(team, key)
    scenario = Scenario.objects.filter(slug=SCENARIO_SLUG, name=SCENARIO_NAME).first()
    if scenario is not None:
        registry.mark(scenario, SCENARIO_SLUG)
    owners = [("team", key, team) for key, team in registry.all_of(Team).items()]
    owners += [("pool", key, pool) for key, pool in pools.items()]
    for kind, key, owner in owners:
        budget = Budget.objects.filter(note=BUDGET_NOTE, **{kind: owner}).first()
        if budget is not None:
            registry.mark(budget, f"{kind}:{key}")
            if budget.history.count() == 1:
                registry.to_resize.append(f"{kind}:{key}")
