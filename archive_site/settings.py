"""Settings for the kernel archive, read from the environment.

Embedded default: SQLite and Huey on SQLite under ARCHIVE_DATA_DIR.
At scale: PostgreSQL via DATABASE_URL and Huey on Redis via REDIS_URL.
"""
import socket
from datetime import timedelta
from pathlib import Path

import dj_database_url

from . import env  # the one reader of the environment, one rule per type (archive_site/env.py)

BASE_DIR = Path(__file__).resolve().parent.parent


DATA_DIR = env.path("ARCHIVE_DATA_DIR", BASE_DIR / "data").resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.boolean("DJANGO_DEBUG", False)
SECRET_KEY = env.text("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG and env.boolean("DJANGO_REQUIRE_SECRET_KEY", False):
        raise RuntimeError("DJANGO_SECRET_KEY must be set in production")
    # A development key; production sets DJANGO_SECRET_KEY (docs/deploy.md).
    SECRET_KEY = "dev-only-insecure-key-set-DJANGO_SECRET_KEY-in-production"
ALLOWED_HOSTS = env.comma_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "huey.contrib.djhuey",
    # Failed sign-ins counted per client address and per user name on every login page, the
    # admin's included (django-axes; ACCOUNT_LOGIN_* below, docs/accounts.md).
    "axes",
    "kernels",
    "search",
    "evaluator",
    "submissions",
    "archive_site.apps.ArchiveSiteConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Refuses bodies over ARCHIVE_MAX_UPLOAD_MB (413) before anything reads them; adds the CSP.
    "archive_site.security.UploadSizeLimitMiddleware",
    "archive_site.security.ContentSecurityPolicyMiddleware",
    # Expensive doors (export, filtered lists, searches, map data): a place among the process's
    # few, or 503/429 at once, before sessions and the rest (archive_site/expensive_requests.py).
    "archive_site.expensive_requests.ExpensiveGateMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # gzip for pages and the API, after whitenoise (static files come precompressed) and before
    # everything that writes the body; not the pages that show secrets (BREACH).
    "archive_site.security.CompressionMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Bundle and export downloads of the pages share the API's "downloads" throttle; every
    # expensive door the gate let through pays units of a budget per client and per user.
    "archive_site.security.DownloadThrottleMiddleware",
    "archive_site.expensive_requests.ExpensiveBudgetMiddleware",
    # Last: turns a sign-in refused for too many failures into the 429 page (accounts/lockout.py).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "archive_site.urls"
WSGI_APPLICATION = "archive_site.wsgi.application"

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
            ],
        },
    },
]

DATABASE_URL = env.text("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "archive.sqlite3",
            # WAL lets the worker write while the site reads. IMMEDIATE: a transaction takes the
            # write lock when it begins, so it waits (timeout) for another writer; a deferred one
            # that read first and then writes fails at once with "database is locked" when a
            # worker thread wrote in between (seen with 3 threads storing profiles).
            "OPTIONS": {"init_command": "PRAGMA journal_mode=WAL;", "timeout": 30, "transaction_mode": "IMMEDIATE"},
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
MEDIA_ROOT = DATA_DIR / "media"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed names, cached for a year: see "Static files" below.
    "staticfiles": {"BACKEND": "archive_site.static_storage.HashedStaticFilesStorage"},
}

# Huey: SQLite queue beside the database by default, Redis when REDIS_URL is set.
REDIS_URL = env.text("REDIS_URL")
if REDIS_URL:
    # Throttles and other cached counters must be shared by every web process.
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
# Anonymous leaderboard pages kept this long in that shared cache, dropped at once when an import
# or a verification changes the kernels (kernels/page_cache.py); off without Redis.
PAGE_CACHE_SECONDS = env.integer("ARCHIVE_PAGE_CACHE_SECONDS", 30 if REDIS_URL else 0)
HUEY_IMMEDIATE = env.boolean("HUEY_IMMEDIATE", False)
if REDIS_URL:
    HUEY = {
        "huey_class": "huey.PriorityRedisHuey",
        "name": env.text("HUEY_QUEUE_NAME", "kernel-archive"),
        "url": REDIS_URL,
        "immediate": HUEY_IMMEDIATE,
        "consumer": {"workers": 1, "worker_type": "process"},
    }
else:
    HUEY = {
        "huey_class": "huey.SqliteHuey",
        "name": "kernel-archive",
        "filename": str(DATA_DIR / "huey.sqlite3"),
        "immediate": HUEY_IMMEDIATE,
        "consumer": {"workers": 1, "worker_type": "process"},
    }

# Search: load the embedding model when a web process starts (search/warmup.py).
SEARCH_WARM_UP = env.boolean("ARCHIVE_SEARCH_WARM_UP", True)

# Re-verification (evaluator/services.py). The device is what the worker's harness runs on:
# "cuda" on GPU hosts (one worker process per GPU, pinned with CUDA_VISIBLE_DEVICES), "cpu"
# for C++-only candidates (CI); "auto" picks cuda when torch sees a GPU.
VERIFY_DEVICE = env.text("ARCHIVE_VERIFY_DEVICE", "auto")
VERIFY_TIMEOUT_S = env.number("ARCHIVE_VERIFY_TIMEOUT_S", 1800.0)
VERIFY_MEMORY_LIMIT_MB = env.integer("ARCHIVE_VERIFY_MEMORY_LIMIT_MB", 0) or None
# Empty: the judge draws the trial seeds after the kernel loads (pin them only to reproduce a run).
VERIFY_SEEDS = env.text("ARCHIVE_VERIFY_SEEDS")
# Extra judge options, e.g. "--no-compile --time-budget 2" for quick CPU-mode workers (under its
# old name too, for one release: archive_site/env.py, RENAMED).
VERIFY_JUDGE_ARGS = tuple(env.text("ARCHIVE_VERIFY_JUDGE_ARGS").split())
# A running job is leased to its worker while it heartbeats; a lease older than this has expired
# (the worker was killed or its host died) and the job is re-queued, once.
VERIFY_STALE_AFTER_S = env.number("ARCHIVE_VERIFY_STALE_AFTER_S", 120.0)
VERIFY_HEARTBEAT_S = env.number("ARCHIVE_VERIFY_HEARTBEAT_S", 10.0)
# Every running worker looks for expired leases this often (0: only when a worker starts), so a
# dead host's job is retried elsewhere within about stale-after + this many seconds.
VERIFY_LEASE_SWEEP_S = env.number("ARCHIVE_VERIFY_LEASE_SWEEP_S", 30.0)
# The host in Verification.worker (empty: the host name): names hosts that share one queue
# apart where their host names do not, e.g. containers.
WORKER_HOST = env.text("ARCHIVE_WORKER_HOST")
# The lane in Verification.worker; `run_worker_lanes` sets it for each worker it starts.
WORKER_LANE = env.text("ARCHIVE_WORKER_LANE")
# GPUs that `run_worker_lanes` starts one worker (lane) for, e.g. "0,1,2,3" (CUDA_VISIBLE_DEVICES
# values); empty: every GPU `nvidia-smi -L` lists, or one lane without a GPU where there is none.
VERIFY_GPUS = env.comma_list("ARCHIVE_VERIFY_GPUS")
# After a verification the worker re-lints the kernel with clang-tidy (docs/worker.md).
VERIFY_REFRESH_PROFILES = env.boolean("ARCHIVE_VERIFY_REFRESH_PROFILES", True)
# ncu only for kernels that passed, after their measuring run, instead of beside every run.
VERIFY_PROFILE_PASSED_ONLY = env.boolean("ARCHIVE_VERIFY_PROFILE_PASSED_ONLY", True)
# clang-tidy runs on a pool of its own, beside the builds and GPU runs (docs/worker.md).
VERIFY_LINT_WORKERS = env.integer("ARCHIVE_VERIFY_LINT_WORKERS", 4)
# Builds and lints at once per worker process, taken in the order their jobs started (0: one per
# CPU the worker may use), so the first jobs' builds end first (evaluator/worker_cpu_jobs.py).
VERIFY_CPU_JOBS = env.integer("ARCHIVE_VERIFY_CPU_JOBS", 0)
# CPU threads for the torch of each judge, runner and profile driver the worker starts
# (OMP_NUM_THREADS; 0 keeps torch's default, one per CPU). Their CPU work is checking outputs;
# with many verifications at once on a host, more threads only spin (docs/worker.md).
VERIFY_JUDGE_CPU_THREADS = env.integer("ARCHIVE_VERIFY_JUDGE_CPU_THREADS", 1)
# CPUs kept free for timing loops, e.g. "0,1": the worker runs everything else on the others.
# For `run_worker_lanes`, per lane ("0,1;2,3") or one list it divides evenly among the lanes.
VERIFY_TIMING_CPUS = env.text("ARCHIVE_VERIFY_TIMING_CPUS")
# The periodic task re-queues kernels whose latest result is older than this.
REVERIFY_MAX_AGE_DAYS = env.integer("ARCHIVE_REVERIFY_MAX_AGE_DAYS", 30)
BUILD_CACHE_DIR = env.path("ARCHIVE_BUILD_CACHE_DIR", DATA_DIR / "build_cache")
# Finished clang-tidy lints by everything that goes into them (verifier/clang_tidy_run.py): a
# re-verification of unchanged code reads its lint back instead of parsing torch's headers again.
# Not under BUILD_CACHE_DIR: the confined runner may write there.
LINT_CACHE_DIR = env.path("ARCHIVE_LINT_CACHE_DIR", DATA_DIR / "lint_cache")
# Each task's torch.compile baseline, timed once per host and reused while the eager reference
# timed beside each kernel agrees (verifier/core/shared_baseline.py). Only judges write here, so not
# under BUILD_CACHE_DIR. ARCHIVE_VERIFY_SHARED_BASELINE=0 times it in every verification.
VERIFY_SHARED_BASELINE = env.boolean("ARCHIVE_VERIFY_SHARED_BASELINE", True)
SHARED_BASELINE_DIR = env.path("ARCHIVE_SHARED_BASELINE_DIR", DATA_DIR / "shared_baselines")

# Signed verification records (evaluator/verification_records.py, docs/verification_records.md).
# Public keys whose records count as this site's own results; the default file ships the key
# that signed the project's own H200 results.
TRUSTED_KEYS_FILE = env.path("ARCHIVE_TRUSTED_KEYS_FILE", BASE_DIR / "evaluator" / "trusted_keys.json")
# This site's worker key (an Ed25519 private key, PEM): signs its own results on export.
WORKER_KEY_FILE = env.text("ARCHIVE_WORKER_KEY_FILE") or None
# The name its signed records carry.
VERIFIER_NAME = env.text("ARCHIVE_VERIFIER_NAME") or f"kernel-archive worker at {socket.gethostname()}"

# Contributions (evaluator/contributions.py, docs/verification_records.md): caps on one upload,
# read record by record, and a quota of records per user per rolling 24 hours.
CONTRIBUTION_MAX_MB = env.integer("ARCHIVE_CONTRIBUTION_MAX_MB", 16)
CONTRIBUTION_MAX_RECORDS = env.integer("ARCHIVE_CONTRIBUTION_MAX_RECORDS", 1000)
CONTRIBUTION_MAX_RECORD_KB = env.integer("ARCHIVE_CONTRIBUTION_MAX_RECORD_KB", 1024)
CONTRIBUTION_DAILY_RECORDS = env.integer("ARCHIVE_CONTRIBUTION_DAILY_RECORDS", 2000)
# Submissions (submissions/, docs/submissions.md): per user, kernels a rolling 24 hours and
# runs queued or running at once (the worker's time is the product), and one kernel's size.
SUBMISSIONS_PER_DAY = env.integer("ARCHIVE_SUBMISSIONS_PER_DAY", 20)
SUBMISSIONS_OPEN = env.integer("ARCHIVE_SUBMISSIONS_OPEN", 3)
SUBMISSION_MAX_KB = env.integer("ARCHIVE_SUBMISSION_MAX_KB", 256)

REST_FRAMEWORK = {
    # The OpenAPI schema: the one error shape on every operation, the lock only where auth is required.
    "DEFAULT_SCHEMA_CLASS": "web.schema.ArchiveAutoSchema",
    # Every error of the JSON API in one shape: {"detail", "code", "errors"} (web/api_errors.py).
    "EXCEPTION_HANDLER": "web.api_errors.api_exception_handler",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "reverify": env.text("ARCHIVE_THROTTLE_REVERIFY", "30/hour"),
        # Contribution uploads and key registrations, per user.
        "contribute": env.text("ARCHIVE_THROTTLE_CONTRIBUTE", "20/hour"),
        "downloads": env.text("ARCHIVE_THROTTLE_DOWNLOADS", "120/minute"),
        # Search embeds the query: per client address when anonymous, per user when signed in.
        "search_anon": env.text("ARCHIVE_THROTTLE_SEARCH_ANON", "30/minute"),
        "search_user": env.text("ARCHIVE_THROTTLE_SEARCH_USER", "120/minute"),
    },
    # Proxies in front of the site (their X-Forwarded-For names the client); 0: REMOTE_ADDR,
    # and a client's own X-Forwarded-For never picks its throttle bucket.
    "NUM_PROXIES": env.integer("ARCHIVE_NUM_PROXIES", 0),
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
# Expensive doors (export, filtered leaderboard, regex and meaning search, map data; costs in
# archive_site/expensive_requests.py): units a minute per client address, and per user for signed-in
# requests, counted in the cache (Redis with REDIS_URL); past them 429 with Retry-After.
EXPENSIVE_UNITS_PER_MINUTE_ANON = env.integer("ARCHIVE_EXPENSIVE_UNITS_ANON", 60)
EXPENSIVE_UNITS_PER_MINUTE_USER = env.integer("ARCHIVE_EXPENSIVE_UNITS_USER", 120)
# At most this many expensive requests at once in one web process (a streamed export holds its
# place until its last byte); one more gets 503 with Retry-After at once instead of queueing in
# front of plain pages. 0 turns the cap off.
EXPENSIVE_CONCURRENCY = env.integer("ARCHIVE_EXPENSIVE_CONCURRENCY", 1)
SPECTACULAR_SETTINGS = {
    "TITLE": "Kernel archive API",
    "DESCRIPTION": "Machine-generated GPU kernels, their claimed and re-measured numbers.",
    "VERSION": "1.0.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two models have a "kind" choice set: name their enums (else check --deploy warns W001).
    "ENUM_NAME_OVERRIDES": {
        "KernelKindEnum": "kernels.models.Kernel.Kind",
        "ProfileKindEnum": "kernels.models.Profile.Kind",
    },
}

# LOGIN_URL: see "Researcher accounts" below.

# --- Uploads (POST /api/imports/, staff only; docs/security.md) ---
# A request body over this is refused with 413 from its Content-Length, before it is read.
ARCHIVE_MAX_UPLOAD_MB = env.integer("ARCHIVE_MAX_UPLOAD_MB", 200)
# Form fields and other non-file bodies stay small; uploaded files over 2.5 MB stream to disk.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_TEMP_DIR = env.text("ARCHIVE_UPLOAD_TEMP_DIR") or None
FILE_UPLOAD_PERMISSIONS = 0o600

# --- Security headers (archive_site/security.py adds the Content-Security-Policy) ---
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Overridable, e.g. to add a CDN; the default allows only this site's own files.
ARCHIVE_CSP = env.text("ARCHIVE_CSP")
CSRF_TRUSTED_ORIGINS = env.comma_list("DJANGO_CSRF_TRUSTED_ORIGINS")
# Production is DEBUG off with a real DJANGO_SECRET_KEY: HTTPS only, secure cookies, HSTS.
# Without a key (development, the test suite) the site serves plain HTTP, and
# `check --deploy` reports the development key (archive_site/security.py).
SECURE_BY_DEFAULT = not DEBUG and bool(env.text("DJANGO_SECRET_KEY"))
# TLS usually ends at a proxy that sets X-Forwarded-Proto; trust that header only when
# DJANGO_SECURE_PROXY_SSL_HEADER is on (never without such a proxy in front).
if env.boolean("DJANGO_SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.boolean("DJANGO_SECURE_SSL_REDIRECT", SECURE_BY_DEFAULT)
SESSION_COOKIE_SECURE = env.boolean("DJANGO_SECURE_COOKIES", SECURE_BY_DEFAULT)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env.integer("DJANGO_SECURE_HSTS_SECONDS", 31536000 if SECURE_BY_DEFAULT else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.boolean("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", SECURE_BY_DEFAULT)
# The preload flag in the header only makes the site eligible for browsers' HSTS preload list.
SECURE_HSTS_PRELOAD = env.boolean("DJANGO_SECURE_HSTS_PRELOAD", SECURE_BY_DEFAULT)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.text("LOG_LEVEL", "INFO")},
}


# --- Researcher accounts and static files (issue #19; accounts/, archive_site/static_storage.py) ---
# Sign-up mails a signed link (accounts/services.py); sign-in, sign-out and the API token page
# live under /accounts/. The mail goes through Django's email backend: printed on the console
# in development (DJANGO_DEBUG=1), SMTP otherwise; tests use locmem (pytest-django).
INSTALLED_APPS.append("accounts")
LOGIN_URL = "login"
# Links in mails (sign-up, password reset) start with this, never with the request's Host header,
# which a client chooses (with DJANGO_ALLOWED_HOSTS='*', any). `check --deploy` warns while unset.
SITE_URL = env.site_url("ARCHIVE_SITE_URL", "http://127.0.0.1:8000")
SITE_URL_IS_SET = env.is_set("ARCHIVE_SITE_URL")
# django-axes checks passwords first, so a client past the limit is refused before any password is tried.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env.integer("ARCHIVE_LOGIN_FAILURE_LIMIT", 30)
AXES_COOLOFF_TIME = timedelta(minutes=env.integer("ARCHIVE_LOGIN_COOLOFF_MINUTES", 60))
# Counted per client address and, separately, per user name: many names from one address, or one
# name from many addresses, both stop. The address is the throttles' (ARCHIVE_NUM_PROXIES).
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_CLIENT_IP_CALLABLE = "web.throttles.client_address"
AXES_LOCKOUT_CALLABLE = "accounts.lockout.locked_out_response"
# A success must not wipe an address's failures (a guesser with an account of their own would reset them).
AXES_RESET_ON_SUCCESS = False
# Failures only; no row per successful sign-in.
AXES_DISABLE_ACCESS_LOG = True
AXES_VERBOSE = False
LOGIN_REDIRECT_URL = "account"
LOGOUT_REDIRECT_URL = "home"
EMAIL_BACKEND = env.text("DJANGO_EMAIL_BACKEND") or (
    "django.core.mail.backends.console.EmailBackend" if DEBUG else "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env.text("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = env.integer("DJANGO_EMAIL_PORT", 25)
EMAIL_HOST_USER = env.text("DJANGO_EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env.text("DJANGO_EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env.boolean("DJANGO_EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env.text("DJANGO_DEFAULT_FROM_EMAIL", "Kernel archive <noreply@localhost>")
# A sign-up link works this long; an account whose link expired unused is deleted at the next sign-up.
ACCOUNT_VERIFY_MAX_AGE_S = int(env.number("ARCHIVE_ACCOUNT_VERIFY_HOURS", 72.0) * 3600)
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Static files (STORAGES above): collectstatic writes hashed, compressed copies, which
# whitenoise serves with a ten-year max-age and "immutable"; without collectstatic (tests,
# runserver) pages name the plain files, served by the finders.
