from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from accounts import profile, views

urlpatterns = [
    path("profile/", profile.profile, name="profile"),
    path("profile/confirm-address/", profile.ask_confirmation, name="address_confirm_request"),
    path("confirm-address/<uidb64>/<token>/", profile.confirm_address, name="address_confirm"),
    path(
        "reset/<uidb64>/<token>/",
        profile.ResetConfirmView.as_view(success_url=reverse_lazy("password_reset_complete")),
        name="password_reset_confirm",
    ),
    path("reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("", views.account, name="account"),
    path("tokens/<int:pk>/revoke/", views.revoke_token, name="token_revoke"),
]
