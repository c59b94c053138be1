"""The privacy notice page of a prompt (its teachers and enrolled students), and a student's
acknowledgement of a raised level from it or from the chat page. A visitor with a join code reads
the same notice through the code (currechat/joining.py)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from access.rules import enrollment_of, get_enrollment_for_acknowledge, get_prompt_for_privacy, require_staff
from chat.course import privacy_levels as levels
from chat.models import STUDENT_SENTENCES
from chat.privacy import sheet
from chat.privacy.notice import LEVEL_TITLES, notice
from kernel.errors import CurreChatError
from kernel.framing import embeddable


@embeddable  # linked from every chat, which a learning platform may frame
@login_required
def prompt_privacy(request, pk: int):
    """A prompt's privacy notice, for its teachers and enrolled students; a student also sees what
    they confirmed, and a raise of the level they have not acknowledged yet, with its button."""
    prompt = get_prompt_for_privacy(request.user, pk)
    own = enrollment_of(request.user, prompt)
    context = {
        "prompt": prompt,
        "notice": notice(prompt),
        "enrollment": own,
        "change": levels.pending_change(own, prompt),
        "confirmed_title": LEVEL_TITLES.get(own.privacy_confirmed_level, "") if own else "",
        "teaching": prompt.is_taught_by(request.user),
    }
    return render(request, "prompts/privacy.html", context)


@embeddable
@login_required
@require_POST
def privacy_acknowledge(request, pk: int):
    """A student acknowledges the prompt's privacy level as the page showed it (`level`), and goes
    back to the page they came from (the chat, or the notice)."""
    own = get_enrollment_for_acknowledge(request.user, pk)
    try:
        levels.acknowledge(own, request.POST.get("level", ""))
    except CurreChatError as exc:
        messages.error(request, str(exc))
    else:
        sentence = STUDENT_SENTENCES[own.privacy_confirmed_level]
        messages.success(
            request, _("Thank you. Your next chat starts under this: %(sentence)s") % {"sentence": sentence}
        )
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = reverse("chat_home", args=[pk])
    return redirect(back)


def privacy_sheet(request):
    """The deployment's privacy sheet, for the data protection officer and IT: staff only, as it
    names the servers (chat/privacy/sheet.py)."""
    require_staff(request.user)
    return render(request, "privacy_sheet.html", {"sheet": sheet.sheet()})


def privacy_sheet_markdown(request):
    """The same sheet as a Markdown file to download."""
    require_staff(request.user)
    response = HttpResponse(sheet.markdown(sheet.sheet()), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="currechat-privacy-sheet.md"'
    return response
