"""Source Material Collections and their files. Django is the source of truth; Redis is derived."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop, ngettext

from accounts.invitations import Invitation
from kernel.formats import number
from rag.languages import LANGUAGE_CHOICES

# The languages' names in the reader's language: Django's own catalogue translates "Finnish",
# "Swedish" and the others; ours adds the one it lacks.
_NOT_IN_DJANGO = gettext_noop("Norwegian")
LANGUAGE_CHOICES_SHOWN = [(code, _(label)) for code, label in LANGUAGE_CHOICES]


class CollectionQuerySet(models.QuerySet):
    def editable_by(self, user) -> CollectionQuerySet:
        """Collections an active teacher owns or co-owns (all of them for an active superuser). A
        teacher demoted to student or deactivated loses them at once."""
        if not (user.is_authenticated and user.may_co_teach):
            return self.none()
        if user.is_superuser:
            return self.all()
        if not user.is_teacher:  # a co-teacher by invitation: what they were invited to, nothing of their own
            return self.filter(pk__in=Collection.objects.filter(co_owners=user).values("pk"))
        return self.filter(pk__in=Collection.objects.filter(Q(owner=user) | Q(co_owners=user)).values("pk"))


def _default_embedding_model() -> str:
    return settings.EMBEDDING_MODEL


class Collection(models.Model):
    """A Source Material Collection: files in one language, indexed with one embedding model."""

    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    language = models.CharField(_("language"), max_length=32, choices=LANGUAGE_CHOICES_SHOWN, default="english")
    embedding_model = models.CharField(
        _("embedding model"),
        max_length=200,
        default=_default_embedding_model,
        help_text=_("Changing it requires re-indexing (manage.py reindex --collection ID)."),
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("owner"), on_delete=models.PROTECT, related_name="collections"
    )
    co_owners = models.ManyToManyField(
        settings.AUTH_USER_MODEL, verbose_name=_("co-owners"), blank=True, related_name="co_owned_collections"
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    updated = models.DateTimeField(_("updated"), auto_now=True)

    objects = CollectionQuerySet.as_manager()

    class Meta:
        verbose_name = _("collection")
        verbose_name_plural = _("collections")
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def is_editable_by(self, user) -> bool:
        return Collection.objects.editable_by(user).filter(pk=self.pk).exists()


class CollectionInvitation(Invitation):
    """A link inviting someone without an account to co-own one collection (accounts/invitations.py)."""

    collection = models.ForeignKey(
        Collection, verbose_name=_("collection"), on_delete=models.CASCADE, related_name="invitations"
    )

    class Meta(Invitation.Meta):
        verbose_name = _("invitation to co-own")
        verbose_name_plural = _("invitations to co-own")

    @property
    def target(self) -> Collection:
        return self.collection


class FileStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    PROCESSING = "processing", _("Processing")
    READY = "ready", _("Ready")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


class FileType(models.TextChoices):
    TEXT = "text", _("Text")
    MARKDOWN = "markdown", _("Markdown")
    HTML = "html", _("HTML")
    PDF = "pdf", _("PDF")
    PPTX = "pptx", _("PowerPoint")
    DOCX = "docx", _("Word")
    TRANSCRIPT = "transcript", _("Transcript")
    IMAGE = "image", _("Image")


class PdfMode(models.TextChoices):
    AUTO = "auto", _("Automatic (VLM when reachable)")
    VLM = "vlm", _("Vision-language model")
    FAST = "fast", _("Fast text extraction")


def _upload_to(instance: SourceFile, filename: str) -> str:
    # The sha256 names the stored file, so a name chosen by the uploader never reaches the disk.
    return f"collections/{instance.collection_id}/{instance.sha256}"


class SourceFile(models.Model):
    collection = models.ForeignKey(
        Collection, verbose_name=_("collection"), on_delete=models.CASCADE, related_name="files"
    )
    original_name = models.CharField(_("original name"), max_length=255)
    file = models.FileField(_("file"), upload_to=_upload_to, max_length=500)
    file_type = models.CharField(_("file type"), max_length=16, choices=FileType.choices)
    size = models.PositiveBigIntegerField(_("size"))
    sha256 = models.CharField(_("SHA-256"), max_length=64)
    status = models.CharField(_("status"), max_length=16, choices=FileStatus.choices, default=FileStatus.QUEUED)
    progress = models.PositiveSmallIntegerField(_("progress"), default=0)
    error = models.TextField(_("error"), blank=True)
    notes = models.TextField(_("notes"), blank=True, help_text=_("Warnings that did not stop ingestion."))
    pdf_mode = models.CharField(_("PDF mode"), max_length=8, choices=PdfMode.choices, default=PdfMode.AUTO)
    pages = models.PositiveIntegerField(_("pages"), null=True, blank=True)
    chunk_count = models.PositiveIntegerField(_("passages"), default=0)
    markdown = models.TextField(
        _("extracted text"), blank=True, help_text=_("The extracted text, as the model will see it.")
    )
    # How the text was extracted ("pdf-vlm:qwen3-vl:8b", "pdf-fast", "html", "text"): a file with the
    # same content and extractor can reuse this Markdown instead of extracting again.
    extractor = models.CharField(_("extractor"), max_length=200, blank=True)
    # Page numbers that gave no text, or the same text as many other pages (rag.ingest.steps.page_quality).
    empty_pages = models.JSONField(_("empty pages"), default=list, blank=True)
    repeated_pages = models.JSONField(_("repeated pages"), default=list, blank=True)
    # Pages the vision model probably got wrong, [{"page": n, "why": ...}] (rag.ingest.review).
    flagged_pages = models.JSONField(_("flagged pages"), default=list, blank=True)
    # Bumped on every (re)queue: a worker whose attempt is stale stops instead of racing a newer one.
    attempt = models.PositiveIntegerField(_("attempt"), default=0)
    # When a worker last claimed the file: the fair queue serves next the collection served longest ago.
    started = models.DateTimeField(_("started"), null=True, blank=True)
    # What the queued attempt was asked for, kept on the file because the fair queue may run it from
    # another file's job: extract afresh or only re-chunk, and the language of the teacher who queued it.
    re_extract = models.BooleanField(_("extract again"), default=True)
    queued_language = models.CharField(_("language when queued"), max_length=16, blank=True)
    progress_detail = models.CharField(
        _("progress detail"), max_length=200, blank=True, help_text=_("What ingestion is doing now.")
    )
    # While a step counts (pages read, passages embedded): how many of how many. The bar is drawn
    # from these two numbers, the same ones the detail text states, so the two always agree.
    progress_done = models.PositiveIntegerField(_("done in this step"), null=True, blank=True)
    progress_total = models.PositiveIntegerField(_("total in this step"), null=True, blank=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("uploaded by"), null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    updated = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("file")
        verbose_name_plural = _("files")
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "sha256"], name="unique_file_content_per_collection")
        ]

    def __str__(self) -> str:
        return self.original_name

    # Its place in the ingestion queue with an estimate (`fair_queue.Waiting`), None unless queued.
    # Filled in by whoever shows the file, not read here (the queue is read above the model): a list
    # of files from one reading of the queue (`fair_queue.mark_waiting`), one file by `waiting_of`.
    waiting: Any = None

    @property
    def unreadable_pages(self) -> list[int]:
        """Pages that gave the assistant nothing to search: empty, or repeating other pages' text."""
        return sorted({*self.empty_pages, *self.repeated_pages})

    @property
    def quality_warning(self) -> str:
        """A sentence for the teacher when a ready file has pages without readable text, else ""."""
        bad = self.unreadable_pages
        if self.status != FileStatus.READY or not bad:
            return ""
        total = self.pages or len(bad)
        return ngettext(
            "%(bad)s of %(total)s page had no readable text", "%(bad)s of %(total)s pages had no readable text", total
        ) % {"bad": number(len(bad)), "total": number(total)}


class PageCorrection(models.Model):
    """A teacher's correction of one page's extracted Markdown. The latest for a page is in force:
    every ingestion of the file puts it in place of what extraction gives (rag.ingest.steps.Correct).
    The rows are the record of who changed what."""

    source = models.ForeignKey(SourceFile, verbose_name=_("file"), on_delete=models.CASCADE, related_name="corrections")
    page = models.PositiveIntegerField(_("page"), help_text=_("The page (slide) number; 0 for a file without pages."))
    markdown = models.TextField(_("corrected text"))
    previous = models.TextField(_("previous text"), blank=True, help_text=_("The page's text before this correction."))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("page correction")
        verbose_name_plural = _("page corrections")
        ordering = ["source", "page", "-created", "-id"]

    def __str__(self) -> str:
        return f"{self.source} p. {self.page}"


def corrections_in_force(source: SourceFile) -> dict[int, str]:
    """The latest correction of each corrected page of `source`."""
    latest: dict[int, str] = {}
    for page, markdown in source.corrections.order_by("page", "-created", "-id").values_list("page", "markdown"):
        latest.setdefault(page, markdown)
    return latest


class SearchCheck(models.Model):
    """A test question: a question students ask, and what a good search for it must find."""

    collection = models.ForeignKey(
        Collection, verbose_name=_("collection"), on_delete=models.CASCADE, related_name="checks"
    )
    question = models.CharField(_("question"), max_length=500)
    # None: no file holds the answer yet (a material gap made a test question); runs skip it.
    expect_file = models.ForeignKey(
        SourceFile, verbose_name=_("expected file"), on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    expect_page = models.PositiveIntegerField(_("expected page"), null=True, blank=True)
    expect_section = models.CharField(_("expected section"), max_length=300, blank=True)
    expect_phrase = models.CharField(_("expected phrase"), max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("created by"), null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("test question")
        verbose_name_plural = _("test questions")
        ordering = ["id"]

    def __str__(self) -> str:
        return self.question


class CheckTrigger(models.TextChoices):
    MANUAL = "manual", _("Run by hand")
    REINDEX = "reindex", _("After a re-index")
    LANGUAGE = "language", _("After a language change")
    EMBEDDING_MODEL = "embedding_model", _("After an embedding model change")


class CheckStop(models.TextChoices):
    """Why a curated run stopped before its last question (what ran is kept)."""

    BUDGET = "budget", _("The weekly token budget was used up")
    LIMIT = "limit", _("The most questions one curated run may check")


class CheckRun(models.Model):
    """One run of a collection's test questions. An automatic run stays `pending` from the re-index
    that asked for it until its results are stored: it waits for the last file, then a worker
    claims it (`started_at`) and runs it (collections_app/checks.run_when_indexed)."""

    collection = models.ForeignKey(
        Collection, verbose_name=_("collection"), on_delete=models.CASCADE, related_name="check_runs"
    )
    trigger = models.CharField(_("trigger"), max_length=16, choices=CheckTrigger.choices, default=CheckTrigger.MANUAL)
    pending = models.BooleanField(_("pending"), default=False)
    curated = models.BooleanField(_("curated"), default=False)
    passed = models.PositiveIntegerField(_("passed"), default=0)
    total = models.PositiveIntegerField(_("total"), default=0)  # the collection's questions when it ran
    ran = models.PositiveIntegerField(_("questions run"), default=0)  # fewer than `total` when it stopped
    stopped = models.CharField(_("stopped"), max_length=8, choices=CheckStop.choices, blank=True, default="")
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    ran_at = models.DateTimeField(_("ran at"), null=True, blank=True)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("started by"), null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("test run")
        verbose_name_plural = _("test runs")
        ordering = ["-id"]


class CheckResult(models.Model):
    run = models.ForeignKey(CheckRun, verbose_name=_("test run"), on_delete=models.CASCADE, related_name="results")
    check_item = models.ForeignKey(
        SearchCheck, verbose_name=_("test question"), on_delete=models.CASCADE, related_name="results"
    )
    rank = models.PositiveIntegerField(_("rank"), null=True, blank=True)  # 1-based; None when not in the top 15
    passed = models.BooleanField(_("passed"), default=False)
    changed = models.CharField(_("changed"), max_length=16, blank=True)  # "newly_failing", "newly_passing" or ""

    class Meta:
        verbose_name = _("test result")
        verbose_name_plural = _("test results")
        ordering = ["id"]
