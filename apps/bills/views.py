"""The bills pages: import, the bills and their lines, the mapping rules, and the
month's reconciliation with finance's choice to let a bill replace the typed price.

Bills are fleet-wide figures: every page needs ``bills.view_bill`` (Finance and
superusers), each change its own permission (apps/core/roles.py)."""

from datetime import date
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods

from apps.bills import importer, reconciliation
from apps.bills.forms import BillUploadForm, MappingRuleForm, ToleranceForm
from apps.bills.models import Bill, BillLine, MappingRule, ReconciliationSettings
from apps.core.crud import ObjectViews, delete_page
from apps.core.guard import require
from apps.core.htmx import render_page
from apps.core.texts import translated
from apps.pools.models import Pool

VIEW = "bills.view_bill"
LINES_PER_PAGE = 50
# ?sort= of the bill's lines → the ordering (a leading "-" sorts descending).
LINE_SORTS = {
    "line": "line_number",
    "provider": "provider",
    "resource": "resource_id",
    "sku": "sku_id",
    "start": "charge_period_start",
    "cost": "billed_cost",
    "currency": "billing_currency",
}


@require_GET
def bill_list(request):
    require(request, VIEW)
    bills = Bill.objects.order_by("-created_at", "-pk")
    page = Paginator(bills, LINES_PER_PAGE).get_page(request.GET.get("page"))
    rows = [
        {
            "bill": bill,
            "billed": importer.display_total(bill, bill.billed_cost),
            "providers": [
                (name, importer.display_total(bill, total))
                for name, total in bill.by_provider.items()
            ],
        }
        for bill in page.object_list
    ]
    return render_page(request, "bills/bill_list.html", {"page": page, "rows": rows})


@require_http_methods(["GET", "POST"])
def bill_upload(request):
    """Import a FOCUS file: nothing is stored when a line is refused, and the page lists
    the refused lines with what each should hold."""
    require(request, "bills.add_bill")
    form, refusal, status = BillUploadForm(), None, 200
    if request.method == "POST":
        form = BillUploadForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                result = importer.import_bill(
                    upload, filename=upload.name, source=Bill.Source.UPLOAD, user=request.user
                )
            except importer.BillRefused as error:
                refusal, status = error, 422
            else:
                if result.created:
                    messages.success(
                        request,
                        gettext("Bill imported: %(rows)s lines.") % {"rows": result.bill.rows},
                    )
                else:
                    messages.info(
                        request, gettext("This file was imported before: nothing was added.")
                    )
                return redirect(result.bill)
        else:
            status = 422
    if request.htmx:
        status = 200
    errors = []
    if refusal is not None:
        errors = [
            {
                "line": error.line_number,
                "column": error.column,
                "message": translated(error.message),
            }
            for error in refusal.errors
        ]
    return render_page(
        request,
        "bills/bill_upload.html",
        {
            "form": form,
            "refusal": refusal and translated(refusal.message),
            "refusal_count": refusal.error_count if refusal else 0,
            "errors": errors,
        },
        status=status,
    )


@require_GET
def bill_detail(request, pk):
    require(request, VIEW)
    bill = get_object_or_404(Bill, pk=pk)
    sort = request.GET.get("sort") or "line"
    descending = sort.startswith("-")
    if sort.lstrip("-") not in LINE_SORTS:
        sort, descending = "line", False
    field = LINE_SORTS[sort.lstrip("-")]
    lines = BillLine.objects.filter(bill=bill).order_by(
        f"-{field}" if descending else field, "line_number"
    )
    page = Paginator(lines, LINES_PER_PAGE).get_page(request.GET.get("page"))
    columns = [
        (key, label, (f"-{key}" if sort == key else key))
        for key, label in (
            ("line", _("Line")),
            ("provider", _("Provider")),
            ("resource", _("Resource")),
            ("sku", _("SKU")),
            ("start", _("Charge period (UTC)")),
            ("cost", _("Billed cost")),
            ("currency", _("Currency")),
        )
    ]
    return render_page(
        request,
        "bills/bill_detail.html",
        {
            "bill": bill,
            "page": page,
            "lines": [(line, importer.exact_text(line.billed_cost)) for line in page.object_list],
            "columns": columns,
            "sort": sort,
            "billed": importer.display_total(bill, bill.billed_cost),
            "providers": [
                (name, importer.display_total(bill, total))
                for name, total in bill.by_provider.items()
            ],
            "query_without_page": urlencode({"sort": sort}),
        },
    )


@require_http_methods(["GET", "POST"])
def bill_delete(request, pk):
    require(request, VIEW)
    bill = get_object_or_404(Bill, pk=pk)
    require(request, "bills.delete_bill")
    return delete_page(
        request,
        obj=bill,
        noun=_("Bill"),
        list_url="bills:bill_list",
        cancel_url=bill.get_absolute_url(),
        pretitle=_("Bills"),
    )


# --- mapping rules ------------------------------------------------------------------------


class MappingRuleViews(ObjectViews):
    model = MappingRule
    name = "rule"
    noun = _("Mapping rule")
    lookup = {"pk": "pk"}
    related = ("pool",)
    form = MappingRuleForm
    template = "bills/form.html"
    list_url = "bills:rule_list"
    pretitle = _("Bills")

    def objects(self, request):
        require(request, VIEW)
        return MappingRule.objects.all()

    def form_context(self, request, obj, parent) -> dict:
        return {
            "title": _("Edit mapping rule") if obj else _("New mapping rule"),
            "back_url": reverse("bills:rule_list"),
            "back_label": _("Bill mapping rules"),
            "submit_label": _("Save rule"),
        }


rule_views = MappingRuleViews()
rule_create = rule_views.create_view()
rule_edit = rule_views.edit_view()
rule_delete = rule_views.delete_view()


@require_GET
def rule_list(request):
    require(request, VIEW)
    rules = MappingRule.objects.select_related("pool").order_by("priority", "pk")
    return render_page(request, "bills/rule_list.html", {"rules": rules})


# --- reconciliation -----------------------------------------------------------------------


def _month_of(request) -> tuple[date, str]:
    """The month ?month=YYYY-MM names (default: the last full month) and an error."""
    text = request.GET.get("month") or ""
    month = reconciliation.parse_month(text)
    if month is not None:
        return month, ""
    error = (
        gettext("“%(value)s” is not a month: expected YYYY-MM, e.g. 2026-11.")
        % {"value": text[:20]}
        if text
        else ""
    )
    today = timezone.now().date().replace(day=1)
    last = date(today.year - 1, 12, 1) if today.month == 1 else today.replace(month=today.month - 1)
    return last, error


@require_GET
def reconciliation_page(request):
    require(request, VIEW)
    month, error = _month_of(request)
    result = reconciliation.reconcile(month)
    rows = [
        {
            "row": row,
            "billed": importer.exact_text(row.billed),
            "computed": importer.exact_text(row.computed),
            "difference": importer.exact_text(row.difference),
        }
        for row in result.rows
    ]
    unknown = [(line, importer.exact_text(line.billed_cost)) for line in result.unknown_lines]
    return render_page(
        request,
        "bills/reconciliation.html",
        {
            "result": result,
            "rows": rows,
            "unknown": unknown,
            "unknown_by_currency": [
                (currency, importer.exact_text(total))
                for currency, total in sorted(result.unknown_by_currency.items())
            ],
            "month_value": f"{month:%Y-%m}",
            "month_error": error,
            "tolerance_form": ToleranceForm(instance=ReconciliationSettings.current()),
        },
    )


@require_http_methods(["GET", "POST"])
def tolerance_edit(request):
    require(request, VIEW)
    require(request, "bills.change_reconciliationsettings")
    settings = ReconciliationSettings.current()
    form = ToleranceForm(request.POST or None, instance=settings)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, gettext("Tolerance saved."))
        return redirect("bills:reconciliation")
    return render_page(
        request,
        "bills/form.html",
        {
            "form": form,
            "title": _("Reconciliation tolerance"),
            "back_url": reverse("bills:reconciliation"),
            "back_label": _("Reconciliation"),
            "submit_label": _("Save tolerance"),
        },
    )


@require_http_methods(["GET", "POST"])
def replace_price(request, slug, month):
    """Confirm, then let the month's billed cost replace the pool's typed price."""
    require(request, VIEW)
    pool = get_object_or_404(Pool, slug=slug)
    require(request, "bills.add_pricereplacement")
    first = reconciliation.parse_month(month)
    if first is None:
        messages.error(request, gettext("Expected a month as YYYY-MM."))
        return redirect("bills:reconciliation")
    back = f"{redirect('bills:reconciliation').url}?{urlencode({'month': f'{first:%Y-%m}'})}"
    try:
        row = reconciliation.pool_month(pool, first)
    except reconciliation.ReconciliationError as error:
        messages.error(request, str(error))
        return redirect(back)
    closed = any(
        closed_month.month == first for closed_month in reconciliation.periods.closed_months()
    )
    if request.method == "POST":
        try:
            replacement = reconciliation.replace_price(pool, first, user=request.user)
        except reconciliation.ReconciliationError as error:
            messages.error(request, str(error))
        else:
            messages.success(
                request,
                gettext(
                    "%(pool)s in %(month)s now costs what the bill says: %(price)s USD per "
                    "GPU-hour."
                )
                % {
                    "pool": pool.name,
                    "month": f"{first:%Y-%m}",
                    "price": replacement.price_per_gpu_hour_usd,
                },
            )
        return redirect(back)
    return render_page(
        request,
        "bills/replace_confirm.html",
        {
            "pool": pool,
            "row": row,
            "month_value": f"{first:%Y-%m}",
            "billed": importer.exact_text(row.billed),
            "computed": importer.exact_text(row.computed),
            "closed": closed,
            "back": back,
        },
    )
