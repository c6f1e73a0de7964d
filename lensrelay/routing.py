from django.urls import re_path

from lensrelay.sync.consumer import DOC_ID, SyncConsumer

websocket_urlpatterns = [
    # y-sweet form: the provider's server URL is /d/<id>/ws and it appends the room, the id again.
    re_path(rf"^d/(?P<doc_id>{DOC_ID})/ws/(?P<room_id>[^/?]+)/?$", SyncConsumer.as_asgi()),
    re_path(rf"^ws/(?P<doc_id>{DOC_ID})/?$", SyncConsumer.as_asgi()),
]
