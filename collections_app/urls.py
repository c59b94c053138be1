from django.urls import path

from collections_app import checks_views, views

urlpatterns = [
    path("new/", views.collection_create, name="collection_create"),
    path("<int:pk>/", views.collection_detail, name="collection_detail"),
    path("<int:pk>/settings/", views.collection_settings, name="collection_settings"),
    path("<int:pk>/delete/", views.collection_delete, name="collection_delete"),
    *views.invitation_urls,  # collection_invite, collection_withdraw_invitation
    path("<int:pk>/upload/", views.collection_upload, name="collection_upload"),
    path("<int:pk>/checks/", checks_views.checks_page, name="collection_checks"),
    path("files/<int:pk>/", views.file_detail, name="file_detail"),
    path("files/<int:pk>/download/", views.file_download, name="file_download"),
    path("files/<int:pk>/pages/<int:page>/", views.source_page, name="source_page"),
    path("files/<int:pk>/pages/<int:page>.png", views.source_page_image, name="source_page_image"),
    path("files/<int:pk>/passages/<int:position>/", views.source_context, name="source_context"),
    path("files/<int:pk>/pages/<int:page>/correct/", views.file_page_correct, name="file_page_correct"),
    path("files/<int:pk>/cancel/", views.file_action, {"action": "cancel"}, name="file_cancel"),
    path("files/<int:pk>/retry/", views.file_action, {"action": "retry"}, name="file_retry"),
    path("files/<int:pk>/reread/", views.file_action, {"action": "reread"}, name="file_reread"),
    path("files/<int:pk>/delete/", views.file_action, {"action": "delete"}, name="file_delete"),
]
