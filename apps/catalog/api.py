import django_filters
from rest_framework import viewsets

from apps.catalog.models import GpuModel, ModelArchitecture
from apps.catalog.serializers import GpuModelSerializer, ModelArchitectureSerializer
from apps.core.serializers import StrictBooleanFilter


class GpuModelFilter(django_filters.FilterSet):
    mig_support = StrictBooleanFilter()

    class Meta:
        model = GpuModel
        fields = ["vendor", "mig_support"]


class GpuModelViewSet(viewsets.ModelViewSet):
    """The GPU catalog (dense datasheet figures), addressed by slug."""

    queryset = GpuModel.objects.order_by("vendor", "name")
    serializer_class = GpuModelSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"
    filterset_class = GpuModelFilter


class ModelArchitectureViewSet(viewsets.ModelViewSet):
    """Model architectures; parameter counts follow from the shape."""

    queryset = ModelArchitecture.objects.order_by("family", "name")
    serializer_class = ModelArchitectureSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"
    filterset_fields = ["family"]
