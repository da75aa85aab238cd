from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import ApiToken
from apps.core.roles import role_names_of


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    roles = serializers.ListField(child=serializers.CharField())
    token_read_only = serializers.BooleanField(allow_null=True)
    token_expires_at = serializers.DateTimeField(allow_null=True)


class MeView(APIView):
    """Who the request is authenticated as: handy to check a token from a script."""

    @extend_schema(responses=MeSerializer)
    def get(self, request):
        token = request.auth if isinstance(request.auth, ApiToken) else None
        data = {
            "username": request.user.get_username(),
            "roles": role_names_of(request.user),
            "token_read_only": token.read_only if token else None,
            "token_expires_at": token.expires_at if token else None,
        }
        return Response(MeSerializer(data).data)
