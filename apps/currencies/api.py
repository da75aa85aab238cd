import django_filters
from rest_framework import serializers, viewsets

from apps.currencies.models import ExchangeRate
from apps.currencies.serializers import ExchangeRateSerializer
from apps.currencies.services import parse_month


class ExchangeRateFilter(django_filters.FilterSet):
    month = django_filters.CharFilter(method="filter_month", help_text="YYYY-MM.")
    currency = django_filters.CharFilter(method="filter_currency", help_text="ISO 4217 code.")

    class Meta:
        model = ExchangeRate
        fields = ["month", "currency"]

    def filter_month(self, queryset, name, value):
        month = parse_month(value)
        if month is None:
            raise serializers.ValidationError({"month": ["Expected a month as YYYY-MM."]})
        return queryset.filter(month=month)

    def filter_currency(self, queryset, name, value):
        return queryset.filter(currency=value.strip().upper())


class ExchangeRateViewSet(viewsets.ModelViewSet):
    """Exchange rates by month: units of a currency per US dollar. Everyone signed in
    reads them; finance (``currencies.*_exchangerate``) writes them. A month and currency
    has one rate (a second is refused with 400); an edit keeps the old rate in the
    history, and a closed month keeps the rates it closed with."""

    queryset = ExchangeRate.objects.select_related("changed_by").order_by("-month", "currency")
    serializer_class = ExchangeRateSerializer
    filterset_class = ExchangeRateFilter

    def perform_create(self, serializer):
        serializer.save(changed_by=self.request.user)

    def perform_update(self, serializer):
        serializer.save(changed_by=self.request.user)
