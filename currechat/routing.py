from django.urls import path

from chat.turn.consumers import ChatConsumer
from collections_app.consumers import CollectionProgressConsumer

websocket_urlpatterns = [
    path("ws/collections/<int:collection_id>/", CollectionProgressConsumer.as_asgi()),
    path("ws/chats/<int:session_id>/", ChatConsumer.as_asgi()),
]
