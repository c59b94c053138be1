from django.urls import path

from accounts import views

urlpatterns = [
    path("", views.account, name="account"),
    path("tokens/<int:pk>/revoke/", views.revoke_token, name="token_revoke"),
]
