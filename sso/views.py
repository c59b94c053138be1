"""Logging out of a campus sign-in: CurreChat's session ends, then the provider's (RP-initiated
logout for OpenID Connect), so the next person at a shared computer is asked for a password again."""

from __future__ import annotations

from django.contrib.auth.views import LogoutView as DjangoLogoutView
from django.http import HttpResponseRedirect

from sso.config import oidc_enabled
from sso.models import Protocol
from sso.oidc import SESSION_ID_TOKEN, provider_logout_url


class LogoutView(DjangoLogoutView):
    def post(self, request, *args, **kwargs):
        id_token = request.session.get(SESSION_ID_TOKEN, "")
        signed_in_by_oidc = request.session.get("sso_protocol") == Protocol.OIDC.value
        response = super().post(request, *args, **kwargs)
        if signed_in_by_oidc and id_token and oidc_enabled():
            url = provider_logout_url(request, id_token)
            if url:
                return HttpResponseRedirect(url)
        return response
