"""A model's object views, declared once (NetBox's registered generic views, in
gpufleet's function-view style): which objects the requesting user reaches, how a URL
names one, what each action needs, and the form and pages its views show.

    class PoolViews(ObjectViews):
        model = Pool
        noun = gettext_lazy("Pool")
        form = PoolForm
        template = "pools/pool_form.html"
        list_url = "pools:pool_list"

        def objects(self, request):
            return Pool.objects.in_scope(scope_of(request.user))

    pool_views = PoolViews()
    pool_create = pool_views.create_view()
    pool_edit = pool_views.edit_view()
    pool_delete = pool_views.delete_view()
    pool_archive = pool_views.archive_view(archived=True)

    @pool_views.object_view(related=("owner",))
    @require_GET
    def pool_detail(request, pool): ...

Every object view fetches its object once through ``apps.core.guard.guarded_object``:
out of the user's scope is a 404 whatever the role, in scope without the permission a 403.
A view's URL name stays ``<app>:<model>_<action>``; the page and its htmx fragments come
from ``render_page``.
"""

from functools import partial, wraps

from django.contrib import messages
from django.db import router
from django.db.models import ProtectedError, RestrictedError
from django.db.models.deletion import Collector
from django.shortcuts import redirect
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from apps.core.guard import Permission, guarded_object, require
from apps.core.htmx import render_page

# ``ObjectViews.object_view(permission=...)`` when the action's own permission applies.
ACTION_PERMISSION = object()


class ObjectViews:
    """One model's object views. A subclass declares the model and its pages; the
    methods ending in ``_view`` return plain function views for the app's views.py.

    ``lookup`` maps the URL's keywords to the fields naming the object. ``parent``, for
    objects created under another (a backup policy under its workload), is the parent's
    declaration: a new object's URL names the parent, whose scope decides 404 (and
    ``parent_of(obj)`` finds an existing object's). ``permissions`` overrides the
    permission of an action (``add``, ``change``, ``delete``; ``view`` needs none) over
    Django's ``<app>.<action>_<model>``; ``check`` refuses one object in particular."""

    model = None
    name = ""  # of the views, ``<name>_<action>``: the model's name unless said
    noun = ""
    lookup = {"slug": "slug"}
    related = ()
    parent = None
    permissions: dict = {}
    form = None
    template = ""
    list_url = ""
    pretitle = ""
    archived_message = ""
    restored_message = ""

    # --- what a subclass says ---------------------------------------------------------

    def objects(self, request):
        """The objects the requesting user reaches (any other is a 404)."""
        return self.model._default_manager.all()

    def check(self, request, obj, *, action: str) -> None:
        """Raise ``PermissionDenied`` when the user, holding the action's permission, may
        still not do it to ``obj`` (e.g. change a fleet-wide object)."""

    def parent_of(self, obj):
        return None

    def form_kwargs(self, request, parent) -> dict:
        return {}

    def initial(self, request, parent) -> dict | None:
        return None

    def form_context(self, request, obj, parent) -> dict:
        return {}

    def delete_options(self, request, obj) -> dict:
        """``delete_page``'s arguments for ``obj`` beyond the declared ones: what blocks
        the delete, its usage history, a service doing the delete."""
        return {}

    def view_name(self, action: str) -> str:
        return f"{self.name or self.model._meta.model_name}_{action}"

    def _named(self, view, action: str):
        """``view`` named as the views.py name it is bound to, for tracebacks and logs."""
        view.__name__ = view.__qualname__ = self.view_name(action)
        view.__module__ = type(self).__module__
        return view

    # --- the guard ----------------------------------------------------------------------

    def permission(self, action: str) -> Permission:
        if action in self.permissions:
            return self.permissions[action]
        if action == "view":
            return None
        meta = self.model._meta
        return f"{meta.app_label}.{action}_{meta.model_name}"

    def get(
        self,
        request,
        action="view",
        *,
        permission=ACTION_PERMISSION,
        related=None,
        objects=None,
        **url,
    ):
        """The object the URL names, fetched once: 404 out of scope, then 403 without
        ``permission`` (default: the action's). ``objects(request)``, for a page that
        reads more of the object, stands in for ``self.objects`` and is built on it
        (e.g. ``self.objects(request).with_status()``)."""
        if permission is ACTION_PERMISSION:
            permission = self.permission(action)
        objects = (objects or self.objects)(request)
        related = self.related if related is None else related
        if related:
            objects = objects.select_related(*related)
        lookup = {field: url[keyword] for keyword, field in self.lookup.items()}
        return guarded_object(
            request,
            objects,
            lookup,
            permission=permission,
            check=None if permission is None else partial(self.check, action=action),
        )

    def object_view(
        self, action="view", *, permission=ACTION_PERMISSION, related=None, objects=None
    ):
        """Decorator: the view receives the guarded object in place of the URL's
        keywords that name it (``def pool_detail(request, pool)``)."""

        def decorator(view):
            @wraps(view)
            def wrapped(request, **kwargs):
                url = {keyword: kwargs.pop(keyword) for keyword in self.lookup}
                obj = self.get(
                    request,
                    action,
                    permission=permission,
                    related=related,
                    objects=objects,
                    **url,
                )
                return view(request, obj, **kwargs)

            return wrapped

        return decorator

    # --- the views ----------------------------------------------------------------------

    def create_view(self):
        """GET the form, POST a new object; under ``parent`` the URL names the parent."""
        form_response = require_http_methods(["GET", "POST"])(self.form_response)
        if self.parent is None:

            def create(request):
                require(request, self.permission("add"))
                return form_response(request, None, None)

        else:

            def create(request, **url):
                parent = self.parent.get(request, permission=self.permission("add"), **url)
                return form_response(request, None, parent)

        return self._named(create, "create")

    def edit_view(self):
        form_response = require_http_methods(["GET", "POST"])(self.form_response)

        def edit(request, **url):
            obj = self.get(request, "change", **url)
            return form_response(request, obj, self.parent_of(obj))

        return self._named(edit, "edit")

    def delete_view(self):
        """GET asks for confirmation, POST deletes (or offers to archive: ``delete_page``)."""
        delete_response = require_http_methods(["GET", "POST"])(self.delete_response)

        def delete(request, **url):
            return delete_response(request, self.get(request, "delete", **url))

        return self._named(delete, "delete")

    def archive_view(self, *, archived: bool):
        """POST archives (or restores) the object: hidden from lists, its history kept."""
        archive_response = require_POST(self.archive_response)

        def archive(request, **url):
            return archive_response(request, self.get(request, "change", **url), archived)

        return self._named(archive, "archive" if archived else "restore")

    # --- the pages ----------------------------------------------------------------------

    def form_class(self, request, parent):
        kwargs = self.form_kwargs(request, parent)
        if not kwargs:
            return self.form
        return lambda *args, **more: self.form(*args, **kwargs, **more)

    def form_response(self, request, obj, parent):
        return form_page(
            request,
            form_class=self.form_class(request, parent),
            noun=self.noun,
            template=self.template,
            instance=obj,
            initial=self.initial(request, parent) if obj is None else None,
            context=self.form_context(request, obj, parent),
        )

    def delete_response(self, request, obj):
        options = {"list_url": self.list_url, "pretitle": self.pretitle}
        options.update(self.delete_options(request, obj))
        if "cancel_url" not in options:
            options["cancel_url"] = obj.get_absolute_url()
        return delete_page(request, obj=obj, noun=self.noun, **options)

    def archive_response(self, request, obj, archived: bool):
        if archived and obj.archived_at is None:
            obj.archived_at = timezone.now()
            messages.success(request, str(self.archived_message) % {"name": obj.name})
        elif not archived and obj.archived_at is not None:
            obj.archived_at = None
            messages.success(request, str(self.restored_message) % {"name": obj.name})
        obj.save(update_fields=["archived_at", "updated_at"])
        return redirect(obj)


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
    list_url,
    cancel_url,
    pretitle="",
    blocking=(),
    blocking_label="",
    delete=None,
    usage_history=(),
    archive_url="",
    refusal="",
):
    """GET asks for confirmation, listing what the delete removes with the object (or
    what blocks it); POST deletes, with ``delete()`` when the object's service must do
    more than ``obj.delete()`` (e.g. recompute what depended on it), then goes to
    ``list_url``. An object with ``usage_history`` ((what, count) pairs) is never
    deleted: the page offers to archive it at ``archive_url`` instead. ``refusal``, a
    sentence, says why the object is never deleted nor archived (the page only says so)."""
    if request.method == "POST" and not blocking and not usage_history and not refusal:
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
            "refusal": refusal,
            "removed": [] if blocking or usage_history or refusal else what_a_delete_removes(obj),
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
