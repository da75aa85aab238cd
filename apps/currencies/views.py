from django.contrib import messages
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from apps.core.crud import ObjectViews, form_page
from apps.core.guard import require
from apps.core.htmx import render_page
from apps.currencies.codes import reporting_currency
from apps.currencies.forms import ExchangeRateForm, RateImportForm
from apps.currencies.models import ExchangeRate
from apps.currencies.services import RateImportError, import_rates_csv, parse_month

# Largest CSV accepted: a rate per currency and month fits many years in far less.
MAX_IMPORT_BYTES = 1_000_000


class ExchangeRateViews(ObjectViews):
    model = ExchangeRate
    noun = gettext_lazy("Exchange rate")
    lookup = {"pk": "pk"}
    form = ExchangeRateForm
    template = "currencies/exchangerate_form.html"
    list_url = "currencies:exchangerate_list"
    pretitle = gettext_lazy("Exchange rates")

    def form_response(self, request, obj, parent):
        # Whoever saves the rate is recorded with it (and in its history).
        form_class = self.form

        class RecordingForm(form_class):
            def save(self, commit=True):
                self.instance.changed_by = request.user
                return super().save(commit)

        return form_page(
            request,
            form_class=RecordingForm,
            noun=self.noun,
            template=self.template,
            instance=obj,
            # A missing rate's link names its currency and month.
            initial=None
            if obj is not None
            else {
                "currency": request.GET.get("currency", "")[:3],
                "month": request.GET.get("month", "")[:7],
            },
            context={"list_url": "currencies:exchangerate_list"},
        )


exchangerate_views = ExchangeRateViews()
exchangerate_create = exchangerate_views.create_view()
exchangerate_edit = exchangerate_views.edit_view()
exchangerate_delete = exchangerate_views.delete_view()


@require_GET
def exchangerate_list(request):
    """Every rate, newest month first (one month with ``?month=YYYY-MM``)."""
    rates = ExchangeRate.objects.select_related("changed_by").order_by("-month", "currency")
    month = parse_month(request.GET.get("month", ""))
    if month is not None:
        rates = rates.filter(month=month)
    return render_page(
        request,
        "currencies/exchangerate_list.html",
        {
            "rates": rates,
            "month": month,
            "reporting_currency": reporting_currency(),
            "import_form": RateImportForm(),
        },
    )


@require_POST
def exchangerate_import(request):
    """Record the rates of an uploaded CSV, all or none; an error names line and field."""
    require(request, "currencies.add_exchangerate")
    require(request, "currencies.change_exchangerate")
    form = RateImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, _("Choose a CSV file to import."))
        return redirect("currencies:exchangerate_list")
    upload = form.cleaned_data["file"]
    if upload.size > MAX_IMPORT_BYTES:
        messages.error(request, _("The file is larger than 1 MB; split it."))
        return redirect("currencies:exchangerate_list")
    try:
        result = import_rates_csv(upload.read(), request.user)
    except (RateImportError, UnicodeDecodeError) as error:
        messages.error(request, _("Nothing was imported. %(error)s") % {"error": error})
        return redirect("currencies:exchangerate_list")
    messages.success(
        request,
        _("%(created)s rates added, %(updated)s updated.")
        % {"created": result.created, "updated": result.updated},
    )
    return redirect("currencies:exchangerate_list")
