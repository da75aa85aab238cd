from copy import copy
from datetime import timedelta

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods

from apps.accounts import services
from apps.accounts.filters import AuditEventFilter
from apps.accounts.forms import ApiTokenForm, GroupMappingForm
from apps.accounts.models import ApiToken, AuditEvent, GroupMapping
from apps.accounts.tables import AuditTable, GroupMappingTable
from apps.core.crud import ObjectViews
from apps.core.guard import superuser_only, superuser_required
from apps.core.htmx import render_page
from apps.core.tables import configure_table


@require_GET
def token_list(request):
    tokens = ApiToken.objects.filter(user=request.user)
    return render_page(request, "accounts/token_list.html", {"tokens": tokens})


@require_http_methods(["GET", "POST"])
def token_create(request):
    form = ApiTokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        token, plaintext = ApiToken.issue(
            user=request.user,
            description=form.cleaned_data["description"],
            lifetime=timedelta(days=form.cleaned_data["lifetime_days"]),
            read_only=form.cleaned_data["read_only"],
        )
        # Rendered in the POST response itself: the secret never goes into a URL,
        # a redirect or the session, and cannot be shown again.
        return render_page(
            request, "accounts/token_created.html", {"token": token, "plaintext": plaintext}
        )
    return render_page(request, "accounts/token_form.html", {"form": form})


class TokenViews(ObjectViews):
    model = ApiToken
    lookup = {"key_id": "key_id"}
    # Each user's own: nobody revokes (or learns of) another user's token.
    permissions = {"delete": None}

    def objects(self, request):
        return ApiToken.objects.filter(user=request.user)


token_views = TokenViews()


@token_views.object_view("delete")
@require_http_methods(["GET", "POST"])
def token_delete(request, token):
    if request.method == "POST":
        token.delete()
        messages.success(
            request, _("Token “%(description)s” revoked.") % {"description": token.description}
        )
        return redirect("accounts:token_list")
    return render_page(request, "accounts/token_confirm_delete.html", {"token": token})


@superuser_required
@require_GET
def group_mapping_list(request):
    table = GroupMappingTable(GroupMapping.objects.select_related("team"))
    page = configure_table(request, table)
    return render_page(
        request,
        "accounts/group_mapping_list.html",
        {"table": table, "page": page},
        fragments={"group-mappings": "group-mappings"},
    )


class GroupMappingViews(ObjectViews):
    """Single sign-on's mapping is for superusers only: 403 for the others, as the user
    list answers."""

    model = GroupMapping
    noun = GroupMapping._meta.verbose_name
    lookup = {"pk": "pk"}
    related = ("team",)
    list_url = "accounts:group_mapping_list"
    pretitle = gettext_lazy("Single sign-on")
    permissions = dict.fromkeys(("add", "change", "delete"), superuser_only())

    def form_response(self, request, mapping, parent):
        previous = copy(mapping) if mapping else None
        form = GroupMappingForm(request.POST or None, instance=mapping)
        if request.method == "POST" and form.is_valid():
            saved = services.save_group_mapping(form.save(commit=False), previous=previous)
            messages.success(request, _("Group %(group)s saved.") % {"group": saved.idp_group})
            return redirect(self.list_url)
        return render_page(
            request, "accounts/group_mapping_form.html", {"form": form, "mapping": mapping}
        )

    def delete_options(self, request, mapping):
        return {
            "cancel_url": reverse(self.list_url),
            "delete": lambda: services.delete_group_mapping(mapping),
        }


group_mapping_views = GroupMappingViews()
group_mapping_create = group_mapping_views.create_view()
group_mapping_edit = group_mapping_views.edit_view()
group_mapping_delete = group_mapping_views.delete_view()


@superuser_required
@require_GET
def audit_list(request):
    """Sign-ins and role and team changes, newest first, 25 a page."""
    # The usernames are kept as text on each event: no join.
    audit_filter = AuditEventFilter(request.GET, queryset=AuditEvent.objects.all())
    table = AuditTable(audit_filter.qs.order_by("-at", "-pk"))
    page = configure_table(request, table)
    return render_page(
        request,
        "accounts/audit_list.html",
        {"table": table, "page": page, "filter": audit_filter},
        fragments={"audit-events": "audit-events"},
    )
