"""WSGI entry point for gunicorn.

Each worker imports every view (the URLconf) as it starts, then moves what it made so far out of the garbage
collector's way (gc.freeze): a full collection walked the ~200,000 objects of Django's and Tarn's modules every few
hundred requests, ~150 ms of CPU while the worker's requests in flight waited (issue 46: a page's p95); now it walks
what requests made since, ~12 ms."""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarn.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 - imports every view module now, not on a first request
gc.collect()
gc.freeze()
