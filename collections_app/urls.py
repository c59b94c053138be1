from django.urls import path

from collections_app import views

urlpatterns = [
    path("new/", views.collection_create, name="collection_create"),
    path("<int:pk>/", views.collection_detail, name="collection_detail"),
    path("<int:pk>/delete/", views.collection_delete, name="collection_delete"),
]
