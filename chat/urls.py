from django.urls import path

from chat import views

urlpatterns = [
    path("new/", views.prompt_create, name="prompt_create"),
    path("<int:pk>/", views.prompt_detail, name="prompt_detail"),
    path("<int:pk>/delete/", views.prompt_delete, name="prompt_delete"),
    path("<int:pk>/duplicate/", views.prompt_duplicate, name="prompt_duplicate"),
    path("<int:pk>/join-code/", views.prompt_rotate_code, name="prompt_rotate_code"),
    path("<int:pk>/students/<int:number>/budget/", views.student_budget, name="student_budget"),
    path("<int:pk>/budget/exempt/", views.exempt_myself, name="budget_exempt"),
    path("<int:pk>/students/<int:number>/<str:action>/", views.student_action, name="student_action"),
    path("<int:pk>/chat/", views.chat_home, name="chat_home"),
    path("<int:pk>/chat/new/", views.chat_new, name="chat_new"),
    path("<int:pk>/chat/<int:session_id>/", views.chat_session, name="chat_session"),
    path("<int:pk>/chat/<int:session_id>/delete/", views.chat_delete, name="chat_delete"),
    path("<int:pk>/chat/<int:session_id>/rename/", views.chat_rename, name="chat_rename"),
    path("<int:pk>/insight/", views.prompt_insight, name="prompt_insight"),
    path("<int:pk>/insight/gaps/<int:gap_id>/handled/", views.gap_handled, name="gap_handled"),
]
