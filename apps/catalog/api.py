from rest_framework import viewsets

from apps.catalog.models import GpuModel, ModelArchitecture
from apps.catalog.serializers import GpuModelSerializer, ModelArchitectureSerializer


class GpuModelViewSet(viewsets.ModelViewSet):
    """The GPU catalog (dense datasheet figures), addressed by slug."""

    queryset = GpuModel.objects.order_by("vendor", "name")
    serializer_class = GpuModelSerializer
    lookup_field = "slug"
    filterset_fields = ["vendor", "mig_support"]


class ModelArchitectureViewSet(viewsets.ModelViewSet):
    """Model architectures; parameter counts follow from the shape."""

    queryset = ModelArchitecture.objects.order_by("family", "name")
    serializer_class = ModelArchitectureSerializer
    lookup_field = "slug"
    filterset_fields = ["family"]
