from datetime import timedelta

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from apps.accounts.forms import ApiTokenForm
from apps.accounts.models import ApiToken
from apps.core.htmx import render_page


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


@require_http_methods(["GET", "POST"])
def token_delete(request, key_id):
    # Scoped to the requesting user: nobody revokes (or learns of) another user's token.
    token = get_object_or_404(ApiToken, user=request.user, key_id=key_id)
    if request.method == "POST":
        token.delete()
        messages.success(
            request, _("Token “%(description)s” revoked.") % {"description": token.description}
        )
        return redirect("accounts:token_list")
    return render_page(request, "accounts/token_confirm_delete.html", {"token": token})
