"""The account page (a teacher's API tokens, listed with created / last used / expiry, made and
revoked; students have no token section) and the language switcher."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST
from django.views.i18n import set_language as django_set_language

from accounts.middleware import set_language_cookie
from accounts.models import ApiToken
from kernel.errors import Forbidden

MAX_TOKEN_DAYS = 3650


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        required=False,
        label=gettext_lazy("Name"),
        help_text=gettext_lazy("A label to tell your tokens apart."),
    )
    days = forms.IntegerField(
        min_value=0,
        max_value=MAX_TOKEN_DAYS,
        required=False,
        label=gettext_lazy("Expires after (days)"),
        help_text=gettext_lazy("0: never expires."),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["days"].initial = settings.API_TOKEN_DEFAULT_DAYS


@login_required
@require_http_methods(["GET", "POST"])
def account(request):
    """GET lists the user's tokens; POST makes one and shows its raw value on this response only
    (it is never stored and never put in a redirect or a message). Students get the page without
    tokens, and their POST is refused (`User.sees_api_tokens`)."""
    if not request.user.sees_api_tokens:
        if request.method == "POST":
            raise Forbidden(_("API tokens are for teachers' programs; this account is a student's."))
        return render(request, "accounts/account.html", {"form": None, "tokens": [], "new_token": None})
    form = TokenForm(request.POST or None)
    new_token = None
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data["days"]
        token, raw = ApiToken.issue(request.user, name=form.cleaned_data["name"], days=days)
        new_token = {"token": token, "raw": raw}
        form = TokenForm()
    tokens = ApiToken.objects.filter(user=request.user)
    return render(request, "accounts/account.html", {"form": form, "tokens": tokens, "new_token": new_token})


@login_required
@require_POST
def revoke_token(request, pk: int):
    # Another user's token is "not found": its id tells nothing.
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token.delete()
    messages.success(
        request,
        _("Token %(prefix)s… revoked: programs using it are refused from now on.") % {"prefix": token.prefix},
    )
    return redirect("account")


@require_POST
def set_language(request):
    """The header's language switcher: Django's set_language (cookie, safe `next` redirect), and
    for a signed-in user the choice is saved on their account so every later session uses it."""
    response = django_set_language(request)
    code = request.POST.get("language", "")
    if code in dict(settings.LANGUAGES):
        if request.user.is_authenticated and request.user.language != code:
            request.user.language = code
            request.user.save(update_fields=["language"])
        set_language_cookie(response, code)
    return response
