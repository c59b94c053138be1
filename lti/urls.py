from django.urls import path

from lti import registration_views, roster_views, views

app_name = "lti"

urlpatterns = [
    path("login/", views.login_initiation, name="login"),
    path("launch/", views.launch, name="launch"),
    path("jwks/", views.jwks, name="jwks"),
    path("deep-link/", views.deep_link_respond, name="deep_link"),
    path("register/", registration_views.register, name="register"),
    path("prompts/<int:pk>/sync/", roster_views.sync_now, name="roster_sync"),
    path("prompts/<int:pk>/courses/<int:course_id>/", roster_views.course_settings, name="roster_course"),
]
