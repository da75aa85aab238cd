from django.db import models
from django.db.models import Count, DecimalField, ExpressionWrapper, F, Sum


class ArchivableQuerySet(models.QuerySet):
    def active(self):
        return self.filter(archived_at__isnull=True)

    def archived(self):
        return self.filter(archived_at__isnull=False)

    def by_archived(self, value: str | None):
        """``?archived=``: "true" the archived only, "all" both, else (default) the
        active only. Reports and exports never filter: history counts either way."""
        if value == "all":
            return self
        return self.archived() if value == "true" else self.active()


class PoolQuerySet(ArchivableQuerySet):
    def in_scope(self, scope):
        """Pools of the scope's teams and the shared ones (apps/accounts/scope.py)."""
        return self.filter(scope.team_filter("team"))

    def with_workload_counts(self, scope=None):
        """``workload_count``: the pool's workloads, only those in ``scope`` when given.
        The pools are in scope, so a workload without a team is too."""
        if scope is None or scope.everything:
            return self.annotate(workload_count=Count("workloads"))
        return self.annotate(
            workload_count=Count("workloads", filter=scope.team_filter("workloads__team"))
        )

    def totals(self) -> dict:
        """GPUs and price per hour summed in SQL over the (filtered) pools: the price of
        the pools priced in USD only, with how many are priced in another currency (an
        amount in yuan and one in dollars do not add up)."""
        price_per_hour = ExpressionWrapper(
            F("effective_price_per_gpu_hour_usd") * F("gpu_count"),
            output_field=DecimalField(max_digits=16, decimal_places=4),
        )
        return self.aggregate(
            pool_count=Count("id"),
            gpu_total=Sum("gpu_count"),
            price_per_hour_usd_total=Sum(price_per_hour, filter=models.Q(currency="USD")),
            other_currency_pools=Count("id", filter=~models.Q(currency="USD")),
        )

    def in_service(self, at):
        """Pools whose service period holds the instant ``at``."""
        return self.filter(in_service_from__lte=at).filter(
            models.Q(in_service_until__isnull=True) | models.Q(in_service_until__gt=at)
        )

    def gpus_by_purpose(self) -> dict[str, int]:
        """GPU count per purpose, summed in SQL; purposes without pools are absent."""
        rows = self.order_by().values("purpose").annotate(gpus=Sum("gpu_count"))
        return {row["purpose"]: row["gpus"] for row in rows}


class WorkloadQuerySet(ArchivableQuerySet):
    def in_scope(self, scope, prefix: str = ""):
        """Workloads whose team is in scope; a workload without a team has its pool's.

        ``prefix`` filters a related model by its workload (``"workload__"``)."""
        if scope.everything:
            return self
        return self.filter(workload_scope_filter(scope, prefix))

    def with_pool(self):
        return self.select_related("pool__gpu_model", "owner", "model_architecture")


def workload_scope_filter(scope, prefix: str = "") -> models.Q:
    """``Q`` keeping rows whose workload (at ``prefix``) is in ``scope``: its own team,
    or, without one, its pool's team, is one of the scope's or none (shared)."""
    if scope.everything:
        return models.Q()
    own = models.Q(**{f"{prefix}team__in": sorted(scope.team_ids)})
    pools = models.Q(**{f"{prefix}team__isnull": True}) & scope.team_filter(f"{prefix}pool__team")
    return own | pools


def pool_scope_filter(scope, prefix: str = "") -> models.Q:
    """``Q`` keeping rows whose pool (at ``prefix``, e.g. ``"pool__"``) is in ``scope``."""
    return scope.team_filter(f"{prefix}team")
