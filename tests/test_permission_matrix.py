"""The permission matrix: every page, API operation and websocket route × every kind of user.

The routes are read from the URL resolver, the NinjaAPI's OpenAPI schema and the websocket URL
patterns, so a new route without a row here fails `test_every_route_has_a_matrix_row`. Each row
says which roles may use the route; everyone else is refused (401 / a redirect to the login page
for anonymous visitors, 403 or 404 for the signed-in). Each cell runs in a savepoint that is
rolled back, so a DELETE in one cell does not change the next.

The admin has its own cells at the end: staff without model permissions, with view-only and with
change permissions, and a superuser, each trying what the rules forbid or allow.

Roles: anonymous; `outsider` (a student not enrolled); `enrolled`; `removed` (a student the
teacher removed); `other_teacher`; `owner` (of the collection and the prompt); `co_owner` (a
co-owner of the collection and co-teacher of the prompt); `former_co_owner` (co-owner until
removed, who still has a prompt of their own with the collection attached); `staff` (a teacher
with admin-site access, not a superuser); `superuser`; `sso_teacher` and `sso_student`, made by a
campus sign-in (sso/provision.py) from a faculty and a student affiliation: the teacher teaches
nothing here, the student has joined the prompt; `guest`, a co-teacher by invitation
(Role.GUEST, issue 46 item 3) of the prompt only: it teaches that prompt and nothing else, and has
no teacher rights anywhere else. "A chat" is the role's own chat when it has one
(the enrolled, removed and SSO-made student), otherwise the enrolled student's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from asgiref.sync import async_to_sync
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from accounts.models import Role, User
from chat.models import ChatSession, Enrollment, EnrollmentStatus, MaterialGap, Message, Prompt
from collections_app.models import Collection, FileStatus, SourceFile
from currechat.api import api
from tests.websockets import EVENT_SECONDS, open_websocket

ROLES = (
    "anonymous",
    "outsider",
    "enrolled",
    "removed",
    "other_teacher",
    "owner",
    "co_owner",
    "former_co_owner",
    "staff",
    "superuser",
    "sso_teacher",
    "sso_student",
    "guest",
)
OK, LOGIN, REFUSED = "ok", "login", "refused"

COLLECTION_EDIT = {"owner", "co_owner", "superuser"}
COLLECTION_SEARCH = COLLECTION_EDIT | {"enrolled", "sso_student"}
PROMPT_EDIT = {"owner", "co_owner", "superuser", "guest"}
PROMPT_OWNER = {"owner", "superuser"}
TEACHERS = {"other_teacher", "owner", "co_owner", "former_co_owner", "staff", "superuser", "sso_teacher"}
SIGNED_IN = set(ROLES) - {"anonymous"}
EVERYONE = set(ROLES)
CHAT_START = PROMPT_EDIT | {"enrolled", "sso_student"}  # students while enrolled; teachers to preview
# The enrolled student's own chat; its teachers read it (visibility "pseudonymous").
CHAT_READ = {"enrolled", "sso_student"} | PROMPT_EDIT
CHAT_WRITE = {"enrolled", "sso_student"}
# Admin pages: Django's own staff check; a non-staff user is sent to the admin login.
ADMIN = {"staff", "superuser"}


@dataclass
class World:
    users: dict[str, User]
    collection: Collection
    source: SourceFile
    prompt: Prompt
    own_prompt: Prompt  # the former co-owner's, with the collection still attached
    chats: dict[str, ChatSession]
    enrolled_number: int
    pdf: SourceFile  # a one-page PDF stored on disk, for the original's page views
    answer: Message  # an answer in the enrolled student's chat (feedback)
    gap: MaterialGap

    def chat(self, role: str) -> ChatSession:
        return self.chats.get(role, self.chats["enrolled"])


@dataclass(frozen=True)
class Row:
    """One route: who may use it, and how to call it."""

    allowed: set[str]
    url: Callable[[World, str], str]
    data: Callable[[World], dict] = field(default=lambda w: {})
    # Signed-in users the route sends to a login page anyway (Django's admin for non-staff).
    login_for: frozenset[str] = frozenset()
    multipart: bool = False  # an API upload: form data, not JSON
    anonymous: str = LOGIN  # what an anonymous visitor gets when not allowed


def _c(w: World, role: str) -> int:
    return w.collection.pk


def _check(w: World, role: str) -> str:
    """The collection's test question (made when first asked for; each cell rolls back)."""
    from collections_app.models import SearchCheck

    check, _ = SearchCheck.objects.get_or_create(
        collection=w.collection, question="What is the mean?", defaults={"expect_file": w.source}
    )
    return f"/collections/{w.collection.pk}/checks/{check.pk}"


def _invitation(w: World, kind: str = "collection"):
    """A pending invitation to co-own the collection (or co-teach the prompt) and its raw token,
    made by the owner; a new one per call (it withdraws the last, which is no matter here)."""
    from accounts.invitations import issue
    from chat.models import PromptInvitation
    from collections_app.models import CollectionInvitation

    if kind == "prompt":
        return issue(PromptInvitation, actor=w.users["owner"], email="invitee@example.org", prompt=w.prompt)
    return issue(CollectionInvitation, actor=w.users["owner"], email="invitee@example.org", collection=w.collection)


def _confirmation_link(w: World) -> str:
    from accounts.confirmation import confirmation_path

    student = w.users["enrolled"]
    if not student.email:
        student.email = "enrolled@example.org"
        student.save(update_fields=["email"])
    return confirmation_path(student)


def _answer_check(w: World) -> str:
    """The prompt's answer check (made when first asked for; each cell rolls back)."""
    from chat.models import AnswerCheck

    check, _ = AnswerCheck.objects.get_or_create(prompt=w.prompt, question="What is the mean?")
    return f"/prompts/{w.prompt.pk}/answer-checks/{check.pk}"


def _answer_run(w: World) -> str:
    """A finished run of the prompt's answer checks against a draft of its instructions."""
    from chat.models import AnswerCheckRun

    run = AnswerCheckRun.objects.create(prompt=w.prompt, status="done", draft={"system_prompt": "Be brief."})
    return f"/prompts/{w.prompt.pk}/answer-checks/runs/{run.pk}"


def _teacher_answer(w: World):
    """A teacher's answer in the prompt (made when first asked for; each cell rolls back)."""
    from chat.models import TeacherAnswer

    answer, _ = TeacherAnswer.objects.get_or_create(
        prompt=w.prompt, key="what is the mean", defaults={"question": "What is the mean?", "answer": "The average."}
    )
    return answer


def _subscription(w: World) -> str:
    """The token of the owner's weekly topics mail (a new one per cell: each cell rolls back)."""
    from chat.insight.digest_mail import subscribe

    return subscribe(w.users["owner"], w.prompt, "http://testserver").token


def _lms_course(w: World) -> str:
    """A course of a learning platform linked to the prompt (made per cell; each cell rolls back)."""
    from lti.models import CourseContext, Platform, ResourceLink

    platform, _ = Platform.objects.get_or_create(
        issuer="https://lms.example.test",
        client_id="c1",
        defaults={
            "name": "LMS",
            "auth_login_url": "https://lms.example.test/a",
            "auth_token_url": "https://lms.example.test/t",
        },
    )
    course, _ = CourseContext.objects.get_or_create(
        platform=platform, context_id="course-7", defaults={"memberships_url": "https://lms.example.test/nrps"}
    )
    ResourceLink.objects.get_or_create(
        platform=platform, resource_link_id="l1", defaults={"prompt": w.prompt, "course": course}
    )
    return f"/lti/prompts/{w.prompt.pk}/courses/{course.pk}/"


# Only the owner (or a superuser) changes who co-teaches, invitations included.
CO_TEACHERS_CHANGE = {"owner", "superuser"}
# Who accepts an invitation: any teacher but the owner (a signed-in teacher with one button); an
# anonymous visitor is shown the page with its sign-up form (an empty form makes no account).
INVITATION_ACCEPT = (TEACHERS - {"owner"}) | {"anonymous", "guest"}

PAGE_ROWS: dict[tuple[str, str], Row] = {
    ("POST", "collection_invite"): Row(
        CO_TEACHERS_CHANGE, lambda w, r: f"/collections/{_c(w, r)}/invitations/", lambda w: {"email": "new@x.org"}
    ),
    ("POST", "collection_withdraw_invitation"): Row(
        CO_TEACHERS_CHANGE, lambda w, r: f"/collections/{_c(w, r)}/invitations/{_invitation(w)[0].pk}/withdraw/"
    ),
    ("POST", "prompt_invite"): Row(
        CO_TEACHERS_CHANGE, lambda w, r: f"/prompts/{w.prompt.pk}/invitations/", lambda w: {"email": "new@x.org"}
    ),
    ("POST", "prompt_withdraw_invitation"): Row(
        CO_TEACHERS_CHANGE,
        lambda w, r: f"/prompts/{w.prompt.pk}/invitations/{_invitation(w, 'prompt')[0].pk}/withdraw/",
    ),
    # An invitation link: its token, not a role, opens it; anyone may read what it offers.
    ("GET", "invitation"): Row(EVERYONE, lambda w, r: f"/invitations/{_invitation(w)[1]}/"),
    ("POST", "invitation"): Row(INVITATION_ACCEPT, lambda w, r: f"/invitations/{_invitation(w)[1]}/"),
    ("GET", "home"): Row(SIGNED_IN, lambda w, r: "/"),
    ("GET", "login"): Row(EVERYONE, lambda w, r: "/login/"),
    ("POST", "logout"): Row(EVERYONE, lambda w, r: "/logout/"),
    ("POST", "join"): Row(SIGNED_IN, lambda w, r: "/join/", lambda w: {"code": w.prompt.join_code}),
    ("GET", "join_with_code"): Row(EVERYONE, lambda w, r: f"/join/code/?code={w.prompt.join_code}"),
    ("GET", "join_link"): Row(EVERYONE, lambda w, r: f"/join/{w.prompt.join_code}/"),
    # The privacy notice: whoever holds the join code reads it through the code; by the prompt's
    # number, its teachers and enrolled students (tests/test_privacy_notice.py).
    ("GET", "join_privacy"): Row(EVERYONE, lambda w, r: f"/join/{w.prompt.join_code}/privacy/"),
    ("GET", "prompt_privacy"): Row(CHAT_START, lambda w, r: f"/prompts/{w.prompt.pk}/privacy/"),
    ("POST", "privacy_acknowledge"): Row(
        CHAT_WRITE, lambda w, r: f"/prompts/{w.prompt.pk}/privacy/acknowledge/", lambda w: {"level": "pseudonymous"}
    ),
    ("POST", "join_link"): Row(EVERYONE, lambda w, r: f"/join/{w.prompt.join_code}/"),
    ("GET", "account"): Row(SIGNED_IN, lambda w, r: "/account/"),
    # The deployment's privacy sheet names its servers: the administrators only (issue 46 item 14).
    ("GET", "privacy_sheet"): Row(ADMIN, lambda w, r: "/privacy-sheet/"),
    ("GET", "privacy_sheet_markdown"): Row(ADMIN, lambda w, r: "/privacy-sheet.md"),
    ("POST", "set_language"): Row(EVERYONE, lambda w, r: "/i18n/setlang/", lambda w: {"language": "fi", "next": "/"}),
    ("GET", "javascript-catalog"): Row(EVERYONE, lambda w, r: "/jsi18n/"),
    # LTI: the tool's public keys are public; a launch or a deep-link answer is opened by a platform's
    # signed token and the launch's state (tests/test_lti.py), never by a role alone.
    ("GET", "jwks"): Row(EVERYONE, lambda w, r: "/lti/jwks/"),
    ("POST", "launch"): Row(set(), lambda w, r: "/lti/launch/", anonymous=REFUSED),
    ("POST", "deep_link"): Row(set(), lambda w, r: "/lti/deep-link/"),
    # Dynamic registration is opened by a platform for anyone by design: it makes only a platform that
    # launches nothing until an administrator approves it (tests/test_lti_registration.py).
    ("GET", "register"): Row(EVERYONE, lambda w, r: "/lti/register/"),
    # A synced course's roster: its prompt's teachers sync it and choose what a sync does.
    ("POST", "roster_sync"): Row(PROMPT_EDIT, lambda w, r: f"/lti/prompts/{w.prompt.pk}/sync/"),
    ("POST", "roster_course"): Row(PROMPT_EDIT, lambda w, r: _lms_course(w), lambda w: {"leavers": "block"}),
    # Making an API token: teachers and staff; a student is refused (no token section on their page).
    ("POST", "account"): Row(TEACHERS, lambda w, r: "/account/", lambda w: {"name": "x", "days": "1"}),
    # The owner's token: only its owner revokes it (anyone else gets a 404).
    ("POST", "token_revoke"): Row(
        {"owner"}, lambda w, r: f"/account/tokens/{w.users['owner'].api_tokens.get().pk}/revoke/"
    ),
    ("GET", "collection_create"): Row(TEACHERS, lambda w, r: "/collections/new/"),
    ("GET", "collection_detail"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}/"),
    ("GET", "collection_settings"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}/settings/"),
    ("GET", "collection_checks"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}/checks/"),
    ("POST", "collection_checks"): Row(
        COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}/checks/", lambda w: {"action": "run"}
    ),
    ("GET", "profile"): Row(SIGNED_IN, lambda w, r: "/account/profile/"),
    # Asking for a link confirming one's own address (no mail server here: the profile says so).
    ("POST", "address_confirm_request"): Row(SIGNED_IN, lambda w, r: "/account/profile/confirm-address/"),
    # A confirmation link made for the enrolled student's address: only that account, signed in,
    # follows it (tests/test_sso_linking.py); everyone else is refused, a visitor sent to log in.
    ("GET", "address_confirm"): Row({"enrolled"}, lambda w, r: _confirmation_link(w)),
    ("POST", "address_confirm"): Row({"enrolled"}, lambda w, r: _confirmation_link(w)),
    ("GET", "start_reset"): Row(TEACHERS, lambda w, r: "/account/reset/"),
    # Any teacher may ask; the answer is the same whoever the username is (tests/test_password_reset_mail.py).
    ("POST", "start_reset"): Row(TEACHERS, lambda w, r: "/account/reset/", lambda w: {"username": "enrolled"}),
    # A reset link: its token, not a role, opens it (tests/test_accounts_profile.py); a made-up one shows
    # "used or expired" to anyone.
    ("GET", "password_reset_confirm"): Row(EVERYONE, lambda w, r: "/account/reset/MQ/made-up-token/"),
    ("GET", "password_reset_complete"): Row(EVERYONE, lambda w, r: "/account/reset/done/"),
    # Asking for a reset link by mail (without mail configured, the page says whom to ask).
    ("GET", "password_reset"): Row(EVERYONE, lambda w, r: "/password-reset/"),
    ("POST", "password_reset"): Row(EVERYONE, lambda w, r: "/password-reset/", lambda w: {"email": "x@example.org"}),
    ("GET", "password_reset_done"): Row(EVERYONE, lambda w, r: "/password-reset/sent/"),
    ("POST", "collection_delete"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}/delete/"),
    ("POST", "collection_upload"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}/upload/"),
    ("GET", "file_detail"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/files/{w.source.pk}/"),
    ("POST", "file_cancel"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/files/{w.source.pk}/cancel/"),
    # Correcting a page: the collection's teachers only (the file here is failed: 409 once let in).
    ("POST", "file_page_correct"): Row(
        COLLECTION_EDIT, lambda w, r: f"/collections/files/{w.source.pk}/pages/0/correct/", lambda w: {"markdown": "x"}
    ),
    ("POST", "file_retry"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/files/{w.source.pk}/retry/"),
    # Reading a file again with the other method (the file here is not a PDF: 409 once let in).
    ("POST", "file_reread"): Row(
        COLLECTION_EDIT, lambda w, r: f"/collections/files/{w.source.pk}/reread/", lambda w: {"method": "fast"}
    ),
    ("POST", "file_delete"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/files/{w.source.pk}/delete/"),
    ("GET", "collection_search"): Row(COLLECTION_SEARCH, lambda w, r: f"/collections/{_c(w, r)}/search/?q=mean"),
    ("GET", "prompt_create"): Row(TEACHERS, lambda w, r: "/prompts/new/"),
    ("GET", "prompt_detail"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/"),
    ("POST", "prompt_delete"): Row(PROMPT_OWNER, lambda w, r: f"/prompts/{w.prompt.pk}/delete/"),
    ("POST", "prompt_duplicate"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/duplicate/"),
    ("POST", "prompt_rotate_code"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/join-code/"),
    ("POST", "student_action"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/students/{w.enrolled_number}/remove/"
    ),
    ("POST", "student_budget"): Row(
        PROMPT_EDIT,
        lambda w, r: f"/prompts/{w.prompt.pk}/students/{w.enrolled_number}/budget/",
        lambda w: {"action": "reset"},
    ),
    ("POST", "budget_exempt"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/budget/exempt/", lambda w: {"exempt": "1"}
    ),
    ("GET", "chat_home"): Row(CHAT_START, lambda w, r: f"/prompts/{w.prompt.pk}/chat/"),
    ("POST", "chat_new"): Row(CHAT_START, lambda w, r: f"/prompts/{w.prompt.pk}/chat/new/"),
    ("GET", "chat_session"): Row(CHAT_READ, lambda w, r: f"/prompts/{w.prompt.pk}/chat/{w.chat(r).pk}/"),
    ("POST", "chat_delete"): Row(CHAT_WRITE, lambda w, r: f"/prompts/{w.prompt.pk}/chat/{w.chat(r).pk}/delete/"),
    ("POST", "chat_rename"): Row(
        CHAT_WRITE, lambda w, r: f"/prompts/{w.prompt.pk}/chat/{w.chat(r).pk}/rename/", lambda w: {"title": "Mine"}
    ),
    # The originals: editors see any page; a student only what their own searches returned (none here).
    ("GET", "file_download"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/files/{w.pdf.pk}/download/"),
    ("GET", "source_page"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/files/{w.pdf.pk}/pages/1/"),
    ("GET", "source_page_image"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/files/{w.pdf.pk}/pages/1.png"),
    ("GET", "source_context"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/files/{w.source.pk}/passages/0/"),
    ("GET", "prompt_insight"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/insight/"),
    ("GET", "answer_checks"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/answer-checks/"),
    ("POST", "answer_checks"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/answer-checks/", lambda w: {"action": "adversarial"}
    ),
    ("GET", "answer_check_detail"): Row(PROMPT_EDIT, lambda w, r: _answer_check(w) + "/"),  # the same path, a page
    ("POST", "gap_handled"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/insight/gaps/{w.gap.pk}/handled/"),
    # The week at a glance on the insight page (chat/insight/week_views.py): the prompt's teachers.
    ("POST", "save_teacher_answer"): Row(
        PROMPT_EDIT,
        lambda w, r: f"/prompts/{w.prompt.pk}/insight/answers/",
        lambda w: {"question": "When is the exam?", "answer": "On Friday."},
    ),
    ("POST", "delete_teacher_answer"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/insight/answers/{_teacher_answer(w).pk}/delete/"
    ),
    ("POST", "topics_mail"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/insight/topics-mail/", lambda w: {"subscribe": "0"}
    ),
    # The mail's unsubscribe link works for whoever holds it, signed in or not (the token is the key).
    ("GET", "digest_unsubscribe"): Row(EVERYONE, lambda w, r: f"/prompts/topics-mail/stop/{_subscription(w)}/"),
    ("POST", "digest_unsubscribe"): Row(EVERYONE, lambda w, r: f"/prompts/topics-mail/stop/{_subscription(w)}/"),
    # Off unless METRICS_TOKEN is set (as in this world); its token, not a role, opens it (tests/test_metrics.py).
    ("GET", "metrics"): Row(set(), lambda w, r: "/metrics", anonymous=REFUSED),
    # Campus sign-in is off in this world: its routes are not there for anyone (tests/test_sso_oidc.py
    # and tests/test_sso_saml.py drive them against real identity providers).
    ("GET", "oidc_start"): Row(set(), lambda w, r: "/sso/oidc/start/", anonymous=REFUSED),
    ("GET", "oidc_callback"): Row(set(), lambda w, r: "/sso/oidc/callback/?code=x&state=y", anonymous=REFUSED),
    ("GET", "saml_start"): Row(set(), lambda w, r: "/sso/saml/start/", anonymous=REFUSED),
    ("POST", "saml_acs"): Row(set(), lambda w, r: "/sso/saml/acs/", lambda w: {"SAMLResponse": "x"}, anonymous=REFUSED),
    ("GET", "saml_metadata"): Row(set(), lambda w, r: "/sso/saml/metadata/", anonymous=REFUSED),
    ("GET", "admin:index"): Row(ADMIN, lambda w, r: "/admin/", login_for=frozenset(SIGNED_IN - ADMIN)),
}

_API = "/api/v1"
API_ROWS: dict[tuple[str, str], Row] = {
    ("GET", "/health"): Row(EVERYONE, lambda w, r: "/health"),
    ("GET", "/openapi.json"): Row(SIGNED_IN, lambda w, r: "/openapi.json"),
    ("GET", "/docs"): Row(SIGNED_IN, lambda w, r: "/docs"),
    # The co-teacher picker's look-up of teachers by the start of a username or address.
    ("GET", "/teachers"): Row(TEACHERS, lambda w, r: "/teachers?q=own"),
    ("GET", "/collections"): Row(TEACHERS, lambda w, r: "/collections"),
    ("POST", "/collections"): Row(TEACHERS, lambda w, r: "/collections", lambda w: {"name": "New one"}),
    ("GET", "/collections/{collection_id}"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}"),
    ("PATCH", "/collections/{collection_id}"): Row(
        COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}", lambda w: {"description": "Changed"}
    ),
    ("DELETE", "/collections/{collection_id}"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}"),
    ("GET", "/collections/{collection_id}/files"): Row(COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}/files"),
    ("POST", "/collections/{collection_id}/files"): Row(
        COLLECTION_EDIT,
        lambda w, r: f"/collections/{_c(w, r)}/files",
        lambda w: {"file": SimpleUploadedFile("week1.md", b"# Week 1\n\nThe mean is the average.\n")},
        multipart=True,
    ),
    ("POST", "/collections/{collection_id}/search"): Row(
        COLLECTION_SEARCH, lambda w, r: f"/collections/{_c(w, r)}/search", lambda w: {"query": "mean", "curate": False}
    ),
    ("GET", "/collections/{collection_id}/checks"): Row(
        COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}/checks"
    ),
    ("POST", "/collections/{collection_id}/checks"): Row(
        COLLECTION_EDIT,
        lambda w, r: f"/collections/{_c(w, r)}/checks",
        lambda w: {"question": "What is the mean?", "expect": {"file_id": w.source.pk}},
    ),
    ("PATCH", "/collections/{collection_id}/checks/{check_id}"): Row(
        COLLECTION_EDIT, _check, lambda w: {"question": "What is the median?"}
    ),
    ("DELETE", "/collections/{collection_id}/checks/{check_id}"): Row(COLLECTION_EDIT, _check),
    ("POST", "/collections/{collection_id}/checks/run"): Row(
        COLLECTION_EDIT, lambda w, r: f"/collections/{_c(w, r)}/checks/run", lambda w: {"curate": False}
    ),
    ("GET", "/files/{file_id}"): Row(COLLECTION_EDIT, lambda w, r: f"/files/{w.source.pk}"),
    ("DELETE", "/files/{file_id}"): Row(COLLECTION_EDIT, lambda w, r: f"/files/{w.source.pk}"),
    ("GET", "/files/{file_id}/chunks"): Row(COLLECTION_EDIT, lambda w, r: f"/files/{w.source.pk}/chunks"),
    ("POST", "/files/{file_id}/cancel"): Row(COLLECTION_EDIT, lambda w, r: f"/files/{w.source.pk}/cancel"),
    ("POST", "/files/{file_id}/retry"): Row(COLLECTION_EDIT, lambda w, r: f"/files/{w.source.pk}/retry"),
    ("POST", "/files/{file_id}/reread"): Row(
        COLLECTION_EDIT, lambda w, r: f"/files/{w.source.pk}/reread", lambda w: {"method": "fast"}
    ),
    ("PUT", "/files/{file_id}/pages/{page}"): Row(
        COLLECTION_EDIT, lambda w, r: f"/files/{w.source.pk}/pages/0", lambda w: {"markdown": "x"}
    ),
    ("GET", "/prompts"): Row(TEACHERS, lambda w, r: "/prompts"),
    ("POST", "/prompts"): Row(TEACHERS, lambda w, r: "/prompts", lambda w: {"name": "New prompt"}),
    ("GET", "/prompts/{prompt_id}"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}"),
    ("PATCH", "/prompts/{prompt_id}"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}", lambda w: {"description": "Changed"}
    ),
    ("DELETE", "/prompts/{prompt_id}"): Row(PROMPT_OWNER, lambda w, r: f"/prompts/{w.prompt.pk}"),
    ("POST", "/prompts/{prompt_id}/duplicate"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/duplicate"),
    ("POST", "/prompts/{prompt_id}/join-code"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/join-code"),
    ("GET", "/prompts/{prompt_id}/students"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/students"),
    ("DELETE", "/prompts/{prompt_id}/students/{student_id}"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/students/{w.enrolled_number}"
    ),
    ("POST", "/prompts/{prompt_id}/students/{student_id}/readmit"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/students/{w.enrolled_number}/readmit"
    ),
    # A prompt's own teachers cannot enroll in it as students.
    ("POST", "/prompts/join"): Row(
        SIGNED_IN - {"owner", "co_owner", "guest"},
        lambda w, r: "/prompts/join",
        lambda w: {"code": w.prompt.join_code, "privacy_confirmed": True},
    ),
    ("GET", "/prompts/{prompt_id}/privacy"): Row(CHAT_START, lambda w, r: f"/prompts/{w.prompt.pk}/privacy"),
    ("POST", "/prompts/{prompt_id}/privacy/confirm"): Row(
        CHAT_WRITE, lambda w, r: f"/prompts/{w.prompt.pk}/privacy/confirm", lambda w: {"level": "pseudonymous"}
    ),
    ("GET", "/prompts/{prompt_id}/chats"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/chats"),
    ("GET", "/prompts/{prompt_id}/chats/export.jsonl"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/chats/export.jsonl"
    ),
    ("GET", "/chats"): Row(SIGNED_IN, lambda w, r: "/chats"),
    ("POST", "/chats"): Row(CHAT_START, lambda w, r: "/chats", lambda w: {"prompt_id": w.prompt.pk}),
    ("GET", "/chats/{chat_id}"): Row(CHAT_READ, lambda w, r: f"/chats/{w.chat(r).pk}"),
    ("DELETE", "/chats/{chat_id}"): Row(CHAT_WRITE, lambda w, r: f"/chats/{w.chat(r).pk}"),
    ("POST", "/chats/{chat_id}/messages"): Row(
        CHAT_WRITE, lambda w, r: f"/chats/{w.chat(r).pk}/messages", lambda w: {"content": "What is bias?"}
    ),
    ("POST", "/chats/{chat_id}/stop"): Row(CHAT_WRITE, lambda w, r: f"/chats/{w.chat(r).pk}/stop"),
    ("POST", "/chats/{chat_id}/retry"): Row(CHAT_WRITE, lambda w, r: f"/chats/{w.chat(r).pk}/retry"),
    # The Markdown export with resolved citations is the student's own (teachers export JSON Lines).
    ("GET", "/chats/{chat_id}/export"): Row(CHAT_WRITE, lambda w, r: f"/chats/{w.chat(r).pk}/export?format=md"),
    ("POST", "/chats/{chat_id}/regenerate"): Row(CHAT_WRITE, lambda w, r: f"/chats/{w.chat(r).pk}/regenerate"),
    # The answer is in the enrolled student's chat: only its student rates it.
    ("POST", "/messages/{message_id}/feedback"): Row(
        {"enrolled"}, lambda w, r: f"/messages/{w.answer.pk}/feedback", lambda w: {"rating": "up"}
    ),
    ("GET", "/prompts/{prompt_id}/stats"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/stats"),
    ("GET", "/prompts/{prompt_id}/gaps"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/gaps"),
    # Answer checks: the prompt's teachers, as for its settings (chat/checks/api.py).
    ("GET", "/prompts/{prompt_id}/answer-checks"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/answer-checks"
    ),
    ("POST", "/prompts/{prompt_id}/answer-checks"): Row(
        PROMPT_EDIT,
        lambda w, r: f"/prompts/{w.prompt.pk}/answer-checks",
        lambda w: {"question": "What is the mean?", "expect": {"searches": True}},
    ),
    ("POST", "/prompts/{prompt_id}/answer-checks/adversarial"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/answer-checks/adversarial"
    ),
    ("PATCH", "/prompts/{prompt_id}/answer-checks/{check_id}"): Row(
        PROMPT_EDIT, lambda w, r: _answer_check(w), lambda w: {"question": "What is the median?"}
    ),
    ("DELETE", "/prompts/{prompt_id}/answer-checks/{check_id}"): Row(PROMPT_EDIT, lambda w, r: _answer_check(w)),
    ("POST", "/prompts/{prompt_id}/answer-checks/run"): Row(
        PROMPT_EDIT,
        lambda w, r: _answer_check(w).rsplit("/", 1)[0] + "/run",
        lambda w: {},  # with a check to run
    ),
    ("GET", "/prompts/{prompt_id}/answer-checks/runs"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/answer-checks/runs"
    ),
    ("GET", "/prompts/{prompt_id}/answer-checks/runs/{run_id}"): Row(PROMPT_EDIT, lambda w, r: _answer_run(w)),
    ("POST", "/prompts/{prompt_id}/answer-checks/runs/{run_id}/apply"): Row(
        PROMPT_EDIT, lambda w, r: _answer_run(w) + "/apply"
    ),
    ("POST", "/prompts/{prompt_id}/gaps/{gap_id}/handled"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/gaps/{w.gap.pk}/handled"
    ),
    ("GET", "/prompts/{prompt_id}/export.csv"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/export.csv?what=stats"
    ),
    # The week at a glance (chat/insight/week_api.py): the prompt's teachers.
    ("GET", "/prompts/{prompt_id}/topics"): Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/topics"),
    ("GET", "/prompts/{prompt_id}/teacher-answers"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/teacher-answers"
    ),
    ("POST", "/prompts/{prompt_id}/teacher-answers"): Row(
        PROMPT_EDIT,
        lambda w, r: f"/prompts/{w.prompt.pk}/teacher-answers",
        lambda w: {"question": "When is the exam?", "answer": "On Friday."},
    ),
    ("PATCH", "/prompts/{prompt_id}/teacher-answers/{answer_id}"): Row(
        PROMPT_EDIT,
        lambda w, r: f"/prompts/{w.prompt.pk}/teacher-answers/{_teacher_answer(w).pk}",
        lambda w: {"answer": "On Monday."},
    ),
    ("DELETE", "/prompts/{prompt_id}/teacher-answers/{answer_id}"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/teacher-answers/{_teacher_answer(w).pk}"
    ),
    ("GET", "/me/usage"): Row(SIGNED_IN, lambda w, r: "/me/usage"),
    ("POST", "/prompts/{prompt_id}/students/{student_id}/budget"): Row(
        PROMPT_EDIT,
        lambda w, r: f"/prompts/{w.prompt.pk}/students/{w.enrolled_number}/budget",
        lambda w: {"reset": True},
    ),
    ("POST", "/prompts/{prompt_id}/budget/exempt"): Row(
        PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}/budget/exempt", lambda w: {"exempt": True}
    ),
}

# Websockets: who may connect, and (chats) who may send a message.
WS_ROWS: dict[str, tuple[set[str], set[str]]] = {
    "ws/collections/<int:collection_id>/": (COLLECTION_EDIT, set()),
    "ws/chats/<int:session_id>/": (CHAT_READ, CHAT_WRITE),
}


# --- Discovering the routes ------------------------------------------------------------------------


def _page_routes() -> set[tuple[str, str]]:
    """(method, url name) of every page: GET for pages that show something, POST for actions."""
    names: set[str] = set()

    def walk(resolver: URLResolver, prefix: str) -> None:
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                if str(entry.pattern).startswith("admin/"):
                    names.add("admin:index")  # the admin site is covered by Django's staff check
                elif not str(entry.pattern).startswith("api/"):
                    walk(entry, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern) and entry.name and not str(entry.pattern).startswith("api/"):
                names.add(entry.name)

    walk(get_resolver(), "")
    covered = {name for _, name in PAGE_ROWS}
    return {key for key in PAGE_ROWS if key[1] in names} | {("?", n) for n in names - covered}


def _api_routes() -> set[tuple[str, str]]:
    schema = api.get_openapi_schema()
    operations = {(m.upper(), path.removeprefix(_API)) for path, ops in schema["paths"].items() for m in ops}
    return operations | {("GET", "/openapi.json"), ("GET", "/docs")}


def _ws_routes() -> set[str]:
    from currechat.routing import websocket_urlpatterns

    return {str(p.pattern) for p in websocket_urlpatterns}


def test_every_route_has_a_matrix_row(db):
    missing_pages = sorted(n for m, n in _page_routes() if m == "?")
    missing_api = sorted(_api_routes() - set(API_ROWS))
    stale_api = sorted(set(API_ROWS) - _api_routes())
    missing_ws = sorted(_ws_routes() - set(WS_ROWS))
    assert (missing_pages, missing_api, stale_api, missing_ws) == ([], [], [], [])


# --- The world every cell runs in ------------------------------------------------------------------


def _user(name: str, role: str = Role.STUDENT, **extra) -> User:
    return User.objects.create_user(name, password="x", role=role, **extra)


@pytest.fixture
def world(db, ollama) -> World:
    users = {
        "outsider": _user("outsider"),
        "enrolled": _user("enrolled"),
        "removed": _user("removed"),
        "other_teacher": _user("other-teacher", Role.TEACHER),
        "owner": _user("owner", Role.TEACHER),
        "co_owner": _user("co-owner", Role.TEACHER),
        "former_co_owner": _user("former", Role.TEACHER),
        "staff": _user("staff", Role.TEACHER, is_staff=True),
        "superuser": _user("root", Role.TEACHER, is_staff=True, is_superuser=True),
        "guest": _user("guest", Role.GUEST),
    }
    users.update(_sso_made())
    collection = Collection.objects.create(
        name="Statistics", language="english", owner=users["owner"], embedding_model="ollama:snowflake-arctic-embed2"
    )
    collection.co_owners.add(users["co_owner"], users["former_co_owner"])
    own_prompt = Prompt.objects.create(owner=users["former_co_owner"], name="Former's own", curation_enabled=False)
    own_prompt.collections.add(collection)
    collection.co_owners.remove(users["former_co_owner"])
    source = SourceFile.objects.create(
        collection=collection,
        original_name="notes.md",
        file="x/notes.md",
        file_type="markdown",
        size=10,
        sha256="0" * 64,
        status=FileStatus.FAILED,
    )
    prompt = Prompt.objects.create(owner=users["owner"], name="Stats helper", curation_enabled=False)
    prompt.collections.add(collection)
    prompt.co_teachers.add(users["co_owner"], users["guest"])
    enrolled = Enrollment.objects.create(prompt=prompt, student=users["enrolled"])
    Enrollment.objects.create(prompt=prompt, student=users["sso_student"])
    Enrollment.objects.create(prompt=prompt, student=users["removed"], status=EnrollmentStatus.REMOVED)
    chats = {
        role: ChatSession.objects.create(prompt=prompt, user=users[role], visibility=prompt.chat_visibility)
        for role in ("enrolled", "removed", "sso_student")
    }
    from accounts.models import ApiToken

    ApiToken.issue(users["owner"], name="owner's")
    return World(
        users, collection, source, prompt, own_prompt, chats, enrolled.number, *_originals(collection, source),
        *_insight(prompt, chats["enrolled"]),
    )  # fmt: skip


def _sso_made() -> dict[str, User]:
    """A teacher and a student as their first campus sign-in makes them (faculty, student)."""
    from sso.models import Protocol
    from sso.provision import Person, sign_in

    issuer = "https://idp.uni.example"
    return {
        role: sign_in(Person(Protocol.SAML, issuer, f"{role}@uni.example", name=role, affiliations=(affiliation,)))
        for role, affiliation in (("sso_teacher", "faculty"), ("sso_student", "student"))
    }


def _originals(collection: Collection, source: SourceFile) -> tuple[SourceFile]:
    """A stored one-page PDF, and one indexed passage of the Markdown file."""
    import pymupdf
    from django.core.files.base import ContentFile

    from rag.index import CollectionIndex, IndexedChunk

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "The mean is the average.")
    data = doc.tobytes()
    pdf = SourceFile(
        collection=collection, original_name="week1.pdf", file_type="pdf", size=len(data), sha256="1" * 64,
        status=FileStatus.READY, pages=1,
    )  # fmt: skip
    pdf.file.save("week1.pdf", ContentFile(data))
    chunk = IndexedChunk(source.pk, 0, "The mean is the average.", "notes.md", None, None, "Mean", [1.0] + [0.0] * 63)
    CollectionIndex(collection.pk, "english", 64).replace_file(source.pk, [chunk])
    return (pdf,)


def _insight(prompt: Prompt, chat: ChatSession) -> tuple[Message, MaterialGap]:
    from django.utils import timezone

    Message.objects.create(session=chat, role="user", content="What is bias?")
    answer = Message.objects.create(session=chat, role="assistant", content="Skew.", status="complete")
    now = timezone.now()
    gap = MaterialGap.objects.create(prompt=prompt, key="bias", query="bias", count=1, first_asked=now, last_asked=now)
    return answer, gap


# --- Running the cells ----------------------------------------------------------------------------


def _outcome(response) -> str:
    status = response.status_code
    if status == 401:
        return LOGIN
    if status in (301, 302) and "login/?next=" in response.get("Location", ""):
        return LOGIN
    if status in (403, 404):
        return REFUSED
    if status < 400 or status in (400, 409, 422):
        # 400/409/422: let in, refused only for the state or the input of this probe (nothing to
        # retry, a turn already running): the permission checks run first.
        return OK
    return f"status {status}"


def _expected(row: Row, role: str) -> str:
    if role in row.allowed:
        return OK
    if role == "anonymous":
        return row.anonymous
    if role in row.login_for:
        return LOGIN
    return REFUSED


def _cell(world: World, role: str, method: str, url: str, data: dict, *, json_body: bool) -> str:
    client = Client()
    if role != "anonymous":
        client.force_login(world.users[role])
    with transaction.atomic():
        if json_body:
            body = json.dumps(data) if data else None
            response = client.generic(method, url, body or "", content_type="application/json")
        else:
            response = getattr(client, method.lower())(url, data)
        transaction.set_rollback(True)
    return _outcome(response)


def _wrong_cells(world: World, method: str, row: Row, *, api_route: bool) -> list[str]:
    wrong = []
    for role in ROLES:
        url = (_API if api_route else "") + row.url(world, role)
        got = _cell(world, role, method, url, row.data(world), json_body=api_route and not row.multipart)
        if got != _expected(row, role):
            wrong.append(f"{role}: expected {_expected(row, role)}, got {got}")
    return wrong


@pytest.mark.parametrize("key", sorted(PAGE_ROWS), ids=lambda k: f"{k[0]} {k[1]}")
def test_page_permissions(world, key):
    method, _ = key
    wrong = _wrong_cells(world, method, PAGE_ROWS[key], api_route=False)
    assert not wrong, "; ".join(wrong)


@pytest.mark.parametrize("key", sorted(API_ROWS), ids=lambda k: f"{k[0]} {k[1]}")
def test_api_permissions(world, key):
    method, _ = key
    wrong = _wrong_cells(world, method, API_ROWS[key], api_route=True)
    assert not wrong, "; ".join(wrong)


async def _ws_cell(world: World, role: str, path: str, send: bool) -> tuple[bool, bool]:
    """Whether the role's socket connects, and (when `send`) whether a message starts a turn."""
    user = None if role == "anonymous" else world.users[role]
    communicator, connected, _ = await open_websocket(user, path)
    started = False
    try:
        if connected and send:
            await communicator.send_json_to({"type": "user_message", "content": "What is bias?"})
            # Generous: two test workers on PostgreSQL on a busy 2-core machine.
            first = await communicator.receive_json_from(timeout=60)
            started = first["type"] != "error"
            if started:
                while (await communicator.receive_json_from(timeout=60))["type"] not in ("message_done", "error"):
                    pass
    finally:
        # Always close the socket as a browser would: an app task left running when async_to_sync's
        # loop closes is cancelled mid database call, and asgiref waits for that call to finish,
        # which hung a whole run once instead of failing this test.
        if connected:
            await communicator.disconnect(timeout=EVENT_SECONDS)
    return connected, started


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pattern", sorted(WS_ROWS))
def test_websocket_permissions(world, pattern):
    may_connect, may_send = WS_ROWS[pattern]
    wrong = []
    for role in ROLES:
        if "collections" in pattern:
            path = f"/ws/collections/{world.collection.pk}/"
        else:
            path = f"/ws/chats/{world.chat(role).pk}/"
        connected, started = async_to_sync(_ws_cell)(world, role, path, "chats" in pattern)
        if connected != (role in may_connect) or started != (role in may_send):
            wrong.append(f"{role}: connected={connected} started={started}")
    assert not wrong, "; ".join(wrong)


# --- The admin: staff with view-only and with change permissions ----------------------------------
# The admin is an edge like any other (docs/CONVENTIONS.md habit 18): a model permission lets staff
# read or use the admin's own write paths, never write around a rule the pages enforce. Each row is
# one attempt and how to see whether it took effect; the cells say for whom it does.

# `demoted`: had the change permissions a moment ago, then lost staff status; refused at once.
ADMIN_ROLES = ("staff", "staff_view", "staff_change", "demoted", "superuser")
READERS = {"staff_view", "staff_change", "superuser"}
CHANGERS = {"staff_change", "superuser"}
NOBODY: set[str] = set()
ADMIN_MODELS = (
    "user", "chatsession", "message", "enrollment", "sourcefile", "ltiidentity", "ssoidentity", "pagecorrection",
    "searchcheck", "platform", "teacheranswer", "answercheck",
)  # fmt: skip


@dataclass
class AdminWorld:
    users: dict[str, User]
    student: User
    other_student: User
    session: ChatSession
    question: Message
    enrollment: Enrollment
    source: SourceFile
    identity: object  # lti.models.LtiIdentity
    sso_identity: object  # sso.models.SsoIdentity
    correction: object  # collections_app.models.PageCorrection
    check: object  # collections_app.models.SearchCheck
    pending: object  # lti.models.Platform that registered itself and waits for an administrator
    teacher_answer: object  # chat.models.TeacherAnswer
    answer_check: object  # chat.models.AnswerCheck


@dataclass(frozen=True)
class AdminRow:
    allowed: set[str]
    method: str
    url: Callable[[AdminWorld], str]
    took_effect: Callable[[AdminWorld, object], bool]  # (world, response) → did it happen?
    data: Callable[[AdminWorld], dict] = field(default=lambda w: {})


def _fresh(obj):
    obj.refresh_from_db()
    return obj


def _action(name: str, *pks: int) -> dict:
    return {"action": name, "_selected_action": list(pks)}


ADMIN_ROWS: dict[str, AdminRow] = {
    "read a chat": AdminRow(
        READERS, "GET", lambda w: f"/admin/chat/chatsession/{w.session.pk}/change/",
        lambda w, r: r.status_code == 200 and w.question.content in r.content.decode(),
    ),
    "change a chat's privacy level": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/chat/chatsession/{w.session.pk}/change/",
        lambda w, r: _fresh(w.session).visibility == "named",
        lambda w: {"visibility": "named", "user": w.session.user_id, "prompt": w.session.prompt_id},
    ),
    "rewrite a student's message": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/chat/message/{w.question.pk}/change/",
        lambda w, r: _fresh(w.question).content != "What is bias?", lambda w: {"content": "Rewritten", "role": "user"},
    ),
    "delete a student's chat": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/chat/chatsession/{w.session.pk}/delete/",
        lambda w, r: not ChatSession.objects.filter(pk=w.session.pk).exists(), lambda w: {"post": "yes"},
    ),
    "move Student N to another user": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/chat/enrollment/{w.enrollment.pk}/change/",
        lambda w, r: _fresh(w.enrollment).student_id != w.student.pk,
        lambda w: {"student": w.other_student.pk, "prompt": w.enrollment.prompt_id, "status": "enrolled"},
    ),
    "remove a student": AdminRow(
        CHANGERS, "POST", lambda w: f"/admin/chat/enrollment/{w.enrollment.pk}/change/",
        lambda w, r: _fresh(w.enrollment).status == EnrollmentStatus.REMOVED, lambda w: {"status": "removed"},
    ),
    "mark a file ready by hand": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/collections_app/sourcefile/{w.source.pk}/change/",
        lambda w, r: _fresh(w.source).status == FileStatus.READY, lambda w: {"status": "ready", "progress": 100},
    ),
    "retry a failed file": AdminRow(
        CHANGERS, "POST", lambda w: "/admin/collections_app/sourcefile/",
        lambda w, r: _fresh(w.source).status == FileStatus.QUEUED, lambda w: _action("retry_files", w.source.pk),
    ),
    "have a reset link mailed to a student": AdminRow(
        CHANGERS, "POST", lambda w: "/admin/accounts/user/",
        lambda w, r: "could not be mailed" in r.content.decode(), lambda w: _action("make_reset_links", w.student.pk),
    ),
    "see a student's reset link": AdminRow(
        {"superuser"}, "POST", lambda w: "/admin/accounts/user/",
        lambda w, r: "http://testserver/account/reset/" in r.content.decode(),
        lambda w: _action("make_reset_links", w.student.pk),
    ),
    "make a reset link for a staff account": AdminRow(
        {"superuser"}, "POST", lambda w: "/admin/accounts/user/",
        lambda w, r: "could not be mailed" in r.content.decode(),
        lambda w: _action("make_reset_links", w.users["staff"].pk),
    ),
    "change a user's email address": AdminRow(
        {"superuser"}, "POST", lambda w: f"/admin/accounts/user/{w.student.pk}/change/",
        lambda w, r: _fresh(w.student).email == "taken@example.org",
        lambda w: {
            "username": w.student.username, "email": "taken@example.org", "role": "student", "is_active": "on",
            "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00",
        },
    ),
    "deactivate a student": AdminRow(
        CHANGERS, "POST", lambda w: f"/admin/accounts/user/{w.student.pk}/change/",
        lambda w, r: not _fresh(w.student).is_active,
        lambda w: {
            "username": w.student.username, "role": "student", "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    ),
    "deactivate a staff account": AdminRow(
        {"superuser"}, "POST", lambda w: f"/admin/accounts/user/{w.users['staff'].pk}/change/",
        lambda w, r: not _fresh(w.users["staff"]).is_active,
        lambda w: {
            "username": "staff", "role": "teacher", "is_staff": "on", "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    ),
    "set a user's password": AdminRow(
        {"superuser"}, "POST", lambda w: f"/admin/accounts/user/{w.student.pk}/password/",
        lambda w, r: _fresh(w.student).check_password("taken-over-123!"),
        lambda w: {"password1": "taken-over-123!", "password2": "taken-over-123!", "usable_password": "true"},
    ),
    "link an LTI identity to a superuser": AdminRow(
        {"superuser"}, "POST", lambda w: f"/admin/lti/ltiidentity/{w.identity.pk}/change/",
        lambda w, r: _fresh(w.identity).user_id == w.users["superuser"].pk,
        lambda w: {"user": w.users["superuser"].pk},
    ),
    # Sharing accounts by the platform's person identifier lets it reach other people's accounts.
    "let a learning platform share accounts by person identifier": AdminRow(
        {"superuser"}, "POST", lambda w: f"/admin/lti/platform/{w.identity.platform_id}/change/",
        lambda w, r: _fresh(w.identity.platform).share_person_id,
        lambda w: {
            "name": "Moodle", "active": "on", "issuer": "https://lms.example.test", "client_id": "c",
            "deployment_ids": '["1"]', "auth_login_url": "https://lms.example.test/auth",
            "auth_token_url": "https://lms.example.test/token", "key_set_url": "https://lms.example.test/jwks",
            "share_person_id": "on",
        },
    ),
    # The confirmed address is the owner's proof alone: nobody sets it in the admin.
    "mark a user's address confirmed": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/accounts/user/{w.student.pk}/change/",
        lambda w, r: _fresh(w.student).email_confirmed == "taken@example.org",
        lambda w: {
            "username": w.student.username, "email": "taken@example.org", "email_confirmed": "taken@example.org",
            "role": "student", "is_active": "on", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00",
        },
    ),
    # Made by sign-ins only: a changed user would sign one person in as another.
    "link an SSO identity to another user": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/sso/ssoidentity/{w.sso_identity.pk}/change/",
        lambda w, r: _fresh(w.sso_identity).user_id != w.other_student.pk,
        lambda w: {"user": w.users["superuser"].pk, "protocol": "oidc", "issuer": "https://idp.example.test",
                   "subject": "s-1"},
    ),
    # Written on the file page, which re-indexes the file: an edit here would change the record only.
    "rewrite a teacher's page correction": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/collections_app/pagecorrection/{w.correction.pk}/change/",
        lambda w, r: _fresh(w.correction).markdown != "Corrected text",
        lambda w: {"markdown": "Rewritten", "page": 1, "source": w.source.pk},
    ),
    # A platform that registered itself launches nothing until an administrator lets it (issue 41).
    "approve a learning platform's registration": AdminRow(
        CHANGERS, "POST", lambda w: "/admin/lti/platform/",
        lambda w, r: _fresh(w.pending).status == "approved", lambda w: _action("approve", w.pending.pk),
    ),
    # Served to students without a model call: only the prompt's teachers write it, on its pages.
    "rewrite a teacher's answer": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/chat/teacheranswer/{w.teacher_answer.pk}/change/",
        lambda w, r: _fresh(w.teacher_answer).answer != "On Friday.",
        lambda w: {"answer": "Rewritten", "question": "When is the exam?", "key": "when is the exam",
                   "prompt": w.teacher_answer.prompt_id, "sources": "[]", "served": 0},
    ),
    "rewrite a prompt's answer check": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/chat/answercheck/{w.answer_check.pk}/change/",
        lambda w, r: _fresh(w.answer_check).question != "What is bias?",
        lambda w: {"question": "Rewritten", "prompt": w.answer_check.prompt_id, "expect": "{}"},
    ),
    "rewrite a collection's test question": AdminRow(
        NOBODY, "POST", lambda w: f"/admin/collections_app/searchcheck/{w.check.pk}/change/",
        lambda w, r: _fresh(w.check).question != "What is bias?",
        lambda w: {"question": "Rewritten", "collection": w.check.collection_id, "expect_file": w.source.pk},
    ),
}  # fmt: skip


@pytest.fixture
def admin_world(db) -> AdminWorld:
    from django.contrib.auth.models import Permission

    from chat.models import AnswerCheck, TeacherAnswer
    from collections_app.models import PageCorrection, SearchCheck
    from lti.models import LtiIdentity, Platform
    from sso.models import SsoIdentity

    users = {
        "staff": _user("staff", Role.TEACHER, is_staff=True),
        "staff_view": _user("staff-view", Role.TEACHER, is_staff=True),
        "staff_change": _user("staff-change", Role.TEACHER, is_staff=True),
        "superuser": _user("root", Role.TEACHER, is_staff=True, is_superuser=True),
    }
    perms = Permission.objects.filter(content_type__model__in=ADMIN_MODELS)
    users["staff_view"].user_permissions.add(*perms.filter(codename__startswith="view_"))
    users["staff_change"].user_permissions.add(*perms.filter(codename__regex=r"^(view|change)_"))
    users["demoted"] = _user("demoted", Role.TEACHER, is_staff=True)
    users["demoted"].user_permissions.add(*perms.filter(codename__regex=r"^(view|change)_"))
    users["demoted"].is_staff = False  # taken away just now: the next request is refused
    users["demoted"].save()
    student, other_student = _user("enrolled"), _user("outsider")
    owner = _user("owner", Role.TEACHER)
    prompt = Prompt.objects.create(owner=owner, name="Stats helper", curation_enabled=False)
    enrollment = Enrollment.objects.create(prompt=prompt, student=student)
    session = ChatSession.objects.create(prompt=prompt, user=student, visibility=prompt.chat_visibility)
    question = Message.objects.create(session=session, role="user", content="What is bias?")
    collection = Collection.objects.create(name="Statistics", language="english", owner=owner)
    source = SourceFile.objects.create(
        collection=collection, original_name="notes.md", file="x/notes.md", file_type="markdown", size=10,
        sha256="0" * 64, status=FileStatus.FAILED,
    )  # fmt: skip
    platform = Platform.objects.create(
        name="Moodle", issuer="https://lms.example.test", client_id="c", deployment_ids=["1"],
        auth_login_url="https://lms.example.test/auth", auth_token_url="https://lms.example.test/token",
    )  # fmt: skip
    identity = LtiIdentity.objects.create(platform=platform, subject="learner-1", user=other_student)
    sso_identity = SsoIdentity.objects.create(
        protocol="oidc", issuer="https://idp.example.test", subject="s-1", user=other_student
    )
    correction = PageCorrection.objects.create(source=source, page=1, markdown="Corrected text", user=owner)
    check = SearchCheck.objects.create(collection=collection, question="What is bias?", expect_file=source)
    pending = Platform.objects.create(
        name="Canvas", issuer="https://canvas.example.test", client_id="d", deployment_ids=["1"],
        auth_login_url="https://canvas.example.test/auth", auth_token_url="https://canvas.example.test/token",
        status="pending",
    )  # fmt: skip
    teacher_answer = TeacherAnswer.objects.create(
        prompt=prompt, key="when is the exam", question="When is the exam?", answer="On Friday.", author=owner
    )
    answer_check = AnswerCheck.objects.create(prompt=prompt, question="What is bias?", expect={"searches": True})
    return AdminWorld(
        users, student, other_student, session, question, enrollment, source, identity, sso_identity, correction,
        check, pending, teacher_answer, answer_check,
    )  # fmt: skip


@pytest.mark.parametrize("name", sorted(ADMIN_ROWS))
def test_admin_permissions(admin_world, settings, name):
    settings.EMAIL_HOST = ""  # no mail server: a link is either shown (superusers only) or not made
    row = ADMIN_ROWS[name]
    wrong = []
    for role in ADMIN_ROLES:
        client = Client()
        client.force_login(admin_world.users[role])
        with transaction.atomic():
            response = getattr(client, row.method.lower())(row.url(admin_world), row.data(admin_world), follow=True)
            happened = row.took_effect(admin_world, response)
            transaction.set_rollback(True)
        if happened != (role in row.allowed):
            wrong.append(f"{role}: {'took effect' if happened else 'refused'}")
    assert not wrong, "; ".join(wrong)


# --- What each role reads beside a chat, and what each role's search costs --------------------------
# Cells of trust rather than of routes: a route may let a role in and still must not show it a
# "none" chat's title, or let it curate without paying.


def test_only_its_student_sees_the_title_of_a_none_chat_beside_their_other_chat(world):
    prompt, student = world.prompt, world.users["enrolled"]
    hidden = ChatSession.objects.create(prompt=prompt, user=student, visibility="none", title="A secret worry")
    Message.objects.create(session=hidden, role="user", content="A secret worry")
    url = f"/prompts/{prompt.pk}/chat/{world.chats['enrolled'].pk}/"
    sees = set()
    for role in ROLES:
        client = Client()
        if role != "anonymous":
            client.force_login(world.users[role])
        for page in (client.get(url), client.get(url + "?q=secret")):
            if page.status_code == 200 and "A secret worry" in page.content.decode():
                sees.add(role)
    assert sees == {"enrolled"}


def test_a_curated_search_is_charged_to_whoever_searches(world, settings):
    from chat.metering.usage import UsageMeter

    settings.USER_WEEKLY_TOKEN_BUDGET = 100
    world.prompt.curation_enabled = True
    world.prompt.weekly_token_budget = 100
    world.prompt.save()
    UsageMeter(world.users["enrolled"].pk, world.prompt.pk)(100, 0, "qwen3:8b")  # the prompt's budget
    UsageMeter(world.users["owner"].pk, None)(100, 0, "qwen3:8b")  # the owner's own, across prompts
    expected = {role: REFUSED for role in ROLES} | {"anonymous": LOGIN, "co_owner": OK, "superuser": OK}
    expected |= {"enrolled": "status 429", "owner": "status 429"}
    expected["sso_student"] = OK  # enrolled too, with its own budget untouched
    got = {}
    for role in ROLES:
        url = f"{_API}/collections/{world.collection.pk}/search"
        got[role] = _cell(world, role, "POST", url, {"query": "mean", "curate": True}, json_body=True)
    assert got == expected


# --- Tutor mode's protected material: a field of the prompt (DESIGN.md "Tutor mode") ----------------
# No new route: the fields travel through `PATCH /prompts/{id}` and the prompt's page, and must be
# changed and read by the prompt's teachers only, wherever else the prompt shows.


def test_protected_material_is_changed_and_read_by_the_prompts_teachers_only(world):
    secret = "Answer key: the area is 17.25 square units."
    Prompt.objects.filter(pk=world.prompt.pk).update(tutor_mode="guide", protected_material=secret)
    body = {"tutor_mode": "guide", "protected_material": "Another key."}
    row = Row(PROMPT_EDIT, lambda w, r: f"/prompts/{w.prompt.pk}", lambda w: body)
    wrong = _wrong_cells(world, "PATCH", row, api_route=True)
    assert not wrong, "; ".join(wrong)
    assert Prompt.objects.get(pk=world.prompt.pk).protected_material == secret, "every cell was rolled back"

    pk = world.prompt.pk
    readers = set()
    for role in ROLES:
        client = Client()
        if role != "anonymous":
            client.force_login(world.users[role])
        chat = world.chat(role).pk
        urls = (
            f"{_API}/prompts/{pk}", f"{_API}/prompts", f"{_API}/chats/{chat}", f"{_API}/chats",
            f"/prompts/{pk}/", f"/prompts/{pk}/chat/", f"/prompts/{pk}/chat/{chat}/", "/",
        )  # fmt: skip
        if any(secret in client.get(url).content.decode() for url in urls):
            readers.add(role)
    assert readers == PROMPT_EDIT
