"""Serializer fields that take JSON as the schema documents it, nothing looser."""

import re

import django_filters
from django import forms
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from django.utils.encoding import smart_str
from rest_framework import serializers

SLUG_RE = re.compile(r"[-a-zA-Z0-9_]+")


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
        return super().to_internal_value(data)


class StrictModelSerializer(serializers.ModelSerializer):
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
