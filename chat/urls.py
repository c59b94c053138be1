from django.urls import path

from chat.checks import views as checks
from chat.course import views as course
from chat.insight import views as insight
from chat.privacy import views as privacy
from chat.turn import views as turn

urlpatterns = [
    path("new/", course.prompt_create, name="prompt_create"),
    path("<int:pk>/", course.prompt_detail, name="prompt_detail"),
    path("<int:pk>/delete/", course.prompt_delete, name="prompt_delete"),
    path("<int:pk>/duplicate/", course.prompt_duplicate, name="prompt_duplicate"),
    *course.invitation_urls,  # prompt_invite, prompt_withdraw_invitation
    path("<int:pk>/join-code/", course.prompt_rotate_code, name="prompt_rotate_code"),
    path("<int:pk>/students/<int:number>/budget/", course.student_budget, name="student_budget"),
    path("<int:pk>/budget/exempt/", course.exempt_myself, name="budget_exempt"),
    path("<int:pk>/students/<int:number>/<str:action>/", course.student_action, name="student_action"),
    path("<int:pk>/privacy/", privacy.prompt_privacy, name="prompt_privacy"),
    path("<int:pk>/privacy/acknowledge/", privacy.privacy_acknowledge, name="privacy_acknowledge"),
    path("<int:pk>/chat/", turn.chat_home, name="chat_home"),
    path("<int:pk>/chat/new/", turn.chat_new, name="chat_new"),
    path("<int:pk>/chat/<int:session_id>/", turn.chat_session, name="chat_session"),
    path("<int:pk>/chat/<int:session_id>/delete/", turn.chat_delete, name="chat_delete"),
    path("<int:pk>/chat/<int:session_id>/rename/", turn.chat_rename, name="chat_rename"),
    path("<int:pk>/answer-checks/", checks.answer_checks, name="answer_checks"),
    path("<int:pk>/answer-checks/<int:check_id>/", checks.answer_check_detail, name="answer_check_detail"),
    path("<int:pk>/insight/", insight.prompt_insight, name="prompt_insight"),
    path("<int:pk>/insight/gaps/<int:gap_id>/handled/", insight.gap_handled, name="gap_handled"),
    path("<int:pk>/insight/answers/", insight.save_teacher_answer, name="save_teacher_answer"),
    path(
        "<int:pk>/insight/answers/<int:answer_id>/delete/",
        insight.delete_teacher_answer,
        name="delete_teacher_answer",
    ),
    path("<int:pk>/insight/topics-mail/", insight.topics_mail, name="topics_mail"),
    path("topics-mail/stop/<str:token>/", insight.unsubscribe, name="digest_unsubscribe"),
]
