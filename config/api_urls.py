"""All REST endpoints under /api/v1/; each app contributes its router registrations."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from apps.accounts.api import MeView
from apps.catalog.api import GpuModelViewSet, ModelArchitectureViewSet
from apps.pools.api import MemoryEstimateView, PoolViewSet, WorkloadViewSet
from apps.telemetry.api import (
    GpuIngestView,
    PoolHourlyUsageView,
    RequestIngestView,
    WorkloadHourlyRequestsView,
)

router = DefaultRouter()
router.register("pools", PoolViewSet, basename="pool")
router.register("workloads", WorkloadViewSet, basename="workload")
router.register("gpu-models", GpuModelViewSet, basename="gpu-model")
router.register("model-architectures", ModelArchitectureViewSet, basename="model-architecture")

urlpatterns = [
    path("me/", MeView.as_view(), name="api-me"),
    path("estimates/memory/", MemoryEstimateView.as_view(), name="api-estimate-memory"),
    path("usage/hourly/", PoolHourlyUsageView.as_view(), name="api-usage-hourly"),
    path(
        "usage/requests/hourly/",
        WorkloadHourlyRequestsView.as_view(),
        name="api-usage-requests-hourly",
    ),
    path("telemetry/gpu/", GpuIngestView.as_view(), name="api-ingest-gpu"),
    path("telemetry/requests/", RequestIngestView.as_view(), name="api-ingest-requests"),
    *router.urls,
]
