from django.urls import path

from sso import oidc

app_name = "sso"

# Always routed; each view answers 404 while its protocol is not configured.
urlpatterns = [
    path("oidc/start/", oidc.StartView.as_view(), name="oidc_start"),
    path("oidc/callback/", oidc.CallbackView.as_view(), name="oidc_callback"),
]
