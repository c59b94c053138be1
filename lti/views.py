"""LTI 1.3 endpoints: login initiation, launch, the tool's key set, and deep linking's answer.

Platforms post to these cross-site, so login and launch carry no CSRF token: their protection is
the OIDC state cookie, the single-use nonce and the platform's signature (lti/launch.py).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from pylti1p3.deep_link_resource import DeepLinkResource

from access.rules import get_prompt_for_edit
from chat.models import Prompt
from kernel.errors import CurreChatError
from kernel.framing import embeddable
from lti import keys, roster, tasks
from lti.config import UnknownPlatform
from lti.launch import Launch, LaunchRefused, Reason, start_login
from lti.models import LtiIdentity, ResourceLink
from lti.provision import CUSTOM_CODE, LaunchClaims, landing_url, prompt_for_link, user_for_launch

SESSION_KEY = "lti_launch"  # what the course band shows: {"prompt_id", "course", "name"}
BACKEND = "django.contrib.auth.backends.ModelBackend"
DEEP_LINKING_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"


def refused(request: HttpRequest, refusal: LaunchRefused) -> HttpResponse:
    status = 503 if refusal.retryable else refusal.status_code
    context = {"title": refusal.title, "message": str(refusal), "reason": refusal.reason.value}
    return render(request, "lti/refused.html", context, status=status)


def _launch_url(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("lti:launch"))


@embeddable
@csrf_exempt
@never_cache
@require_http_methods(["GET", "POST"])
def login_initiation(request: HttpRequest) -> HttpResponse:
    """Step 1 of a launch: the platform names itself; we send the browser to its login endpoint."""
    try:
        return start_login(request, _launch_url(request))
    except LaunchRefused as refusal:
        return refused(request, refusal)


@embeddable
@csrf_exempt
@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def launch(request: HttpRequest) -> HttpResponse:
    """Step 2: the platform posts the signed id_token; a valid one signs the user in and lands them."""
    if request.method != "POST":
        return _launch_explained(request)
    try:
        message = Launch(request).validate()
        claims = LaunchClaims.from_body(dict(message.get_launch_data()))
        if message.is_deep_link_launch():
            return _deep_link_picker(request, message, claims)
        if not message.is_resource_launch():
            raise LaunchRefused(Reason.MALFORMED, "unsupported message type")
        user = user_for_launch(claims)
        prompt = prompt_for_link(claims)
        target = landing_url(claims, user, prompt)
        _follow_roster(claims)
    except UnknownPlatform as exc:  # deactivated between validation and use
        return refused(request, LaunchRefused(Reason.UNKNOWN_PLATFORM, str(exc)))
    except LaunchRefused as refusal:
        return refused(request, refusal)
    _sign_in(request, user, claims, prompt.pk)
    return redirect(target)


def _follow_roster(claims: LaunchClaims) -> None:
    """A launch naming the course's roster service: keep its address, and sync once the first time
    (in the worker: the launch does not wait for the platform)."""
    link = ResourceLink.objects.filter(platform=claims.platform, resource_link_id=claims.link_id).first()
    course = roster.record_course(claims, link)
    if course is not None and course.synced is None and not course.sync_logs.exists():
        tasks.request_sync(course, "launch")


def _launch_explained(request: HttpRequest) -> HttpResponse:
    """Someone opened the launch address by hand (a bookmark, a pasted link, an administrator
    checking it): say what it is for, with 405 since only the platform's POST launches."""
    response = render(request, "lti/launch_get.html", {"launch_url": _launch_url(request)}, status=405)
    response["Allow"] = "POST"
    return response


def _sign_in(request: HttpRequest, user, claims: LaunchClaims, prompt_id: int | None) -> None:
    login(request, user, backend=BACKEND)
    request.session[SESSION_KEY] = {
        "prompt_id": prompt_id,
        "course": claims.course,
        "name": claims.display_name or user.display_name,
    }


def _deep_link_picker(request: HttpRequest, message: Launch, claims: LaunchClaims) -> HttpResponse:
    if not claims.teaches:
        raise LaunchRefused(Reason.NOT_ALLOWED, message=_not_teacher())
    user = user_for_launch(claims)
    _sign_in(request, user, claims, None)
    context = {
        "launch_id": message.get_launch_id(),
        "prompts": Prompt.objects.editable_by(user).order_by("name"),
        "course": claims.course,
    }
    return render(request, "lti/deep_link.html", context)


def _not_teacher() -> str:
    return _("Only the course's teachers can add a CurreChat assistant to it.")


@embeddable
@never_cache
@login_required
@require_POST
def deep_link_respond(request: HttpRequest) -> HttpResponse:
    """The teacher picked a prompt: send the platform a signed resource link to it."""
    try:
        message = Launch.restore(request, request.POST.get("launch_id", ""))
        claims = LaunchClaims.from_body(dict(message.get_launch_data()))
        identity = LtiIdentity.objects.filter(platform=claims.platform, subject=claims.subject).first()
        # The launch must be this user's own: a launch id alone is not a credential.
        if identity is None or identity.user_id != request.user.pk or not claims.teaches:
            raise LaunchRefused(Reason.NOT_ALLOWED, message=_not_teacher())
        prompt = get_prompt_for_edit(request.user, int(request.POST.get("prompt", "0") or 0))
    except UnknownPlatform as exc:
        return refused(request, LaunchRefused(Reason.UNKNOWN_PLATFORM, str(exc)))
    except LaunchRefused as refusal:
        return refused(request, refusal)
    except (CurreChatError, ValueError):
        return refused(request, LaunchRefused(Reason.NOT_ALLOWED, message=_not_teacher()))
    resource = (
        DeepLinkResource()
        .set_url(_launch_url(request))
        .set_title(prompt.name)
        .set_custom_params({CUSTOM_CODE: prompt.join_code})
    )
    deep_link = message.get_deep_link()
    body: dict[str, Any] = dict(message.get_launch_data())
    link_settings = body.get(DEEP_LINKING_SETTINGS) or {}
    context = {
        "return_url": link_settings["deep_link_return_url"],
        "jwt": deep_link.get_response_jwt([resource]),
        "prompt": prompt,
    }
    return render(request, "lti/deep_link_return.html", context)


@require_GET
def jwks(request: HttpRequest) -> JsonResponse:
    """The tool's public keys, for platforms to check what the tool signs."""
    return JsonResponse(keys.jwks())
