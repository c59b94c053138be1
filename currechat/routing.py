from django.urls import path

from collections_app.consumers import CollectionProgressConsumer

websocket_urlpatterns = [
    path("ws/collections/<int:collection_id>/", CollectionProgressConsumer.as_asgi()),
]
