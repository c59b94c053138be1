"""The chat app's models: the course and its chats (prompts.py), what teachers read and students
use of it (records.py), invitations to co-teach (invitations.py), and the week at a glance
(week.py: teachers' answers, topics, their mail). Everything is importable from
`chat.models`, as Django and the migrations expect."""

from chat.models.checks import (  # noqa: F401
    AnswerCheck,
    AnswerCheckResult,
    AnswerCheckRun,
    RunStatus,
    RunStop,
    RunTrigger,
)
from chat.models.invitations import PromptInvitation  # noqa: F401
from chat.models.prompts import (  # noqa: F401
    _JOIN_ALPHABET,
    STUDENT_SENTENCES,
    AnswerMode,
    ChatSession,
    ChatSessionQuerySet,
    ChatVisibility,
    Enrollment,
    EnrollmentStatus,
    Message,
    MessageRole,
    MessageStatus,
    Prompt,
    PromptQuerySet,
    PromptState,
    SourcePolicy,
    _default_chat_model,
    _default_weekly_token_budget,
    enrolled_q,
    new_join_code,
    open_now_q,
    teaches_q,
)
from chat.models.records import (  # noqa: F401
    BudgetOverride,
    Feedback,
    FeedbackRating,
    MaterialGap,
    PromptDay,
    SourceDay,
    TokenUsage,
)
from chat.models.tutor import Guarded, SafetyDay, TutorMode  # noqa: F401
from chat.models.week import (  # noqa: F401
    DigestSubscription,
    TeacherAnswer,
    TeacherAnswerFile,
    TopicDigest,
)
