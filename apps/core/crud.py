"""Create, edit and delete views shared by every catalogued model (pools, workloads, GPU
models, architectures): the fourth copy of the same view asked for one helper.

Permission checks stay on the calling view (``@permission_required``): these helpers
only run after it passed.
"""

from django.contrib import messages
from django.db import router
from django.db.models import ProtectedError, RestrictedError
from django.db.models.deletion import Collector
from django.shortcuts import redirect

from apps.core.htmx import render_page


def form_page(request, *, form_class, noun, template, instance=None, initial=None, context=None):
    """GET shows the form; a valid POST saves, says so and redirects to the object.
    ``form_class`` may be any callable taking the form's arguments, e.g. a
    ``functools.partial`` that binds the form's own keyword arguments. A new object's
    owner, where it has one, is whoever creates it unless the form is told otherwise."""
    if instance is None:
        initial = {"owner": request.user.pk, **(initial or {})}
    form = form_class(request.POST or None, instance=instance, initial=initial)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        verb = "saved" if instance else "created"
        messages.success(request, f"{_label(noun, saved)} {verb}.")
        return redirect(saved)
    return render_page(request, template, {"form": form, "object": instance, **(context or {})})


def delete_page(
    request,
    *,
    obj,
    noun,
    blocking,
    blocking_label,
    list_url,
    cancel_url,
    pretitle="",
    delete=None,
    usage_history=(),
    archive_url="",
):
    """GET asks for confirmation, listing what the delete removes with the object (or
    what blocks it); POST deletes, with ``delete()`` when the object's service must do
    more than ``obj.delete()`` (e.g. recompute what depended on it), then goes to
    ``list_url``. An object with ``usage_history`` ((what, count) pairs) is never
    deleted: the page offers to archive it at ``archive_url`` instead."""
    if request.method == "POST" and not blocking and not usage_history:
        try:
            (delete or obj.delete)()
        except (ProtectedError, RestrictedError) as error:  # used since the page was shown
            messages.error(request, _blocked_message(_label(noun, obj), error))
            return redirect(cancel_url)
        messages.success(request, f"{_label(noun, obj)} deleted.")
        return redirect(list_url)
    title, heading = _confirmation_titles(obj, archives=bool(usage_history))
    return render_page(
        request,
        "components/confirm_delete.html",
        {
            "object": obj,
            "title": title,
            "heading": heading,
            "blocking": blocking,
            "blocking_label": blocking_label,
            "cancel_url": cancel_url,
            "pretitle": pretitle,
            "usage_history": usage_history,
            "archive_url": archive_url,
            "removed": [] if blocking or usage_history else what_a_delete_removes(obj),
        },
    )


def _confirmation_titles(obj, *, archives: bool) -> tuple[str, str]:
    """(page title, heading) naming what the page's button does: an object with usage
    history is archived, so its page never says "Delete"."""
    if not archives:
        return f"Delete {obj}", f"Delete {obj.name}"
    if getattr(obj, "archived_at", None):
        return f"{obj} is archived", f"{obj.name} is archived"
    return f"Archive {obj}", f"Archive {obj.name}"


def what_a_delete_removes(obj) -> list[tuple[str, int]]:
    """(what, how many) of the rows deleting ``obj`` removes with it, as the ORM would
    cascade (its change history is kept apart and stays)."""
    collector = Collector(using=router.db_for_write(type(obj)))
    try:
        collector.collect([obj])
    except (ProtectedError, RestrictedError):
        return []  # the delete is refused anyway, and says by what
    counts: dict[str, int] = {}
    for model, instances in collector.data.items():
        if model is not type(obj):
            label = str(model._meta.verbose_name_plural)
            counts[label] = counts.get(label, 0) + len(instances)
    for queryset in collector.fast_deletes:
        count = queryset.count()
        if count:
            label = str(queryset.model._meta.verbose_name_plural)
            counts[label] = counts.get(label, 0) + count
    return sorted(counts.items())


def _label(noun, obj) -> str:
    """ "Pool H100 east", or "Drill of v3 on 2026-11-29" when the name already says what
    it is."""
    name = str(obj)
    if name.lower().startswith(noun.lower()):
        return name[:1].upper() + name[1:]
    return f"{noun} {name}"


def _blocked_message(name, error):
    objects = list(getattr(error, "protected_objects", None) or error.restricted_objects)
    used_by = ", ".join(str(obj) for obj in objects[:5])
    more = f" and {len(objects) - 5} more" if len(objects) > 5 else ""
    return f"{name} is still used by {used_by}{more}; it was kept."
