"""Users with roles, API tokens, hosts, operations and the audit log."""

import hashlib
import secrets

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import Q

from appliance.choices import AuditKind, OperationStatus, Role, TransportKind


class User(AbstractUser):
    """A person who logs in to Tarn; what they may do follows from their role."""

    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    passkey_login = models.BooleanField(
        default=False, help_text="May sign in with a passkey alone (no password): an admin's choice, for themselves."
    )

    def has_role(self, role: str) -> bool:
        mine = Role.ADMIN if self.is_superuser else self.role
        return Role.rank(mine) >= Role.rank(role)


class ApiToken(models.Model):
    """A per-user bearer token for the API; only its hash is stored, revoking keeps the row."""

    PREFIX = "tarn_"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=80)
    key_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="First characters, to tell tokens apart.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.name} ({self.hint}…)"

    @staticmethod
    def hash(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def new_key(cls) -> str:
        return cls.PREFIX + secrets.token_urlsafe(32)


class TotpDevice(models.Model):
    """A user's authenticator app (TOTP, RFC 6238, 30 s steps). The secret is sealed with a key derived from the
    install's secret key (the web verifies codes and cannot read the vault); last_step: the newest time step a code
    was accepted for, so a code is taken once. Codes typed for this account (from any address, in any session) are
    counted: too many within an hour lock its codes for an hour (appliance.twofactor.CODE_TRIES)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="totp")
    sealed_secret = models.TextField()
    confirmed_at = models.DateTimeField(null=True, blank=True, help_text="Empty until a first code confirmed it.")
    last_step = models.BigIntegerField(default=0)
    tries = models.PositiveIntegerField(default=0, help_text="Codes typed since tries_since, none accepted.")
    tries_since = models.DateTimeField(null=True, blank=True)
    locked_until = models.DateTimeField(null=True, blank=True, help_text="Codes are refused until then.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "TOTP device"

    def __str__(self):
        return f"authenticator app of {self.user}"


class Passkey(models.Model):
    """A WebAuthn credential (a passkey or a security key) a user registered, by name."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="passkeys")
    name = models.CharField(max_length=60)
    credential_id = models.CharField(max_length=1400, unique=True, help_text="base64url, as the browser gives it.")
    public_key = models.BinaryField()
    sign_count = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self):
        return f"{self.name} ({self.user})"


class RecoveryCode(models.Model):
    """One of a user's ten one-time recovery codes: only its SHA-256 is kept (a code has 50 random bits)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="recovery_codes")
    code_hash = models.CharField(max_length=64)
    used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"recovery code of {self.user}{' (used)' if self.used_at else ''}"


class TwoFactorPolicy(models.Model):
    """Which roles must use a second factor (one row)."""

    required_roles = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "two-factor policy"
        verbose_name_plural = "two-factor policy"

    def __str__(self):
        return f"second factor required for: {', '.join(self.required_roles) or 'no role'}"


class LoginAttempts(models.Model):
    """Login attempts for one user name from one address in the current window, counted before the password is
    checked (so parallel guesses count too) and cleared by a success: throttling that never locks a user out
    from another address."""

    username = models.CharField(max_length=150)
    address = models.CharField(max_length=45, blank=True)
    count = models.PositiveIntegerField(default=0)
    window_started = models.DateTimeField()

    class Meta:
        verbose_name = "login attempts"
        verbose_name_plural = "login attempts"
        constraints = [
            models.UniqueConstraint(fields=["username", "address"], name="one_login_counter_per_name_and_address")
        ]
        indexes = [models.Index(fields=["address", "window_started"])]

    def __str__(self):
        return f"{self.username} from {self.address or '?'}: {self.count}"


class Host(models.Model):
    """A machine Tarn manages: this one (local) or a NAS reached over SSH with a pinned host key."""

    name = models.SlugField(max_length=40, unique=True, help_text="Short name; also names its work queues.")
    transport = models.CharField(max_length=8, choices=TransportKind.choices, default=TransportKind.SSH)
    address = models.CharField(max_length=253, blank=True)
    port = models.PositiveIntegerField(default=22)
    username = models.CharField(max_length=32, default="root")
    identity_file = models.CharField(
        max_length=255, blank=True, help_text="Private key to log in with; empty uses Tarn's own key."
    )
    host_keys = models.TextField(blank=True, help_text="Pinned SSH host keys, one 'type base64' per line.")
    read_only = models.BooleanField(default=False, help_text="Refuse every change (plans only).")
    facts = models.JSONField(default=dict, blank=True)
    facts_error = models.CharField(max_length=500, blank=True)
    observed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def is_local(self) -> bool:
        return self.transport == TransportKind.LOCAL

    @property
    def host_queue(self) -> str:
        return f"host.{self.name}"

    @property
    def bench_queue(self) -> str:
        return f"bench.{self.name}"

    @property
    def has_zfs(self) -> bool:
        return bool(self.facts.get("zfs_version"))


class Operation(models.Model):
    """One change Tarn makes: saved first, queued on commit, tracked to its end, audit-logged."""

    kind = models.CharField(max_length=60)
    runner = models.CharField(max_length=60, blank=True, help_text="The registered runner when it is not kind's own.")
    target = models.CharField(max_length=300, help_text="What it acts on; one active operation per target.")
    host = models.ForeignKey(Host, null=True, blank=True, on_delete=models.SET_NULL, related_name="operations")
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=OperationStatus.choices, default=OperationStatus.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)
    message = models.CharField(max_length=1000, blank=True)
    log = models.TextField(blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    worker = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["target"], condition=Q(status__in=["queued", "running"]), name="one_active_operation_per_target"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "heartbeat_at"]),
            models.Index(fields=["status", "-id"]),
            # an app's operations, or a form's last refused attempt (operations_of, operation_refused: kinds, on a
            # host or anywhere, the latest): without them a scan of every operation when there are none (79 ms of
            # the Encryption page at 100,000 operations; the host's own index alone reads every one of the host's)
            models.Index(fields=["host", "kind", "-id"], name="appliance_op_host_kind_id"),
            models.Index(fields=["kind", "-id"], name="appliance_op_kind_id"),
        ]

    def __str__(self):
        return f"{self.kind} {self.target}"

    @property
    def is_active(self) -> bool:
        return self.status in OperationStatus.active()


class HostTurn(models.Model):
    """Whose turn it is on a host's change queue: a row while one of its changes runs, one per host (its key), taken by
    the worker about to run it, whichever machine that worker is on (appliance.operations.turn_take)."""

    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="turn")
    operation = models.OneToOneField(Operation, on_delete=models.CASCADE, related_name="turn")
    taken_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.host} runs {self.operation_id}"


class OperationSecret(models.Model):
    """Half of a secret an operation carries (a Samba password): random bytes the same length as the secret.
    The queued message holds the secret XOR this pad, so neither Redis nor the database alone holds anything
    but noise; the worker joins the halves and deletes this row before it runs the operation."""

    operation = models.OneToOneField(Operation, on_delete=models.CASCADE, related_name="secret_pad")
    pad = models.BinaryField()

    def __str__(self):
        return f"secret pad of operation {self.operation_id}"


class AuditEntryQuerySet(models.QuerySet):
    def delete(self):
        raise PermissionError("audit entries cannot be deleted")

    def delete_exported(self):
        """The one way entries leave: after audit_prune wrote them to an export file (never silently)."""
        return models.QuerySet.delete(self)

    def update(self, **kwargs):
        raise PermissionError("audit entries cannot be changed")


class AuditEntry(models.Model):
    """Who did what, when: every mutating request and every mutating host command. Append-only."""

    kind = models.CharField(max_length=10, choices=AuditKind.choices)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    username = models.CharField(max_length=150, blank=True)
    host = models.ForeignKey(Host, null=True, blank=True, on_delete=models.SET_NULL)
    host_name = models.CharField(max_length=40, blank=True)
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL)
    method = models.CharField(max_length=8, blank=True)
    path = models.CharField(max_length=500, blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    argv = models.JSONField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    auth = models.CharField(max_length=8, blank=True, help_text="session, token, or empty (anonymous, a worker).")
    token = models.ForeignKey("ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    params = models.JSONField(null=True, blank=True, help_text="The request's parameters, secrets masked.")

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["username", "-id"], name="audit_by_user"),
            models.Index(fields=["host_name", "-id"], name="audit_by_host"),
            models.Index(fields=["kind", "-id"], name="audit_by_kind"),
        ]

    def __str__(self):
        return f"{self.at} {self.username}: {self.argv or f'{self.method} {self.path}'}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise PermissionError("audit entries cannot be changed")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("audit entries cannot be deleted")
