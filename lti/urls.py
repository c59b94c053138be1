from django.urls import path

from lti import views

app_name = "lti"

urlpatterns = [
    path("login/", views.login_initiation, name="login"),
    path("launch/", views.launch, name="launch"),
    path("jwks/", views.jwks, name="jwks"),
    path("deep-link/", views.deep_link_respond, name="deep_link"),
]
