"""All REST endpoints under /api/v1/; each app contributes its router registrations."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from apps.accounts.api import AuditEventViewSet, MeView
from apps.alerts.api import AlertChannelViewSet, AlertRuleViewSet, AlertViewSet, SilenceViewSet
from apps.backups.api import (
    BackupPolicyViewSet,
    BackupVersionViewSet,
    CheckpointIntervalEstimateView,
    RestoreDrillViewSet,
    WorkloadAtRiskView,
)
from apps.bills.api import BillDetailView, BillListView, BillReconciliationView
from apps.catalog.api import GpuModelViewSet, ModelArchitectureViewSet
from apps.clusters.api import ClusterViewSet
from apps.currencies.api import ExchangeRateViewSet
from apps.pilots.api import PilotResultViewSet
from apps.pools.api import MemoryEstimateView, PoolViewSet, WorkloadViewSet
from apps.procurement.api import CapacityMixEstimateView, ScenarioViewSet
from apps.reports.api import (
    CostReportView,
    InterruptionViewSet,
    LendableListView,
    PoolLendableView,
    UsageProfileView,
)
from apps.showback.api import (
    BudgetViewSet,
    PeriodCloseView,
    PeriodListView,
    PeriodReopenView,
    ShowbackView,
    TeamAuditView,
    TeamViewSet,
)
from apps.showback.focus.api import FocusExportView
from apps.slurm.api import SlurmJobsView, SlurmMappingRuleViewSet
from apps.telemetry.api import (
    GpuIngestView,
    PoolHourlyUsageView,
    PullSourceViewSet,
    ReconciliationView,
    RequestIngestView,
    WorkloadHourlyRequestsView,
)
from apps.training.api import TrainingEventIngestView, WorkloadGoodputView

router = DefaultRouter()
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("slurm/rules", SlurmMappingRuleViewSet, basename="slurm-rule")
router.register("pools", PoolViewSet, basename="pool")
router.register("workloads", WorkloadViewSet, basename="workload")
router.register("gpu-models", GpuModelViewSet, basename="gpu-model")
router.register("model-architectures", ModelArchitectureViewSet, basename="model-architecture")
router.register("scenarios", ScenarioViewSet, basename="scenario")
router.register("exchange-rates", ExchangeRateViewSet, basename="exchange-rate")
router.register("interruptions", InterruptionViewSet, basename="interruption")
router.register("backup-policies", BackupPolicyViewSet, basename="backup-policy")
router.register("backup-versions", BackupVersionViewSet, basename="backup-version")
router.register("restore-drills", RestoreDrillViewSet, basename="restore-drill")
router.register("pull-sources", PullSourceViewSet, basename="pull-source")
router.register("pilots", PilotResultViewSet, basename="pilot")
router.register("audit-events", AuditEventViewSet, basename="audit-event")
router.register("alert-rules", AlertRuleViewSet, basename="alert-rule")
router.register("alert-channels", AlertChannelViewSet, basename="alert-channel")
router.register("alerts", AlertViewSet, basename="alert")
router.register("silences", SilenceViewSet, basename="silence")
router.register("teams", TeamViewSet, basename="team")
router.register("budgets", BudgetViewSet, basename="budget")

urlpatterns = [
    path("me/", MeView.as_view(), name="api-me"),
    path("estimates/memory/", MemoryEstimateView.as_view(), name="api-estimate-memory"),
    path(
        "estimates/capacity-mix/",
        CapacityMixEstimateView.as_view(),
        name="api-estimate-capacity-mix",
    ),
    path(
        "estimates/checkpoint-interval/",
        CheckpointIntervalEstimateView.as_view(),
        name="api-estimate-checkpoint-interval",
    ),
    path("usage/hourly/", PoolHourlyUsageView.as_view(), name="api-usage-hourly"),
    path(
        "usage/requests/hourly/",
        WorkloadHourlyRequestsView.as_view(),
        name="api-usage-requests-hourly",
    ),
    path("usage/profile/", UsageProfileView.as_view(), name="api-usage-profile"),
    path("reports/cost/", CostReportView.as_view(), name="api-report-cost"),
    path("showback/", ShowbackView.as_view(), name="api-showback"),
    path("exports/focus/", FocusExportView.as_view(), name="api-export-focus"),
    path("periods/", PeriodListView.as_view(), name="api-periods"),
    path("periods/<str:month>/close/", PeriodCloseView.as_view(), name="api-period-close"),
    path("periods/<str:month>/reopen/", PeriodReopenView.as_view(), name="api-period-reopen"),
    path("teams/<str:slug>/audit/", TeamAuditView.as_view(), name="team-audit"),
    path("lendable/", LendableListView.as_view(), name="lendable-list"),
    path("pools/<str:slug>/lendable/", PoolLendableView.as_view(), name="pool-lendable"),
    path("reconciliation/", ReconciliationView.as_view(), name="api-reconciliation"),
    path(
        "reconciliation/bills/",
        BillReconciliationView.as_view(),
        name="api-reconciliation-bills",
    ),
    path("bills/", BillListView.as_view(), name="api-bills"),
    path("bills/<int:pk>/", BillDetailView.as_view(), name="api-bill-detail"),
    path("telemetry/gpu/", GpuIngestView.as_view(), name="api-ingest-gpu"),
    path("telemetry/requests/", RequestIngestView.as_view(), name="api-ingest-requests"),
    path("slurm/jobs/", SlurmJobsView.as_view(), name="api-slurm-jobs"),
    path("training-events/", TrainingEventIngestView.as_view(), name="api-ingest-training-events"),
    path("workloads/<str:slug>/goodput/", WorkloadGoodputView.as_view(), name="workload-goodput"),
    path("workloads/<str:slug>/at-risk/", WorkloadAtRiskView.as_view(), name="workload-at-risk"),
    *router.urls,
]
