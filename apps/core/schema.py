"""OpenAPI generation for gpufleet (drf-spectacular).

Every operation documents the errors DRF answers with, so clients (and the Schemathesis
run in tests/test_api_schema.py) know a 400, 401, 403, 404, 409, 415 or 429 is by design.
"""

import copy
import re

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()


VALIDATION_ERROR = OpenApiResponse(
    {"type": "object", "additionalProperties": True},
    description="Invalid input: a list of messages per field name, or a detail.",
)


class ConflictSerializer(serializers.Serializer):
    """A DELETE refused: the object is still used (apps/core/api_errors.py), or has usage
    history and is archived instead (apps/pools/api.py)."""

    detail = serializers.CharField()
    used_by = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="What still refers to it (the kinds of objects).",
    )
    archive = serializers.URLField(
        required=False, help_text="The archive action's URL, when it can be archived instead."
    )


def _error(description):
    return OpenApiResponse(ErrorSerializer, description=description)


class GpufleetAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        has_body = self.method in ("POST", "PUT", "PATCH")
        errors = {
            "401": _error("No credentials, or invalid ones."),
            "403": _error("Not allowed (a read-only token writing, a role without permission)."),
            "429": _error("Throttled."),
        }
        if (
            has_body
            or self._get_filter_parameters()
            or self._get_pagination_parameters()
            or self.get_override_parameters()
        ):
            errors["400"] = VALIDATION_ERROR
        if "{" in self.path:
            errors["404"] = _error("No such object.")
        if has_body:
            errors["415"] = _error("The body is not JSON.")
        if self.method == "DELETE":
            errors["409"] = OpenApiResponse(
                ConflictSerializer, description="Still in use (or with usage history): kept."
            )
        for code, response in errors.items():
            responses.setdefault(code, self._get_response_for_code(response, code))
        return responses

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        # DRF drops allow_blank from read-only model fields, so a choice the model allows
        # blank ("not stated") would be missing from the answer's enum.
        if (
            isinstance(field, serializers.ChoiceField)
            and field.read_only
            and not field.allow_blank
            and _model_field_allows_blank(field)
        ):
            field = copy.copy(field)
            field.allow_blank = True
        return super()._map_serializer_field(field, direction, bypass_extensions)


def _model_field_allows_blank(field) -> bool:
    model = getattr(getattr(field.parent, "Meta", None), "model", None)
    if model is None or not field.source or "." in field.source:
        return False
    try:
        return bool(model._meta.get_field(field.source).blank)
    except Exception:  # noqa: BLE001 - not a model field (a property, an annotation)
        return False


DECIMAL_PATTERN = re.compile(r"\^-\?\\d\{0,(\d+)\}\(\?:\\\.\\d\{0,(\d+)\}\)\?\$")


def tighten_decimal_patterns(result, generator, request, public):
    """drf-spectacular's decimal pattern makes every part optional, so "" and "-" match."""

    def walk(node):
        if isinstance(node, dict):
            match = node.get("format") == "decimal" and DECIMAL_PATTERN.fullmatch(
                node.get("pattern", "")
            )
            if match:
                whole, places = match.groups()
                number = rf"\d{{1,{whole}}}(?:\.\d{{0,{places}}})?"
                node["pattern"] = rf"^-?(?:{number}|\.\d{{1,{places}}})$"
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(result)
    return result


def document_blank_filters(result, generator, request, public):
    """django-filter reads ``?purpose=`` as "no filter": list "" among the choices."""
    for path in result.get("paths", {}).values():
        for operation in path.values():
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if parameter.get("in") == "query" and "enum" in schema and "" not in schema["enum"]:
                    schema["enum"] = [*schema["enum"], ""]
    return result
