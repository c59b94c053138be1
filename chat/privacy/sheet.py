"""The deployment's privacy sheet for the university's data protection officer and IT (issue 46,
item 14): what is stored and where, for how long, who reads what at each privacy level, which
servers receive students' words, how deletion and export work, and the sub-processors the
deployment names. Written from the settings each time it is read, never a template someone fills
in; server addresses go through `kernel.addresses.redact_url`, so no secret is shown.

Staff only (chat/privacy/views.py): it names the servers. The page (templates/privacy_sheet.html)
and its Markdown download (`markdown`) show the same `sheet()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from chat.models import STUDENT_SENTENCES, ChatVisibility
from chat.privacy.notice import LEVEL_TITLES
from kernel.addresses import redact_url


@dataclass(frozen=True)
class Section:
    title: str
    lines: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()  # a table: the first row is its heading
    slug: str = ""


@dataclass(frozen=True)
class Sheet:
    title: str
    intro: str
    sections: tuple[Section, ...] = field(default_factory=tuple)


def _unset(name: str) -> str:
    return _("Not set: the administrator sets %(setting)s.") % {"setting": name}


def _days(days: int, kept: str) -> str:
    if not days:
        return kept
    return ngettext("%(days)s day", "%(days)s days", days) % {"days": days}


def _database() -> str:
    config = settings.DATABASES["default"]
    engine = config["ENGINE"].rsplit(".", 1)[-1]
    where = config.get("HOST") or str(config.get("NAME", ""))
    return f"{engine} ({where})" if where else engine


def _who() -> Section:
    return Section(
        _("Who runs the service"),
        (
            _("Operator: %(value)s") % {"value": settings.PRIVACY_OPERATOR or _unset("PRIVACY_OPERATOR")},
            _("Contact for data protection: %(value)s")
            % {"value": settings.PRIVACY_CONTACT or _unset("PRIVACY_CONTACT")},
            _("Where the data is kept: %(value)s")
            % {"value": settings.PRIVACY_DATA_LOCATION or _unset("PRIVACY_DATA_LOCATION")},
        ),
        slug="operator",
    )


def _stored() -> Section:
    index = settings.REDIS_INDEX_URL or settings.REDIS_URL
    return Section(
        _("What is stored, and where"),
        rows=(
            (_("What"), _("Where")),
            (
                _("Accounts: username, name, email address, role, interface language"),
                _("Database: %(where)s") % {"where": _database()},
            ),
            (
                _(
                    "Chats: students' questions, the answers, the searches run and what they found, ratings "
                    "and comments"
                ),
                _("Database: %(where)s") % {"where": _database()},
            ),
            (
                _("Sign-in sessions, API tokens (only their hashes) and invitations"),
                _("Database: %(where)s") % {"where": _database()},
            ),
            (
                _("Weekly use per student, and daily counts without names (statistics)"),
                _("Database: %(where)s") % {"where": _database()},
            ),
            (
                _("Teachers' course material: the files and the text read from them"),
                _("Files: %(where)s") % {"where": settings.MEDIA_ROOT},
            ),
            (
                _("The search index of the course material (its text and vectors); no student text"),
                _("Redis: %(where)s") % {"where": redact_url(index)},
            ),
            (
                _("The task queue, live updates of pages and short-lived caches"),
                _("Redis: %(where)s") % {"where": redact_url(settings.REDIS_URL)},
            ),
        ),
        slug="stored",
    )


def _how_long() -> Section:
    kept = _("kept until deleted")
    return Section(
        _("For how long"),
        (
            _("Chats: %(days)s after their last message (CHAT_RETENTION_DAYS); a prompt may set fewer days.")
            % {"days": _days(settings.CHAT_RETENTION_DAYS, kept)},
            _("Statistics and material gaps keep their counts, without chat text, after the chats are deleted."),
            _("Attached files: their text is kept with the question; the file itself is not kept."),
            _("API tokens expire after %(days)s unless made for longer (API_TOKEN_DEFAULT_DAYS).")
            % {"days": _days(settings.API_TOKEN_DEFAULT_DAYS, _("no set time"))},
            _("Invitations expire after %(days)s (TEACHER_INVITATION_DAYS).")
            % {"days": _days(settings.TEACHER_INVITATION_DAYS, kept)},
            _("Accounts and course material: until an administrator or their teacher deletes them."),
        ),
        slug="retention",
    )


def _readers() -> Section:
    rows = [(_("Privacy level"), _("What the prompt's teachers see"), _("What students are told"))]
    for level in ChatVisibility:
        rows.append((str(LEVEL_TITLES[level.value]), str(level.label), str(STUDENT_SENTENCES[level.value])))
    return Section(
        _("Who can read what"),
        (
            _(
                "Each prompt has one of three levels, chosen by its teachers; students are told it when they "
                "join and above every chat, and confirm a raise before their next chat."
            ),
            _("A student always reads their own chats. Students never read each other's."),
            _("The service's administrators can reach everything stored: the database, the files and backups."),
        ),
        rows=tuple(rows),
        slug="readers",
    )


def _servers() -> Section:
    rows = [(_("Server"), _("What it receives"))]
    rows.append(
        (
            redact_url(settings.OLLAMA_HOST),
            _("Ollama models: students' questions, the chat so far and the passages found, to write answers"),
        )
    )
    if settings.OPENAI_BASE_URL:
        rows.append(
            (
                redact_url(settings.OPENAI_BASE_URL),
                _("OpenAI-compatible models: the same, for the prompts that use them"),
            )
        )
    if getattr(settings, "MODERATION_MODEL", "") and getattr(settings, "MODERATION_BASE_URL", ""):
        rows.append(
            (redact_url(settings.MODERATION_BASE_URL), _("The safety check: each question before it is answered"))
        )
    return Section(
        _("Which servers receive students' words"),
        (
            _(
                "Search words are turned into vectors by the collection's embedding model: on this service's own "
                "computer for local models, otherwise on the model server above."
            ),
        ),
        rows=tuple(rows),
        slug="servers",
    )


def _deletion() -> Section:
    return Section(
        _("Deletion and export"),
        (
            _("A student deletes any of their chats on its page; it is then gone for their teachers too."),
            _(
                "A student downloads any of their chats as Markdown on its page, or through the API "
                "(GET /api/v1/chats/{id}/export)."
            ),
            _("Chats older than the retention time are deleted, whatever their level."),
            _("Deleting an account in the admin site deletes its chats, ratings and weekly use."),
        ),
        slug="deletion",
    )


def _subprocessors() -> Section:
    named = tuple(settings.PRIVACY_SUBPROCESSORS) or (_unset("PRIVACY_SUBPROCESSORS"),)
    return Section(_("Sub-processors"), named, slug="subprocessors")


def sheet() -> Sheet:
    return Sheet(
        title=_("Privacy sheet of this CurreChat service"),
        intro=_(
            "For the data protection officer and IT: written from this service's settings as they are now. "
            "Each prompt's own privacy notice tells its students the same in their words."
        ),
        sections=(_who(), _stored(), _how_long(), _readers(), _servers(), _deletion(), _subprocessors()),
    )


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(data: Sheet) -> str:
    """The sheet as Markdown, for a download: headings, lists and tables as on the page."""
    out = [f"# {data.title}", "", data.intro, ""]
    for section in data.sections:
        out += [f"## {section.title}", ""]
        out += [f"- {line}" for line in section.lines]
        if section.lines:
            out.append("")
        if section.rows:
            head, *body = section.rows
            out.append("| " + " | ".join(_cell(c) for c in head) + " |")
            out.append("|" + "---|" * len(head))
            out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in body]
            out.append("")
    return "\n".join(out)
