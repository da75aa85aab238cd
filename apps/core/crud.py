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
from django.utils import translation
from django.utils.translation import gettext as _

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
        label = _label(noun, saved)
        if instance:
            messages.success(request, _("%(object)s saved.") % {"object": label})
        else:
            messages.success(request, _("%(object)s created.") % {"object": label})
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
        messages.success(request, _("%(object)s deleted.") % {"object": _label(noun, obj)})
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
        return _("Delete %(name)s") % {"name": obj}, _("Delete %(name)s") % {"name": obj.name}
    if getattr(obj, "archived_at", None):
        return (
            _("%(name)s is archived") % {"name": obj},
            _("%(name)s is archived") % {"name": obj.name},
        )
    return _("Archive %(name)s") % {"name": obj}, _("Archive %(name)s") % {"name": obj.name}


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
    it is. ``noun`` may be lazily translated: the name is compared with its English."""
    name = str(obj)
    with translation.override("en"):
        english_noun = str(noun)
    if name.lower().startswith(english_noun.lower()):
        return name[:1].upper() + name[1:]
    return _("%(noun)s %(name)s") % {"noun": noun, "name": name}


def _blocked_message(name, error):
    objects = list(getattr(error, "protected_objects", None) or error.restricted_objects)
    used_by = ", ".join(str(obj) for obj in objects[:5])
    if len(objects) > 5:
        return _("%(name)s is still used by %(used_by)s and %(more)s more; it was kept.") % {
            "name": name,
            "used_by": used_by,
            "more": len(objects) - 5,
        }
    return _("%(name)s is still used by %(used_by)s; it was kept.") % {
        "name": name,
        "used_by": used_by,
    }
