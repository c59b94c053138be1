from django.urls import path

from sso import oidc, saml

app_name = "sso"

# Always routed; each view answers 404 while its protocol is not configured.
urlpatterns = [
    path("oidc/start/", oidc.StartView.as_view(), name="oidc_start"),
    path("oidc/callback/", oidc.CallbackView.as_view(), name="oidc_callback"),
    path("saml/start/", saml.start, name="saml_start"),
    path("saml/acs/", saml.acs, name="saml_acs"),
    path("saml/metadata/", saml.metadata, name="saml_metadata"),
]
