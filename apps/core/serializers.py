"""Serializer fields that take JSON as the schema documents it, nothing looser."""

import math
import re

import django_filters
from django import forms
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.encoding import smart_str
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core import money
from apps.core.bounds import (
    BOUNDS,
    GROUPING,
    bound_error,
    confirmation_warning,
    needs_confirmation,
    number_text_error,
)
from apps.core.slugs import unique_slug_from_name

SLUG_RE = re.compile(r"[-a-zA-Z0-9_]+")


class NoBlankQueryMixin:
    """Query strings read "?start=" as a parameter not given; the schema says a value, so
    a blank one is refused, naming it. Lists the parameters in ``not_blank``."""

    not_blank: tuple[str, ...] = ()

    def validate(self, attrs):
        blank = [
            name
            for name in self.not_blank
            if name in self.fields and self.initial_data.get(name, None) == ""
        ]
        if blank:
            raise serializers.ValidationError(
                {name: ["This parameter must not be empty."] for name in blank}
            )
        return super().validate(attrs)


@extend_schema_field({"type": "string", "enum": ["true", "false", "1", "0"], "minLength": 1})
class QueryBooleanField(serializers.BooleanField):
    """A yes/no query parameter: true or 1, false or 0, as documented; DRF's own also
    reads "yes", "on", "t" and more, which the schema does not admit."""

    TRUE_VALUES = {"true", "1"}
    FALSE_VALUES = {"false", "0"}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if data in self.TRUE_VALUES:
            return True
        if data in self.FALSE_VALUES:
            return False
        self.fail("invalid", input=data)


class StrictCharField(serializers.CharField):
    """DRF turns 0 into "0"; the schema says string, so a number is a 400."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictSlugField(StrictCharField, serializers.SlugField):
    pass


class SlugReferenceField(serializers.SlugRelatedField):
    """A reference by slug. What cannot be a slug (a NUL byte, say) does not exist: it
    never reaches the database, which would fail on it with a 500."""

    def to_internal_value(self, data):
        if not isinstance(data, str) or not SLUG_RE.fullmatch(data):
            self.fail("does_not_exist", slug_name=self.slug_field, value=smart_str(data))
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """DRF reads 0, 1, "yes" and "on" as booleans; the schema says true or false."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictFloatField(serializers.FloatField):
    """DRF reads false, true and "1.5" as numbers; the schema says number."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictDecimalField(serializers.DecimalField):
    """Decimals travel as strings ("80.0"), as the schema documents them: a JSON number
    would pass through a binary float first, and the schema does not admit one."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        problem = number_text_error(data)
        if problem:  # the forms' words for "1,4" (apps/core/bounds.py)
            raise serializers.ValidationError(problem, code="invalid")
        return super().to_internal_value(data)


class PlainIntegerField(serializers.IntegerField):
    """Query parameters arrive as text: "1,000" is refused with what to type, as in the
    forms, instead of DRF's bare "A valid integer is required"."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            problem = number_text_error(data, whole=True)
            if problem:
                raise serializers.ValidationError(problem, code="invalid")
        return super().to_internal_value(data)


class PlainFloatField(serializers.FloatField):
    """A number in a query string, where the schema's "number" may come with an exponent
    (1e-05): thousands separators and decimal commas are refused as the forms refuse
    them, and so are inf and NaN."""

    def to_internal_value(self, data):
        if isinstance(data, str) and re.search(f"[{GROUPING}]", data.strip()):
            raise serializers.ValidationError(number_text_error(data), code="invalid")
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            self.fail("invalid")
        return value


CONFIRM_HIGH_PRICE = "confirm_high_price"


class BoundValidator:
    """The range apps/core/bounds.py declares for the field's name (prices in USD)."""

    def __init__(self, label, bound):
        self.label, self.bound = label, bound

    def __call__(self, value):
        message = bound_error(self.label, value, self.bound)
        if message:
            raise serializers.ValidationError(message, code="out_of_range")


class BoundedSerializerMixin:
    """Every writable number field takes the range apps/core/bounds.py declares for its
    name, as the forms do; a value above its ``confirm_above`` answers 400 unless the
    request also sends ``"confirm_high_price": true`` (or leaves the stored value as it
    is)."""

    def get_fields(self):
        fields = super().get_fields()
        confirmable = False
        for name, field in fields.items():
            bound = BOUNDS.get(name)
            if bound is None or field.read_only:
                continue
            if not isinstance(
                field, serializers.DecimalField | serializers.IntegerField | serializers.FloatField
            ):
                continue
            field.validators = [
                BoundValidator(field.label or name, bound),
                *(
                    validator
                    for validator in field.validators
                    if not isinstance(validator, MinValueValidator | MaxValueValidator)
                ),
            ]
            confirmable = confirmable or bound.confirm_above is not None
        if confirmable:
            fields[CONFIRM_HIGH_PRICE] = StrictBooleanField(
                write_only=True,
                required=False,
                help_text="true saves a GPU-hour price above 50 USD, which is otherwise "
                "refused as a likely typo (an instance or monthly price).",
            )
        return fields

    def to_internal_value(self, data):
        attrs = super().to_internal_value(data)
        confirmed = attrs.pop(CONFIRM_HIGH_PRICE, False)
        errors = {}
        for name, value in attrs.items():
            bound = BOUNDS.get(name)
            if confirmed or bound is None or not needs_confirmation(value, bound):
                continue
            if self.instance is not None and getattr(self.instance, name, None) == value:
                continue  # confirmed when it was saved
            errors[name] = [
                confirmation_warning(
                    self.fields[name].label or name,
                    value,
                    bound,
                    how=f'send "{CONFIRM_HIGH_PRICE}": true with it',
                )
            ]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


SLUG_FROM_NAME_HELP = (
    "Optional: left out on a create, it is derived from the name as the pages derive it "
    "(Chinese in pinyin, 北京推理池 → bei-jing-tui-li-chi), with -2, -3… when taken."
)


class SlugFromNameSerializerMixin:
    """``slug`` is optional where ``name`` is given: a create without one derives it from
    the name exactly as the pages' forms do (apps/core/slugs.py). A slug sent is kept as
    sent, and refused when taken."""

    def get_fields(self):
        fields = super().get_fields()
        slug, name = fields.get("slug"), fields.get("name")
        if slug is not None and name is not None and not slug.read_only:
            slug.required = False
            slug.help_text = SLUG_FROM_NAME_HELP
        return fields

    def to_internal_value(self, data):
        attrs = super().to_internal_value(data)
        slug = self.fields.get("slug")
        if self.instance is None and "slug" not in attrs and slug is not None and "name" in attrs:
            attrs["slug"] = unique_slug_from_name(
                attrs["name"],
                self.Meta.model,
                max_length=getattr(slug, "max_length", None) or 50,
            )
            if not attrs["slug"]:
                raise serializers.ValidationError(
                    {"slug": ["Enter a slug or a name it can be made from."]}
                )
        return attrs


class StrictModelSerializer(
    SlugFromNameSerializerMixin, BoundedSerializerMixin, serializers.ModelSerializer
):
    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.DecimalField: StrictDecimalField,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
        models.SlugField: StrictSlugField,
        models.BooleanField: StrictBooleanField,
    }


class StrictBooleanFormField(forms.NullBooleanField):
    """django-filter's boolean ignores what it cannot read (?mig_support=AAA): refuse it."""

    widget = forms.TextInput

    def to_python(self, value):
        if value in (None, ""):
            return None
        if value in (True, "true", "True"):
            return True
        if value in (False, "false", "False"):
            return False
        raise DjangoValidationError("Enter true or false.", code="invalid")

    def validate(self, value):
        pass


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanFormField


class MoneyField(serializers.DecimalField):
    """An amount of money in the API: a decimal string to the cent ("510.72"); the schema
    says ``type: string, format: decimal``. Reads the same strings on input."""

    places = money.CENT_PLACES

    def __init__(self, **kwargs):
        kwargs.setdefault("max_digits", None)
        kwargs.setdefault("decimal_places", self.places)
        kwargs.setdefault("coerce_to_string", True)
        kwargs.setdefault("rounding", money.MONEY_ROUNDING)
        super().__init__(**kwargs)

    def to_representation(self, value):
        return money.money_text(value, self.places)


class UnitPriceField(MoneyField):
    """A unit price in the API: a decimal string to 4 decimals ("2.3300")."""

    places = money.UNIT_PRICE_PLACES
