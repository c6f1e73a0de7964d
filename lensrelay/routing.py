"""The WebSocket routes: y-sweet's and y-websocket's forms of a document's socket; a refusal for the rest."""

from django.urls import re_path

from lensrelay.sync.consumer import DOC_ID, SyncConsumer
from lensrelay.sync.unknown_route import UnknownRouteConsumer

websocket_urlpatterns = [
    # y-sweet form: the provider's server URL is /d/<id>/ws and it appends the room, the id again.
    re_path(rf"^d/(?P<doc_id>{DOC_ID})/ws/(?P<room_id>[^/?]+)/?$", SyncConsumer.as_asgi()),
    # y-sweet's older route (its Rust server still serves it): the provider's URL is /doc/ws + the id.
    re_path(rf"^doc/ws/(?P<doc_id>{DOC_ID})/?$", SyncConsumer.as_asgi()),
    re_path(rf"^ws/(?P<doc_id>{DOC_ID})/?$", SyncConsumer.as_asgi()),
    re_path(r"", UnknownRouteConsumer.as_asgi()),
]
