"""Which objects are the demo's: those ``seed_demo`` marked (apps/demo/models.py), looked
up by the key the demo knows them by. An object of the user's is never looked up here, so
the seeders, which only ever receive the demo's objects, cannot write to it; and a user's
object that holds a slug or name the demo wants keeps it: the demo's is named apart.
"""

from dataclasses import dataclass, field

from django.contrib.contenttypes.models import ContentType

from apps.demo.models import DemoObject

# What a demo object gets when a user's object holds its slug, name or username.
APART_SLUG = "{value}-demo"
APART_NAME = "{value} (demo)"


@dataclass
class DemoRegistry:
    """The demo's marked objects, model by model: key → object id."""

    ids: dict[type, dict[str, int]] = field(default_factory=dict)
    # (model's verbose name, the demo's key, the name it got) of each object named apart
    named_apart: list[tuple[str, str, str]] = field(default_factory=list)
    # Keys of the demo's budgets to size again (taken over from an earlier seed_demo).
    to_resize: list[str] = field(default_factory=list)

    @classmethod
    def load(cls) -> "DemoRegistry":
        registry = cls()
        for record in DemoObject.objects.select_related("content_type"):
            model = record.content_type.model_class()
            if model is not None:
                registry.ids.setdefault(model, {})[record.key] = record.object_id
        return registry

    @property
    def is_empty(self) -> bool:
        return not any(self.ids.values())

    def get(self, model, key):
        """The demo's object of ``model`` under ``key``, or None (never made, or deleted
        since: a deleted demo object is made anew)."""
        object_id = self.ids.get(model, {}).get(key)
        if object_id is None:
            return None
        return model._default_manager.filter(pk=object_id).first()

    def all_of(self, model) -> dict[str, object]:
        """Key → object of every demo object of ``model`` that still exists."""
        keys = self.ids.get(model, {})
        by_id = model._default_manager.in_bulk(list(keys.values()))
        return {key: by_id[object_id] for key, object_id in keys.items() if object_id in by_id}

    def mark(self, instance, key: str) -> None:
        """Record ``instance`` as the demo's object under ``key`` (replacing a record
        whose object was deleted)."""
        model = type(instance)
        content_type = ContentType.objects.get_for_model(model)
        DemoObject.objects.update_or_create(
            content_type=content_type, key=key, defaults={"object_id": instance.pk}
        )
        self.ids.setdefault(model, {})[key] = instance.pk

    def free_value(
        self, model, field_name: str, wanted: str, pattern: str, max_length: int, *, apart=False
    ) -> str:
        """``wanted`` when no object of ``model`` holds it in ``field_name`` (and not
        ``apart``), else the first free of ``pattern`` applied to it, then numbered: the
        demo's object is named apart from the user's, which keeps its own."""
        manager = model._default_manager
        named_apart = pattern.format(value=wanted)
        candidates = ([] if apart else [wanted]) + [named_apart]
        candidates += [f"{named_apart} {number}" for number in range(2, 100)]
        for candidate in candidates:
            candidate = _fit(candidate, max_length, field_name)
            if not manager.filter(**{field_name: candidate}).exists():
                return candidate
        raise RuntimeError(f"No free {field_name} for the demo's {wanted!r}.")


def _fit(value: str, max_length: int, field_name: str) -> str:
    # Slugs take hyphens where names take spaces.
    if field_name in ("slug", "username"):
        value = value.replace(" ", "-")
    return value[:max_length]
