"""CurreChat settings for the week at a glance (chat/insight/topics.py): the topics of a week's
student questions. Every value comes from an environment variable (README)."""

from __future__ import annotations

from kernel.env import env_float, env_int

# A topic is shown only when at least this many distinct students asked in it (privacy: k >= 3).
TOPICS_MIN_STUDENTS = env_int("TOPICS_MIN_STUDENTS", 3, minimum=1)
# Questions join one topic while their mean cosine similarity is at least this (average linkage).
TOPICS_SIMILARITY = env_float("TOPICS_SIMILARITY", 0.5, minimum=-1)
# The running week's topics are built again at most this often (each build may ask the chat model to
# name them, on the budget of the teacher who looks).
TOPICS_REFRESH_SECONDS = env_int("TOPICS_REFRESH_SECONDS", 3600, minimum=0)
