"""Bills and their reconciliation over the API: finance pushes a provider's FOCUS file
and reads how each pool's bill compares with gpufleet's figures. Costs are decimal
strings at the bill's own precision, never floats."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import ReadOnlyTokenPermission
from apps.bills import importer, reconciliation
from apps.bills.models import Bill
from apps.core.money import money_text
from apps.core.pagination import StrictLimitOffsetPagination
from apps.core.schema import ErrorSerializer

MONTH_FORMAT = "YYYY-MM"


class BillSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    filename = serializers.CharField()
    focus_version = serializers.CharField()
    rows = serializers.IntegerField(help_text="Charges (lines) the bill holds.")
    billed_cost = serializers.CharField(
        help_text="Sum of BilledCost over every line, at the file's decimal places "
        "(currencies as the file mixes them: see currencies)."
    )
    by_provider = serializers.DictField(
        child=serializers.CharField(),
        help_text="ServiceProviderName (ProviderName before FOCUS 1.3) → its BilledCost sum.",
    )
    currencies = serializers.ListField(child=serializers.CharField())
    charge_period_start = serializers.DateTimeField(allow_null=True)
    charge_period_end = serializers.DateTimeField(allow_null=True)
    created = serializers.BooleanField(
        required=False,
        help_text="On upload: false when the same file was imported before (nothing added).",
    )


class BillUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="A FOCUS 1.0–1.3 dataset: .csv or .csv.gz.")


class BillLineErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    column = serializers.CharField()
    message = serializers.CharField()


class BillRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    error_count = serializers.IntegerField()
    errors = BillLineErrorSerializer(many=True, help_text="The refused lines (the first 200).")


def bill_data(bill: Bill, *, created: bool | None = None) -> dict:
    data = {
        "id": bill.pk,
        "filename": bill.filename,
        "focus_version": bill.focus_version,
        "rows": bill.rows,
        "billed_cost": importer.display_total(bill, bill.billed_cost),
        "by_provider": {
            name: importer.display_total(bill, total) for name, total in bill.by_provider.items()
        },
        "currencies": bill.currencies,
        "charge_period_start": bill.charge_period_start,
        "charge_period_end": bill.charge_period_end,
    }
    if created is not None:
        data["created"] = created
    return data


def refused_data(refusal: importer.BillRefused) -> dict:
    return {
        "detail": str(refusal.message),
        "error_count": refusal.error_count,
        "errors": [
            {"line": error.line_number, "column": error.column, "message": str(error.message)}
            for error in refusal.errors
        ],
    }


class _FinanceView(APIView):
    """Bills are fleet-wide: their readers hold ``bills.view_bill`` (Finance, superusers)."""

    permission_classes = [IsAuthenticated, ReadOnlyTokenPermission]

    def check_permissions(self, request):
        super().check_permissions(request)
        if not request.user.has_perm("bills.view_bill"):
            raise PermissionDenied("Bills are read by Finance and administrators.")


class BillListView(_FinanceView):
    """The bills imported, newest first; POST imports a FOCUS file (all or nothing: 400
    with the refused lines, nothing stored; the same file again answers 200 with the bill
    already stored, adding nothing)."""

    parser_classes = [MultiPartParser]
    pagination_class = StrictLimitOffsetPagination

    @extend_schema(responses={200: BillSerializer(many=True)})
    def get(self, request):
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(
            Bill.objects.order_by("-created_at", "-pk"), request, self
        )
        return paginator.get_paginated_response([bill_data(bill) for bill in page])

    @extend_schema(
        request={"multipart/form-data": BillUploadSerializer},
        responses={
            201: BillSerializer,
            200: BillSerializer,
            400: OpenApiResponse(
                BillRefusedSerializer,
                description="Nothing imported: the file or its lines are refused, each "
                "named with its line number and column.",
            ),
        },
    )
    def post(self, request):
        if not request.user.has_perm("bills.add_bill"):
            raise PermissionDenied("Importing bills needs the Finance role.")
        upload = BillUploadSerializer(data=request.data)
        if not upload.is_valid():
            # The refusal's shape, with the field named as DRF names it.
            return Response(
                {
                    "detail": "file: " + " ".join(str(e) for e in upload.errors.get("file", [])),
                    "error_count": 0,
                    "errors": [],
                    **upload.errors,
                },
                status=400,
            )
        file = upload.validated_data["file"]
        try:
            result = importer.import_bill(
                file, filename=file.name, source=Bill.Source.API, user=request.user
            )
        except importer.BillRefused as refusal:
            return Response(refused_data(refusal), status=400)
        return Response(
            bill_data(result.bill, created=result.created), status=201 if result.created else 200
        )


class BillDetailView(_FinanceView):
    @extend_schema(responses={200: BillSerializer, 404: ErrorSerializer})
    def get(self, request, pk):
        bill = Bill.objects.filter(pk=pk).first()
        if bill is None:
            raise NotFound(f"No bill #{pk}.")
        return Response(bill_data(bill))


class ReconciliationQuerySerializer(serializers.Serializer):
    month = serializers.RegexField(
        reconciliation.MONTH_PATTERN,
        help_text=f"The month, {MONTH_FORMAT}.",
        error_messages={"invalid": "Expected a month as YYYY-MM, e.g. 2026-11."},
    )

    def validate_month(self, value):
        month = reconciliation.parse_month(value)
        if month is None:
            raise ValidationError("Expected a month as YYYY-MM, e.g. 2026-11.")
        return month


class ReconciliationRowSerializer(serializers.Serializer):
    pool = serializers.CharField(help_text="The pool's slug.")
    month = serializers.CharField(help_text=MONTH_FORMAT)
    lines = serializers.IntegerField(help_text="Bill lines the rules map to the pool.")
    billed = serializers.CharField(help_text="Sum of the mapped lines' BilledCost.")
    computed = serializers.CharField(
        help_text="gpufleet's cost of the pool in the month, USD (a closed month's frozen)."
    )
    difference = serializers.CharField(allow_null=True, help_text="billed − computed.")
    difference_share = serializers.CharField(
        allow_null=True, help_text="difference ÷ computed × 100, %, 2 decimals."
    )
    flagged = serializers.BooleanField()
    status = serializers.ChoiceField(choices=list(reconciliation.STATUS_LABELS))
    currency = serializers.CharField(help_text="The mapped lines' BillingCurrency.")
    replaced = serializers.BooleanField(help_text="Finance replaced the typed price with it.")


class UnknownLineSerializer(serializers.Serializer):
    bill = serializers.IntegerField()
    line = serializers.IntegerField()
    provider = serializers.CharField()
    resource_id = serializers.CharField()
    sku_id = serializers.CharField()
    charge_description = serializers.CharField()
    billed_cost = serializers.CharField()
    currency = serializers.CharField()


class ReconciliationSerializer(serializers.Serializer):
    month = serializers.CharField()
    tolerance_pct = serializers.CharField()
    rows = ReconciliationRowSerializer(many=True)
    unknown_gpu_lines = UnknownLineSerializer(
        many=True, help_text="GPU-looking lines no rule maps (the first 200)."
    )
    unknown_gpu_line_count = serializers.IntegerField()
    unknown_gpu_billed = serializers.DictField(
        child=serializers.CharField(), help_text="Currency → their BilledCost sum."
    )


def reconciliation_data(result: reconciliation.Reconciliation) -> dict:
    month = f"{result.month:%Y-%m}"
    return {
        "month": month,
        "tolerance_pct": str(result.tolerance_pct),
        "rows": [
            {
                "pool": row.pool.slug,
                "month": month,
                "lines": row.lines,
                "billed": importer.exact_text(row.billed),
                "computed": importer.exact_text(row.computed),
                "difference": importer.exact_text(row.difference),
                "difference_share": money_text(row.difference_share),
                "flagged": row.flagged,
                "status": row.status,
                "currency": row.currency,
                "replaced": row.replacement is not None,
            }
            for row in result.rows
        ],
        "unknown_gpu_lines": [
            {
                "bill": line.bill_id,
                "line": line.line_number,
                "provider": line.provider,
                "resource_id": line.resource_id,
                "sku_id": line.sku_id,
                "charge_description": line.charge_description,
                "billed_cost": importer.exact_text(line.billed_cost),
                "currency": line.billing_currency,
            }
            for line in result.unknown_lines
        ],
        "unknown_gpu_line_count": result.unknown_count,
        "unknown_gpu_billed": {
            currency: importer.exact_text(total)
            for currency, total in sorted(result.unknown_by_currency.items())
        },
    }


class BillReconciliationView(_FinanceView):
    """Per pool, the month's billed cost against gpufleet's computed cost (definitions in
    apps/bills/reconciliation.py), and the GPU-looking lines no rule maps."""

    @extend_schema(
        parameters=[ReconciliationQuerySerializer],
        responses={
            200: ReconciliationSerializer,
            400: OpenApiResponse(description="month malformed"),
        },
    )
    def get(self, request):
        query = ReconciliationQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(
            reconciliation_data(reconciliation.reconcile(query.validated_data["month"]))
        )
