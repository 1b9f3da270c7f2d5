"""Alerts: rules (levels and thresholds an admin may change), the alerts they raised (open until the condition
ends) with what was delivered where, and the channels they go to (e-mail, webhook)."""

import json

from django.db import models
from django.db.models import Q

from analytics.choices import RULE, ChannelKind, Level, SmtpSecurity
from appliance.models import Host


class RuleSetting(models.Model):
    """An admin's change to a rule (a missing row: the rule's defaults)."""

    key = models.CharField(max_length=40, unique=True)
    enabled = models.BooleanField(default=True)
    level = models.CharField(max_length=10, choices=Level.choices)
    threshold = models.FloatField(null=True, blank=True)

    def __str__(self):
        return self.key


class Alert(models.Model):
    host = models.ForeignKey(Host, null=True, blank=True, on_delete=models.CASCADE, related_name="alerts")
    rule = models.CharField(max_length=40)
    subject = models.CharField(max_length=255, blank=True, help_text="What it is about: a pool, a run…")
    level = models.CharField(max_length=10, choices=Level.choices)
    message = models.CharField(max_length=500)
    raised_at = models.DateTimeField(auto_now_add=True)
    cleared_at = models.DateTimeField(null=True, blank=True)
    deliveries = models.JSONField(default=list, help_text="[{channel, event, ok, error, at}]")

    class Meta:
        ordering = ["-raised_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["host", "rule", "subject"],
                condition=Q(cleared_at__isnull=True),
                name="one_open_alert_per_condition",
            ),
        ]
        indexes = [models.Index(fields=["cleared_at", "-raised_at"], name="alert_open_recent")]

    def __str__(self):
        return self.message

    @property
    def title(self) -> str:
        return RULE[self.rule].title if self.rule in RULE else self.rule


class Channel(models.Model):
    name = models.CharField(max_length=80, unique=True)
    kind = models.CharField(max_length=8, choices=ChannelKind.choices)
    enabled = models.BooleanField(default=True)
    min_level = models.CharField(
        max_length=10, choices=Level.choices, default=Level.WARNING, help_text="Send alerts of this level and above."
    )
    # e-mail
    smtp_host = models.CharField(max_length=253, blank=True)
    smtp_port = models.PositiveIntegerField(default=587)
    smtp_security = models.CharField(max_length=8, choices=SmtpSecurity.choices, default=SmtpSecurity.STARTTLS)
    smtp_username = models.CharField(max_length=254, blank=True)
    smtp_password = models.CharField(max_length=254, blank=True, help_text="Kept; never shown or logged.")
    sender = models.EmailField(blank=True)
    recipients = models.CharField(max_length=1000, blank=True, help_text="Addresses, comma-separated.")
    # webhook
    url = models.URLField(max_length=500, blank=True)
    secret = models.CharField(max_length=128, blank=True, help_text="Signs each timestamp and body: X-Tarn-Signature.")
    allow_private = models.BooleanField(
        "Allow private addresses",
        default=False,
        help_text="Post to a private, loopback or link-local address (a receiver on your own network). Off: the "
        "URL's host must resolve to a public address.",
    )
    last_result = models.CharField(max_length=500, blank=True)
    last_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class SamplerSetting(models.Model):
    """How often hosts are sampled and how long series are kept (one row; missing: the defaults)."""

    interval = models.PositiveIntegerField(default=10, help_text="Seconds between samples of each host (5–300).")
    raw_hours = models.PositiveIntegerField(default=24, help_text="Keep every sample this many hours (1–168).")
    rollup_days = models.PositiveIntegerField(
        default=30, help_text="Keep 5-minute and hourly averages this many days (1–365)."
    )

    def __str__(self):
        return f"every {self.interval} s"


class SamplerState(models.Model):
    """A host's last counters (rates are differences from them), when it was sampled and what went wrong."""

    host = models.OneToOneField(Host, primary_key=True, on_delete=models.CASCADE, related_name="sampler")
    counters = models.JSONField(default=dict)
    at = models.DateTimeField(null=True, blank=True)
    busy_until = models.DateTimeField(null=True, blank=True, help_text="A sample is being taken until then.")
    error = models.CharField(max_length=500, blank=True)
    rolled_up_to = models.DateTimeField(null=True, blank=True, help_text="5-minute averages exist up to here.")

    def __str__(self):
        return f"sampler of host {self.pk}"


class CompactJSON(json.JSONEncoder):
    """JSON without spaces after separators: a tenth less for rows written every 10 s for every host."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "separators": (",", ":")})


class Sample(models.Model):
    """One host's figures per second: a raw sample (step 0: since the sample before, ending at `at`) or a 5-minute
    (step 300) or hourly (step 3600) average of the period starting at `at`. values: {'group|subject|metric': n}."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="samples")
    at = models.DateTimeField()
    step = models.PositiveIntegerField()
    values = models.JSONField(default=dict, encoder=CompactJSON)

    class Meta:
        indexes = [models.Index(fields=["host", "step", "at"], name="sample_host_step_at")]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M:%S} step {self.step}"
