from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.filters import AuditEventFilter
from apps.accounts.models import ApiToken, AuditEvent
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


class IsSuperuser(BasePermission):
    message = "Only administrators read the audit log."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_superuser)


class AuditEventSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_username", help_text="Who acted; blank: nobody.")
    sentence = serializers.CharField(help_text="What happened, in the request's language.")

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "at",
            "kind",
            "method",
            "username",
            "actor",
            "address",
            "sentence",
            "detail",
        ]


class AuditEventViewSet(viewsets.ReadOnlyModelViewSet):
    """The audit log, newest first: sign-ins, failed sign-ins, sign-outs, role and team
    changes and group-mapping changes. Superusers only; nothing is ever deleted."""

    queryset = AuditEvent.objects.order_by("-at", "-pk")
    serializer_class = AuditEventSerializer
    permission_classes = [IsAuthenticated, IsSuperuser]
    filterset_class = AuditEventFilter
