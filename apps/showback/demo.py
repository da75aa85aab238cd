"""The demo's teams and budgets: Research trains, Serving answers requests, Stores runs
the edge; the mixed on-premises pool stays shared, its workloads split between the teams
by their labelled GPU-hours. Budgets are set from what each has spent this month when
first seeded, so the Overview's card shows several states (then left as the user edits
them: a second run changes nothing)."""

from decimal import ROUND_UP, Decimal

from apps.accounts.models import Team
from apps.pools.models import Pool, Workload
from apps.showback.models import Budget
from apps.showback.selectors import budget_burndowns

TEAMS = (
    # slug, name, description, pools, workloads of the shared pool
    (
        "research",
        "Research",
        "Pre-training, fine-tuning and evaluation.",
        ("train-h100-sh", "train-burst-h100-us", "train-a100-eu"),
        ("mistral-7b-lora-support",),
    ),
    (
        "serving",
        "Serving",
        "The online APIs: chat, embeddings and search.",
        ("infer-l40s-hk", "infer-h100-bj", "infer-a10-eu"),
        ("search-rerank-online",),
    ),
    (
        "stores",
        "Stores",
        "The in-store assistants on the edge and the nightly batch jobs.",
        ("edge-t4",),
        ("nightly-batch-summaries",),
    ),
)
SHARED_POOL = "mixed-a100-onprem"
# Budget → the share of it spent so far when first seeded: over, 75 %, ok, 90 %.
BUDGET_USED_SHARES = (
    ({"team": "research"}, Decimal("1.08")),
    ({"team": "serving"}, Decimal("0.80")),
    ({"team": "stores"}, Decimal("0.30")),
    ({"pool": SHARED_POOL}, Decimal("0.92")),
)
# Demo users in every team read the whole fleet as before teams; lead-serving only
# Serving's and the shared objects.
EVERY_TEAM_USERS = ("lead", "ops", "procurement")
TEAM_USERS = {"lead-serving": ("serving",)}


def seed_showback_demo(*, users, now) -> None:
    teams = {}
    for slug, name, description, pool_slugs, workload_slugs in TEAMS:
        team, _ = Team.objects.update_or_create(
            slug=slug, defaults={"name": name, "description": description}
        )
        teams[slug] = team
        # update(): no change-history entry for the demo's own bookkeeping.
        Pool.objects.filter(slug__in=pool_slugs).exclude(team=team).update(team=team)
        Workload.objects.filter(slug__in=workload_slugs).exclude(team=team).update(team=team)
    Pool.objects.filter(slug=SHARED_POOL, team__isnull=False).update(team=None)
    for username in EVERY_TEAM_USERS:
        if username in users:
            users[username].teams.add(*teams.values())
    for username, slugs in TEAM_USERS.items():
        if username in users:
            users[username].teams.set([teams[slug] for slug in slugs])
    _seed_budgets(teams, now)


def _seed_budgets(teams, now) -> None:
    missing = []
    for owner, share in BUDGET_USED_SHARES:
        if "team" in owner:
            values = {"team": teams[owner["team"]]}
        else:
            pool = Pool.objects.filter(slug=owner["pool"]).first()
            if pool is None:
                continue
            values = {"pool": pool}
        if not Budget.objects.filter(**values).exists():
            missing.append((Budget(amount_usd_per_month=Decimal("1"), **values), share))
    if not missing:
        return
    spent = {
        id(item.budget): item.figures.spent_usd
        for item in budget_burndowns([budget for budget, _ in missing], now)
    }
    for budget, share in missing:
        amount = Decimal(str(spent[id(budget)])) / share
        budget.amount_usd_per_month = max(
            Decimal("1.00"), amount.quantize(Decimal("0.01"), ROUND_UP)
        )
        budget.note = "Demo budget"
        budget.save()
