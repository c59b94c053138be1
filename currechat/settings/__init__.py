"""CurreChat settings (DJANGO_SETTINGS_MODULE=currechat.settings): every value comes from an
environment variable (see README). `base` is the app; `campus` adds what running it for a
university needs and extends base's INSTALLED_APPS and MIDDLEWARE."""

from currechat.settings.base import *  # noqa: F403
from currechat.settings.campus import *  # noqa: F403
from currechat.settings.safety import *  # noqa: F403
from currechat.settings.serving import *  # noqa: F403
from currechat.settings.week import *  # noqa: F403
