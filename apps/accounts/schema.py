"""Tells drf-spectacular how API tokens authenticate, so the OpenAPI schema (and the
Swagger UI's Authorize button) describe ``Authorization: Bearer <token>``."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "apps.accounts.authentication.ApiTokenAuthentication"
    name = "ApiToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A gpufleet API token, gpf_<key id>_<secret>.",
        }
