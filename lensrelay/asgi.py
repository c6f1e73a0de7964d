"""HTTP and WebSocket in one application; `python -m lensrelay.server.serve` runs it under daphne with our
limits."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lensrelay.settings")
django_application = get_asgi_application()

from django.conf import settings  # noqa: E402

if settings.LENSRELAY_SERVE_STATIC:
    # The admin's CSS and JS, served by the same process so one command runs the whole server.
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    django_application = ASGIStaticFilesHandler(django_application)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (needs Django set up first)

from lensrelay.routing import websocket_urlpatterns  # noqa: E402
from lensrelay.sync.authstack import auth_stack  # noqa: E402
from mcp_tools.lean import mcp_first  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": mcp_first(django_application),
        "websocket": auth_stack(URLRouter(websocket_urlpatterns)),
    }
)
