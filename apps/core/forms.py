from dataclasses import dataclass

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.forms.boundfield import BoundField
from django.forms.utils import pretty_name
from django.utils import translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.core.bounds import (
    BOUNDS,
    USD,
    Bound,
    Scale,
    bound_error,
    confirmation_label,
    confirmation_warning,
    needs_confirmation,
    number_text_error,
    plain,
)
from apps.core.slugs import RESERVED_SLUGS, unique_slug_from_name


class PlainNumberMixin:
    """A number field that reads only plain numbers (apps/core/bounds.py): "1,4" is
    refused with what to type, never read as 14 or 1.4."""

    def to_python(self, value):
        if isinstance(value, str):
            whole = not isinstance(self, forms.DecimalField | forms.FloatField)
            problem = number_text_error(value, whole=whole, translate=gettext)
            if problem:
                raise ValidationError(problem, code="invalid")
        return super().to_python(value)


_PLAIN_CLASSES: dict[type, type] = {}


def plain_number_class(field_class: type) -> type:
    """``field_class`` reading plain numbers only: DecimalField gives PlainDecimalField."""
    if issubclass(field_class, PlainNumberMixin):
        return field_class
    if field_class not in _PLAIN_CLASSES:
        name = f"Plain{field_class.__name__}"
        _PLAIN_CLASSES[field_class] = type(name, (PlainNumberMixin, field_class), {})
    return _PLAIN_CLASSES[field_class]


def read_plain_numbers(field: forms.IntegerField) -> None:
    """Makes a number field (Decimal and Float fields are Integer fields too) refuse
    ambiguous text, and draws it as a text input: Chromium's ``<input type="number">``
    drops the comma of "1,4" and submits 14, so the server never sees what was typed.
    ``inputmode`` still brings up the number keyboard on phones."""
    field.__class__ = plain_number_class(type(field))
    if type(field.widget) is forms.NumberInput:
        attrs = {
            key: value
            for key, value in field.widget.attrs.items()
            if key not in ("min", "max", "step")
        }
        whole = not isinstance(field, forms.DecimalField | forms.FloatField)
        attrs["inputmode"] = "numeric" if whole else "decimal"
        widget = forms.TextInput(attrs=attrs)
        widget.is_required = field.required
        field.widget = widget


class BoundValidator:
    """The range of apps/core/bounds.py, in the currency the form is priced in."""

    def __init__(self, label: str, bound: Bound, scale):
        self.label, self.bound, self.scale = label, bound, scale

    def __call__(self, value):
        message = bound_error(self.label, value, self.bound, self.scale(), translate=gettext)
        if message:
            raise ValidationError(message, code="out_of_range")


def apply_bound(field: forms.Field, label: str, bound: Bound, scale) -> None:
    """Replaces the field's own minimum and maximum by the declared range, so a value
    gets one message that says the range, its unit and why."""
    field.validators = [
        validator
        for validator in field.validators
        if not isinstance(validator, MinValueValidator | MaxValueValidator)
    ]
    field.validators.insert(0, BoundValidator(label, bound, scale))


@dataclass(frozen=True)
class Confirmation:
    """A checkbox the template draws under a field whose value must be confirmed; it
    carries the value it confirms, so changing the value asks again."""

    name: str
    value: str
    label: str


class TablerBoundField(BoundField):
    @property
    def confirmation(self) -> Confirmation | None:
        return self.form.confirmations.get(self.name)


class TablerFormMixin:
    """Gives every widget Tabler's classes, and ``is-invalid`` to fields with errors,
    so templates render ``{{ field }}`` and keep Django's own widget logic.

    Every number field reads plain numbers only and takes the range apps/core/bounds.py
    declares for its name; a value above the range's ``confirm_above`` is refused until
    the checkbox drawn under it (``field.confirmation``) is ticked."""

    bound_field_class = TablerBoundField

    def bounds_scale(self) -> Scale:
        """The currency the form's money is typed in; forms priced otherwise override it."""
        return USD

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.confirmations: dict[str, Confirmation] = {}
        self._stored_values = {}
        for name, field in self.fields.items():
            self._prepare_field(name, field)

    def add_field(self, name: str, field: forms.Field) -> None:
        """Add a field after ``__init__`` (one per row of related data, say), prepared as
        the declared ones are: plain numbers, its range, Tabler's classes."""
        self.fields[name] = field
        self._prepare_field(name, field)

    def _prepare_field(self, name: str, field: forms.Field) -> None:
        if isinstance(field, forms.IntegerField):
            read_plain_numbers(field)
            bound = BOUNDS.get(name)
            if bound is not None:
                apply_bound(field, field.label or pretty_name(name), bound, self.bounds_scale)
                instance = getattr(self, "instance", None)
                if bound.confirm_above is not None and instance is not None and instance.pk:
                    self._stored_values[name] = getattr(instance, name, None)
        widget = field.widget
        if isinstance(widget, forms.CheckboxInput):
            css_class = "form-check-input"
        elif isinstance(widget, forms.Select):
            css_class = "form-select"
        else:
            css_class = "form-control"
        widget.attrs["class"] = f"{widget.attrs.get('class', '')} {css_class}".strip()

    def full_clean(self):
        super().full_clean()
        if self.is_bound:
            self._ask_for_confirmations()
        for name in self.errors:
            if name in self.fields:
                widget = self.fields[name].widget
                widget.attrs["class"] = f"{widget.attrs.get('class', '')} is-invalid".strip()
                widget.attrs["aria-invalid"] = "true"

    def _ask_for_confirmations(self):
        scale = self.bounds_scale()
        for name, field in self.fields.items():
            bound = BOUNDS.get(name)
            if bound is None or bound.confirm_above is None or name not in self.cleaned_data:
                continue
            value = self.cleaned_data[name]
            if not needs_confirmation(value, bound, scale):
                continue
            if name in self._stored_values and self._stored_values[name] == value:
                continue  # confirmed when it was saved
            confirm_name = self.add_prefix(f"confirm_{name}")
            if self.data.get(confirm_name) == plain(value):
                continue
            label = field.label or pretty_name(name)
            self.confirmations[name] = Confirmation(
                confirm_name,
                plain(value),
                confirmation_label(value, bound, scale, translate=gettext),
            )
            self.add_error(
                name, confirmation_warning(label, value, bound, scale, translate=gettext)
            )


class SlugFromNameMixin:
    """Fills an empty slug from the name and refuses slugs that shadow fixed URLs."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "slug" in self.fields:
            self.fields["slug"].required = False
            self.fields["slug"].help_text = _(
                "Leave empty to derive it from the name (Chinese is spelt in pinyin)."
            )

    def _slug_max_length(self) -> int:
        return getattr(self.fields["slug"], "max_length", None) or 50

    def clean_slug(self):
        slug = self.cleaned_data.get("slug") or unique_slug_from_name(
            self.data.get("name", ""),
            self._meta.model,
            max_length=self._slug_max_length(),
            exclude_pk=self.instance.pk,
        )
        if not slug:
            raise forms.ValidationError(gettext("Enter a slug or a name it can be made from."))
        if slug in RESERVED_SLUGS:
            raise forms.ValidationError(
                gettext("“%(slug)s” is reserved for a page address; choose another.")
                % {"slug": slug}
            )
        return slug


@dataclass(frozen=True)
class FormSection:
    """A titled group of a form's fields, shown while the field whose element id is
    ``controller_id`` has one of ``shown_values`` (always, without a controller)."""

    title: str
    fields: list[BoundField]
    controller_id: str = ""
    shown_values: tuple[str, ...] = ()


class SectionedFormMixin:
    """Fields in titled sections (``sections``: (title, field names) pairs), some of them
    shown only for some values of another field (``section_conditions``: title →
    (field name, values)), as a workload's training settings are for training kinds only.

    The page hides the other sections (static/js/conditional_fields.js) and the server
    does not ask for their fields: a hidden field left empty keeps the value it had (the
    object's, or the model's default for a new one). Everything shown is still validated.
    """

    sections = ()
    section_conditions: dict = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._hidden_field_names = set()
        if self.is_bound:
            for title, names in self.sections:
                if not self._section_shown(title):
                    self._hidden_field_names.update(names)
            for name in self._hidden_field_names:
                if name in self.fields:
                    self.fields[name].required = False

    def _condition_of(self, title):
        """The condition of the section titled ``title``, matched on the untranslated
        title, so a condition keyed by "Training" holds on a page in any language."""
        with translation.override(None):
            wanted = str(title)
            for key, condition in self.section_conditions.items():
                if str(key) == wanted:
                    return condition
        return None

    def _section_shown(self, title: str) -> bool:
        condition = self._condition_of(title)
        if condition is None:
            return True
        controller, values = condition
        return self.data.get(self.add_prefix(controller)) in {str(value) for value in values}

    def field_sections(self) -> list[FormSection]:
        """The sections with their bound fields, for templates that render forms in cards."""
        sections = []
        for title, names in self.sections:
            controller, values = self._condition_of(title) or ("", ())
            sections.append(
                FormSection(
                    title,
                    [self[name] for name in names],
                    self[controller].auto_id if controller else "",
                    tuple(str(value) for value in values),
                )
            )
        return sections

    def _clean_fields(self):
        super()._clean_fields()
        for name in self._hidden_field_names:
            field = self.fields.get(name)
            if field is not None and self.cleaned_data.get(name) in field.empty_values:
                kept = self.get_initial_for_field(field, name)
                if kept in field.empty_values:
                    continue
                try:
                    self.cleaned_data[name] = field.clean(kept)
                except ValidationError as error:
                    self.add_error(name, error)
