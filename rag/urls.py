"""Pages for searching a collection (mounted under /collections/)."""

from django.urls import path

from rag import views

urlpatterns = [
    path("<int:pk>/search/", views.search_page, name="collection_search"),
]
