from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.utils.translation import gettext_lazy as _
from django.views.i18n import JavaScriptCatalog

from accounts.views import set_language
from chat.course.views import start_reset
from chat.privacy import views as privacy_views
from collections_app import search
from currechat import invitations, joining, views
from currechat.api import api
from currechat.metrics import metrics_view
from kernel.framing import embeddable
from sso.views import LogoutView

urlpatterns = [
    path("", views.home, name="home"),
    # A page embedded in a learning platform may need the login and the join link inside its frame.
    path(
        "login/",
        embeddable(views.RateLimitedLoginView.as_view(template_name="registration/login.html")),
        name="login",
    ),
    # Ends a campus sign-in at the provider too (sso/views.py); a local session just ends.
    path("logout/", LogoutView.as_view(), name="logout"),
    path("password-reset/", views.RequestResetView.as_view(), name="password_reset"),
    path(
        "password-reset/sent/",
        auth_views.PasswordResetDoneView.as_view(template_name="registration/password_reset_done.html"),
        name="password_reset_done",
    ),
    path("join/", joining.join_by_code, name="join"),
    path("join/code/", joining.join_with_code, name="join_with_code"),
    path("join/<str:code>/", embeddable(joining.join_link), name="join_link"),
    # The privacy notice the join page asks a visitor to confirm, for whoever holds the code.
    path("join/<str:code>/privacy/", embeddable(joining.join_privacy), name="join_privacy"),
    path("invitations/<str:token>/", invitations.invitation_page, name="invitation"),
    path("collections/", include("collections_app.urls")),
    path("collections/<int:pk>/search/", search.search_page, name="collection_search"),
    path("prompts/", include("chat.urls")),
    # A teacher asks for a student's reset link: the course's page, under the account pages.
    path("account/reset/", start_reset, name="start_reset"),
    path("account/", include("accounts.urls")),
    path("lti/", include("lti.urls")),
    path("sso/", include("sso.urls")),
    path("i18n/setlang/", set_language, name="set_language"),
    # The JavaScript strings of our own apps (static/js/*.js call gettext() from it).
    path("jsi18n/", JavaScriptCatalog.as_view(packages=["currechat"]), name="javascript-catalog"),
    # The deployment's privacy sheet for the data protection officer and IT (staff only).
    path("privacy-sheet/", privacy_views.privacy_sheet, name="privacy_sheet"),
    path("privacy-sheet.md", privacy_views.privacy_sheet_markdown, name="privacy_sheet_markdown"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("metrics", metrics_view, name="metrics"),
]

admin.site.site_header = _("CurreChat administration")
admin.site.login_form = views.AdminLoginForm  # LOCAL_LOGIN holds on the admin's password form too
admin.site.site_title = _("CurreChat admin")
