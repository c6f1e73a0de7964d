from django.urls import re_path

from lensrelay.sync.consumer import SyncConsumer

DOC_ID = r"[A-Za-z0-9_.-]{1,100}"

websocket_urlpatterns = [
    # y-sweet form: the provider's server URL is /d/<id>/ws and it appends the room, the id again.
    re_path(rf"^d/(?P<doc_id>{DOC_ID})/ws/(?P<room_id>[^/?]+)/?$", SyncConsumer.as_asgi()),
    re_path(rf"^ws/(?P<doc_id>{DOC_ID})/?$", SyncConsumer.as_asgi()),
]
