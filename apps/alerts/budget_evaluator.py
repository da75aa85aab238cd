"""Budget rules: a subject per budget whose share used this month has reached the rule's
percentage (``threshold_pct``: 50, 75, 90 or 100 are the states the budgets show).

The figures are the budgets' own burn-down (``apps.showback.selectors``): a team's
showback spend or a pool's whole cost, month to date, from the cost report. A team's
rule watches its team's budget and the budgets of pools it sees (its own and the shared
ones); a pool's rule (or a workload's: its pool) that pool's budget; a fleet-wide rule
every budget.

The amounts are in the reporting currency (the budget's own amount converted at the
month's rate), written with its sign or code. A budget whose amount has no rate to
convert it has no share used: it cannot reach a threshold, and its page says which rate
is missing.
"""

from django.urls import reverse

from apps.alerts import registry
from apps.alerts.evaluators import rule_scope
from apps.alerts.registry import Subject, register
from apps.core.sentences import gettext_noop, sentence
from apps.currencies.templatetags.currency import money_in
from apps.showback.selectors import budget_burndowns, budgets_in_scope


def rule_budgets(rule):
    budgets = budgets_in_scope(rule_scope(rule))
    if rule.workload_id:
        return budgets.filter(pool__workloads=rule.workload_id)
    if rule.pool_id:
        return budgets.filter(pool=rule.pool_id)
    return budgets


def budget_labels(budget) -> dict[str, str]:
    if budget.team_id:
        return {"budget": f"team/{budget.team.slug}", "team": budget.team.slug}
    return {"budget": f"pool/{budget.pool.slug}", "pool": budget.pool.slug}


@register(registry.BUDGET, thresholds=("threshold_pct",))
def budget_used(rule, now) -> list[Subject]:
    threshold = float(rule.threshold_pct)
    subjects = []
    for item in budget_burndowns(rule_budgets(rule), now):
        budget, figures = item.budget, item.figures
        if figures.used_pct is None or figures.used_pct < threshold:
            continue
        values = {
            "owner": budget.owner_name,
            "used": f"{figures.used_pct:.1f}",
            "threshold": f"{threshold:g}",
            "spent": money_in(figures.spent, figures.currency),
            "amount": money_in(figures.amount, figures.currency),
            "month": f"{now:%Y-%m}",
        }
        subjects.append(
            Subject(
                labels=budget_labels(budget),
                summary=sentence(
                    gettext_noop("%(owner)s: %(used)s %% of the budget used in %(month)s"),
                    **values,
                ),
                description=sentence(
                    gettext_noop(
                        "%(owner)s spent %(spent)s of its %(amount)s budget for %(month)s "
                        "(%(used)s %%), at or above the rule's %(threshold)s %%."
                    ),
                    **values,
                ),
                team_id=budget.team_id_in_charge,
                url=budget.get_absolute_url()
                if budget.team_id
                else reverse("showback:budget_list"),
            )
        )
    return subjects
