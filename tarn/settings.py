"""Tarn's one settings module; every knob comes from the environment (see README, "Settings")."""

from datetime import timedelta
from pathlib import Path

import dj_database_url

from appliance.env import env_bool, env_int, env_list, env_str, secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("TARN_DATA_DIR", str(BASE_DIR / "var")))

SECRET_KEY = secret_key(DATA_DIR)
TARN_VERSION = "0.27.0"  # written into each configuration backup's manifest
# WebAuthn's relying party ID: the host name browsers use for Tarn; empty: the request's own host name.
TARN_WEBAUTHN_RP_ID = env_str("TARN_WEBAUTHN_RP_ID")
DEBUG = env_bool("TARN_DEBUG", False)
# TARN_HTTPS=true (what `make run` sets: its nginx front terminates TLS): Secure cookies, the SSL redirect, the
# scheme taken from the front's X-Forwarded-Proto. The front listens on TARN_HTTPS_PORT and TARN_HTTP_PORT (a redirect
# and /healthz only) and hands requests to the web on its Unix socket (appliance.tls).
HTTPS = env_bool("TARN_HTTPS", False)
TARN_HTTPS_PORT = env_int("TARN_HTTPS_PORT", 443)
TARN_HTTP_PORT = env_int("TARN_HTTP_PORT", 80)
# TARN_FRONT=true: requests come from Tarn's own front, so the client's address is its X-Real-IP (the socket lets
# only the front and the web in); otherwise REMOTE_ADDR.
TARN_FRONT = env_bool("TARN_FRONT", False)
ALLOWED_HOSTS = env_list("TARN_ALLOWED_HOSTS", "*")
CSRF_TRUSTED_ORIGINS = env_list("TARN_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "django_celery_beat",
    "appliance.apps.ApplianceConfig",
    "pools.apps.PoolsConfig",
    "shares.apps.SharesConfig",
    "tuning.apps.TuningConfig",
    "benchmarks.apps.BenchmarksConfig",
    "analytics.apps.AnalyticsConfig",
    "replication.apps.ReplicationConfig",
    "health.apps.HealthConfig",
    "encryption.apps.EncryptionConfig",
    "backups.apps.BackupsConfig",
    "certificates.apps.CertificatesConfig",
    "updates.apps.UpdatesConfig",
    "directory.apps.DirectoryConfig",
    "permissions.apps.PermissionsConfig",
    "capacity.apps.CapacityConfig",
    "recovery.apps.RecoveryConfig",
    "iscsi.apps.IscsiConfig",
    "ups.apps.UpsConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "appliance.auth.middleware.IdleSessionMiddleware",
    "appliance.auth.middleware.LoginAndRoleMiddleware",
    "appliance.audit.middleware.AuditRequestMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "tarn.urls"
WSGI_APPLICATION = "tarn.wsgi.application"
AUTH_USER_MODEL = "appliance.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "appliance.context_processors.shell",
                "analytics.context_processors.bell",
            ],
        },
    },
]

_database_url = env_str("DATABASE_URL")
if _database_url:
    DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=60)}
else:
    # Its own folder: the web writes the database (and its -wal, -shm), and must not write beside the keys (see
    # appliance.datadir; `make run` moves an older install's database here).
    (DATA_DIR / "db").mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "db" / "tarn.sqlite3",
            # Keep connections: opening one (and its pragmas) per request costs more than the page's queries.
            "CONN_MAX_AGE": 600,
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": {
                # WAL lets the web server read while a worker writes; IMMEDIATE avoids lock upgrades.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
            # A file, not :memory:, so a real Celery worker and a live server can share the test database.
            "TEST": {"NAME": DATA_DIR / "db" / "test.sqlite3"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TZ", "UTC") or "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/htmx", BASE_DIR / "node_modules" / "htmx.org" / "dist"),
    ("vendor/chartjs", BASE_DIR / "node_modules" / "chart.js" / "dist"),
]
# Serve straight from the finders: no collectstatic step to forget, and the app is small.
WHITENOISE_USE_FINDERS = True

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = env_int("TARN_SESSION_SECONDS", 12 * 3600)
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if HTTPS:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("TARN_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # a monitor that cannot do TLS (the front passes only this over HTTP)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # HSTS: Tarn's front sends it once the admin says the certificate is trusted (a browser told to insist on HTTPS
    # before it trusts a self-signed certificate would refuse Tarn with no way past the warning). Behind another TLS
    # terminator, TARN_HSTS_SECONDS.
    SECURE_HSTS_SECONDS = env_int("TARN_HSTS_SECONDS", 0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("TARN_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = [
    *(["security.W004"] if HTTPS and not env_int("TARN_HSTS_SECONDS", 0) else []),  # the front's, as said above
    *(["security.W021"] if HTTPS and not env_bool("TARN_HSTS_PRELOAD", False) else []),
]

# iperf3 seconds per direction when a change set measures its effect (before and after).
TARN_TUNING_MEASURE_SECONDS = env_int("TARN_TUNING_MEASURE_SECONDS", 5)
# How long the home page's panels are kept (per process) before they are read again; tests run with 0.
TARN_DASHBOARD_SECONDS = env_int("TARN_DASHBOARD_SECONDS", 2)
TARN_DOWNLOAD_MAX_MB = env_int("TARN_DOWNLOAD_MAX_MB", 256)  # the largest file a snapshot's page hands out
# Failed logins: after this many failures for one username or address in the window, refuse.
TARN_LOGIN_MAX_FAILURES = env_int("TARN_LOGIN_MAX_FAILURES", 5)  # per user name and address
TARN_LOGIN_MAX_PER_ADDRESS = env_int("TARN_LOGIN_MAX_PER_ADDRESS", 20)  # one address, all names (spraying)
# A session unused this long ends (the cookie itself lasts TARN_SESSION_SECONDS at most).
TARN_SESSION_IDLE_SECONDS = env_int("TARN_SESSION_IDLE_SECONDS", 3600)
TARN_LOGIN_WINDOW = timedelta(seconds=env_int("TARN_LOGIN_WINDOW_SECONDS", 900))
# Local host: read-only refuses every mutating command (a dry-run host).
TARN_LOCAL_READ_ONLY = env_bool("TARN_LOCAL_READ_ONLY", False)
TARN_SSH_CONNECT_TIMEOUT = env_int("TARN_SSH_CONNECT_TIMEOUT", 8)
# An operation whose worker has not reported for this long is marked failed by the reaper.
TARN_OPERATION_STALE_SECONDS = env_int("TARN_OPERATION_STALE_SECONDS", 90)
# Audit entries older than this many days are written to DATA_DIR/audit-exports/*.jsonl.gz, then removed
# (daily, by beat); 0 keeps them all.
TARN_AUDIT_RETENTION_DAYS = env_int("TARN_AUDIT_RETENTION_DAYS", 0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "appliance.auth.tokens.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["appliance.auth.permissions.RolePermission"],
    "DEFAULT_SCHEMA_CLASS": "appliance.api.schema.AppSchema",  # paths grouped by app
    "DEFAULT_PAGINATION_CLASS": "appliance.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_PARSER_CLASSES": [
        "appliance.api.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "appliance.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Tarn API",
    "DESCRIPTION": (
        "Tarn turns Linux boxes with OpenZFS into NAS appliances. This API does what the pages do: hosts, pools and "
        "datasets, SMB and NFS shares, tuning, benchmarks, analytics and alerts, replication NAS to NAS, disk health, "
        "native encryption and configuration backups. Every change answers 202 with an Operation to follow at "
        "/api/v1/operations/{id}/. Authenticate with a bearer token made on your account's API tokens page; your role (viewer, operator, "
        "admin) decides what you may change."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["appliance.auth.permissions.RolePermission"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "appliance.api.schema.app_tags"],
    # Choice sets that share a field name across apps get their own names in the schema.
    "ENUM_NAME_OVERRIDES": {
        "SettingKindEnum": "tuning.choices.SettingKind",
        "ChangeKindEnum": "tuning.choices.ChangeKind",
        "NetworkProfileEnum": "benchmarks.choices.NETWORK_PROFILES",
        "AlertLevelEnum": "analytics.choices.Level",
        "ReplicationTransportEnum": "replication.choices.Transport",
        "SelfTestKindEnum": "health.choices.SelfTestKind",
        "SelfTestEveryEnum": "appliance.choices.Every",
        "RunStatusEnum": "appliance.choices.RunStatus",
        "AccountKindEnum": "appliance.choices.AccountKind",
        "QuotaKindEnum": "permissions.choices.QuotaKind",
        "FileRestoreHowEnum": "recovery.choices.How",
        "UpsModeEnum": "ups.choices.Mode",
        "UpsPolicyEnum": "ups.choices.Policy",
    },
}

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_IGNORE_RESULT = True  # operations record their own outcome in the database
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("TARN_TASK_SOFT_TIME_LIMIT", 3600)
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 120
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 4 * 3600}
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE = {
    "reap-stale-operations": {"task": "appliance.tasks.operations_reap", "schedule": 30.0},
    "refresh-host-facts": {"task": "appliance.tasks.hosts_refresh_facts", "schedule": 600.0},
    "refresh-storage-inventory": {"task": "pools.tasks.inventory_refresh_all", "schedule": 300.0},
    "periodic-snapshots": {"task": "pools.tasks.snapshot_tasks_run_due", "schedule": 60.0},
    "scrub-schedules": {"task": "pools.tasks.scrub_schedules_run_due", "schedule": 3600.0},
    "audit-retention": {"task": "appliance.tasks.audit_prune", "schedule": 86400.0},
    "refresh-links-and-tunables": {"task": "tuning.tasks.tuning_refresh_all", "schedule": 300.0},
    "settle-network-changes": {"task": "tuning.tasks.changes_settle", "schedule": 10.0},
    "replication-tasks": {"task": "replication.tasks.tasks_run_due", "schedule": 60.0},
    "disk-health": {"task": "health.tasks.health_poll_due", "schedule": 60.0},
    "disk-temperature-retention": {"task": "health.tasks.temperatures_prune", "schedule": 86400.0},
    "evaluate-alerts": {"task": "analytics.tasks.alerts_evaluate_all", "schedule": 60.0},
    "sample-hosts": {"task": "analytics.tasks.samples_due", "schedule": 5.0},
    "configuration-backups": {"task": "backups.tasks.backups_run_due", "schedule": 60.0},
    "backup-uploads-retention": {"task": "backups.tasks.uploads_prune", "schedule": 86400.0},
    "key-exports-expiry": {"task": "encryption.tasks.key_exports_prune", "schedule": 3600.0},
    "series-rollups": {"task": "analytics.tasks.series_maintain", "schedule": 300.0},
    "certificate-renewal": {"task": "certificates.tasks.acme_renew_due", "schedule": 3600.0},
    "directory-checks": {"task": "directory.tasks.members_check_due", "schedule": 60.0},
    "quota-reads": {"task": "permissions.tasks.quotas_read_due", "schedule": 60.0},
    "capacity-forecasts": {"task": "capacity.tasks.capacity_update_all", "schedule": 3600.0},
    "restore-safety-snapshots": {"task": "recovery.tasks.safety_snapshots_prune", "schedule": 86400.0},
    "ups-read": {"task": "ups.tasks.ups_read_all", "schedule": 60.0},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("TARN_LOG_LEVEL", "INFO") or "INFO"},
    # acme logs every JWS payload and answer at DEBUG (the account's contact, the CA's words): never below INFO
    "loggers": {
        n: {"level": "WARNING" if n == "django.db.backends" else "INFO"}
        for n in ("django.db.backends", "acme", "urllib3")
    },
}
