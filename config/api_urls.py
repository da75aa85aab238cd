"""All REST endpoints under /api/v1/; each app contributes its router registrations."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from apps.accounts.api import MeView
from apps.pools.api import PoolViewSet, WorkloadViewSet

router = DefaultRouter()
router.register("pools", PoolViewSet, basename="pool")
router.register("workloads", WorkloadViewSet, basename="workload")

urlpatterns = [path("me/", MeView.as_view(), name="api-me"), *router.urls]
