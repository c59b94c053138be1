"""CurreChat settings for trust in the answers: what a run of checks may cost, tutor mode's protected
material and the safety check (moderation) before the model. Every value comes from an environment
variable (README)."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from currechat.settings.base import OPENAI_API_KEY, OPENAI_BASE_URL
from kernel.env import env_bool, env_float, env_int, env_str

# A curated run of a collection's test questions reserves budget before each question and stops after
# this many (collections_app/checks.py), so one click costs at most this many curated searches.
CHECKS_MAX_CURATED_PER_RUN = env_int("CHECKS_MAX_CURATED_PER_RUN", 50, minimum=1)
# A run of a prompt's answer checks asks at most this many questions (chat/checks), each reserved
# from the paying teacher's weekly budget when it calls a model.
ANSWER_CHECKS_MAX_PER_RUN = env_int("ANSWER_CHECKS_MAX_PER_RUN", 30, minimum=1)

# Protected material is read by the model at every answer of a guided prompt: its size is bounded.
TUTOR_PROTECTED_MAX_TOKENS = env_int("TUTOR_PROTECTED_MAX_TOKENS", 8000, minimum=100)

# The safety check on students' messages (seed 000), through the model providers (rag/providers/moderation.py):
# "" (off), "moderation:<model>" (an OpenAI-compatible /v1/moderations endpoint, e.g.
# moderation:omni-moderation-latest), or "guard:<chat model>" (a guard classifier such as
# guard:llama-guard3:1b on Ollama, or guard:openai:<model> on the OpenAI-compatible server).
MODERATION_MODEL = env_str("MODERATION_MODEL", "").strip()
MODERATION_BASE_URL = env_str("MODERATION_BASE_URL", "").strip() or OPENAI_BASE_URL
if MODERATION_BASE_URL and not MODERATION_BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        f"MODERATION_BASE_URL must start with http:// or https:// (got {MODERATION_BASE_URL!r})."
    )
MODERATION_API_KEY = env_str("MODERATION_API_KEY", "") or OPENAI_API_KEY
MODERATION_TIMEOUT = env_float("MODERATION_TIMEOUT", 10.0, minimum=0.1)
# Check the assistant's finished answers too (a flagged answer is taken back and replaced).
MODERATION_OUTPUT = env_bool("MODERATION_OUTPUT", False)
# When the safety check cannot be reached: "allow" lets the message through to the model (counted
# for the teachers' statistics), "refuse" answers that the assistant cannot answer right now.
MODERATION_WHEN_DOWN = env_str("MODERATION_WHEN_DOWN", "allow").strip().lower()
if MODERATION_WHEN_DOWN not in ("allow", "refuse"):
    raise ImproperlyConfigured(f"MODERATION_WHEN_DOWN must be allow or refuse (got {MODERATION_WHEN_DOWN!r}).")
# What a student reads instead of an answer when their message is flagged (empty: CurreChat's own
# sentence, in the student's language), and the university's help contacts, added when the message
# touches on self-harm (e.g. "Student health services: 0800 123 456, https://example.edu/help").
MODERATION_MESSAGE = env_str("MODERATION_MESSAGE", "").strip()
MODERATION_HELP_CONTACTS = env_str("MODERATION_HELP_CONTACTS", "").strip()
