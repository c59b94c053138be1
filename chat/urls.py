from django.urls import path

from chat import views

urlpatterns = [
    path("new/", views.prompt_create, name="prompt_create"),
    path("<int:pk>/", views.prompt_detail, name="prompt_detail"),
    path("<int:pk>/delete/", views.prompt_delete, name="prompt_delete"),
]
