"""ASGI entry point: HTTP through Django, websockets through channels (session auth:
currechat/wsauth.py); liveness, readiness and the graceful shutdown in front of both
(currechat/probes.py)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "currechat.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (needs Django set up first)
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from currechat import warmup  # noqa: E402
from currechat.probes import Probes  # noqa: E402
from currechat.routing import websocket_urlpatterns  # noqa: E402
from currechat.wsauth import WebsocketAuthStack  # noqa: E402

application = Probes(
    ProtocolTypeRouter(
        {
            "http": django_asgi_app,
            "websocket": AllowedHostsOriginValidator(WebsocketAuthStack(URLRouter(websocket_urlpatterns))),
        }
    )
)

warmup.at_start()
