import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# The URL configuration imports every view and what the views import (DRF, the serializers, the
# verifier's modules: ~780 modules, ~58,000 objects); building the resolver's tables here, rather
# than on the first request, puts them under the freeze below too. Measured in-process on a warmed
# worker: a full collection took ~33 ms without this and ~3 ms with it, and a full collection
# holds the GIL, so it stalled every request in flight in that worker.
get_resolver().reverse_dict  # noqa: B018 - evaluated for its side effect: the resolver's tables

# Everything loaded so far (Django, DRF, the apps, their modules, the views) lives as long as the
# process. Left in the collected generations, every full collection walks those objects again: about
# a tenth of a grounding report's time in-process, none of a ping's. Frozen, the collector skips
# them, and under `gunicorn --preload` the workers' copy-on-write pages stay shared (gc.freeze docs).
gc.freeze()
