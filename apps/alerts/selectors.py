from apps.accounts.scope import EVERYTHING
from apps.alerts.models import Alert

RULES_NAMED = 3


def firing_summary(scope=EVERYTHING) -> dict:
    """How many alerts in ``scope`` are firing and the rules of the most, for the
    Overview's "needs a person" list: two small queries on the firing alerts."""
    firing = Alert.objects.in_scope(scope).filter(status=Alert.Status.FIRING)
    count = firing.count()
    rules = []
    if count:
        rules = list(firing.order_by("rule_name").values_list("rule_name", flat=True).distinct())
    return {"count": count, "rules": rules[:RULES_NAMED], "more_rules": len(rules) > RULES_NAMED}
