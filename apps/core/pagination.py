from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination


class StrictLimitOffsetPagination(LimitOffsetPagination):
    """limit/offset as documented: a malformed value is a 400, not silently ignored."""

    max_limit = 1000

    def _read(self, request, name, minimum):
        raw = request.query_params.get(name)
        if raw is None:
            return None
        try:
            value = int(raw)
        except ValueError:
            raise ValidationError({name: [f"Must be an integer ≥ {minimum}."]}) from None
        if value < minimum:
            raise ValidationError({name: [f"Must be an integer ≥ {minimum}."]})
        return value

    def get_limit(self, request):
        limit = self._read(request, self.limit_query_param, 1)
        if limit is None:
            return self.default_limit
        return min(limit, self.max_limit) if self.max_limit else limit

    def get_offset(self, request):
        return self._read(request, self.offset_query_param, 0) or 0

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.limit_query_param:
                parameter["schema"]["minimum"] = 1
            elif parameter["name"] == self.offset_query_param:
                parameter["schema"]["minimum"] = 0
        return parameters
