from rest_framework import serializers

from appliance.api.serializers import ConfirmField
from appliance.models import Host
from updates.models import HostUpdates


class HostUpdatesSerializer(serializers.ModelSerializer):
    host = serializers.CharField(source="host.name")
    security = serializers.IntegerField(read_only=True, help_text="Updates from a security archive.")

    class Meta:
        model = HostUpdates
        fields = [
            "host",
            "checked_at",
            "pending",
            "removed",
            "security",
            "guard",
            "held",
            "interrupted",
            "reboot",
            "boot",
        ]


class RebootRequest(serializers.Serializer):
    confirm = ConfirmField(help_text="The host's name, typed.", max_length=40)


class RolloutRequest(serializers.Serializer):
    hosts = serializers.ListField(
        child=serializers.SlugRelatedField(slug_field="name", queryset=Host.objects.all()),
        min_length=1,
        max_length=100,
        help_text="Host names, in the order to update them; the first is the canary.",
    )
