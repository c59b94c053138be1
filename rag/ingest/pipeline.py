"""The ingestion loop: runs the steps of `steps.py` over one job and owns everything around them.

The loop (not the steps) times and logs each step, retries steps that failed in a way that may
pass, throttles progress reports, notices cancellation and turns every way a run can end into one
`Outcome`. What a report, a cancel check or an outcome means for the file's record is the
tracker's business (`job.IngestTracker`; collections_app implements it over the database), so
this package knows no app.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import redis
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernel.errors import ProviderError
from kernel.outages import GaveUp, wait_for_redis
from rag import config
from rag.ingest.job import IngestCancelled, IngestFailed, IngestJob, IngestTracker, Outcome
from rag.ingest.steps import STEPS, Step

log = logging.getLogger(__name__)

INTERNAL_ERROR = gettext_lazy(
    "Ingestion stopped because of an unexpected error. Press Retry; if it fails again, tell your "
    "administrator (the server log has the details)."
)
# Updates to the database and the browser are throttled; status changes are always sent.
PROGRESS_INTERVAL = 0.25
CANCEL_CHECK_INTERVAL = 0.5


class RunContext:
    """Progress and cancellation for one run, shared by the steps through the loop (`steps.Context`)."""

    def __init__(self, job: IngestJob, tracker: IngestTracker):
        self.job = job
        self.tracker = tracker
        self.step: Step | None = None
        self._reported_step: Step | None = None
        self._last_progress = 0.0
        self._last_check = 0.0
        self._cancelled = False

    def progress(self, fraction: float, detail: str, *, force: bool = False, of: tuple[int, int] | None = None) -> None:
        """Report `fraction` of the current step done; the tracker sees it as 0-100 overall, and
        `of` (done, total) when `detail` states a count, for the bar to show that same count."""
        now = time.monotonic()
        # Throttled, except that each step's first report always goes out (so every stage shows).
        if not force and self.step is self._reported_step and now - self._last_progress < PROGRESS_INTERVAL:
            return
        self._last_progress, self._reported_step = now, self.step
        low, high = self.step.share if self.step else (0, 0)
        percent = int(low + (high - low) * min(max(fraction, 0.0), 1.0))
        if not self.tracker.progress(percent, detail[:200], self.job.page_count, of):
            self._cancelled = True

    def cancelled(self) -> bool:
        now = time.monotonic()
        if not self._cancelled and now - self._last_check >= CANCEL_CHECK_INTERVAL:
            self._last_check = now
            self._cancelled = self.tracker.is_cancelled()
        return self._cancelled


@dataclass(frozen=True)
class IngestReport:
    status: Outcome
    seconds: dict[str, float] = field(default_factory=dict)  # per step, as the loop measured them
    chunks: int = 0
    cached_vectors: int = 0


def run(job: IngestJob, tracker: IngestTracker, steps: Sequence[Step] = STEPS) -> IngestReport:
    """Run `steps` over `job` in order and end the run through `tracker`. Never raises."""
    ctx = RunContext(job, tracker)
    ctx.progress(0.0, _("Starting"), force=True)
    seconds: dict[str, float] = {}
    try:
        for step in steps:
            if ctx.cancelled():
                raise IngestCancelled
            ctx.step = step
            started = time.monotonic()
            _run_step(step, job, ctx)
            seconds[step.name] = time.monotonic() - started
        status = _finish(job, tracker)
    except IngestCancelled:
        status = _cancelled(job, tracker)
    except Exception as exc:  # noqa: BLE001 — every failure ends the run with a sentence for the teacher
        status = _cancelled(job, tracker) if tracker.is_cancelled() else _fail(job, tracker, exc)
    return IngestReport(status, seconds, len(job.chunks), job.cached_vectors)


def _run_step(step: Step, job: IngestJob, ctx: RunContext) -> None:
    """Run one step, retrying it when a service failed in a way that may pass: a model server up
    to INGEST_STEP_RETRIES times, Redis after each outage up to INGEST_REDIS_OUTAGE_SECONDS."""
    attempts = config.ingestion().step_retries + 1
    attempt = 1
    redis_deadline: float | None = None  # set at the step's first Redis failure
    while True:
        started = time.monotonic()
        try:
            step.run(job, ctx)
            log.info("file %s: %s done in %.2fs", job.file_id, step.name, time.monotonic() - started)
            return
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            # Not counted as an attempt: Redis restarting (a deploy, a failover) takes seconds to
            # a minute, and what the step did before is kept (embedding cache, page checkpoints).
            # Bounded per step, so a call that fails while Redis answers pings cannot loop forever.
            if redis_deadline is None:
                redis_deadline = time.monotonic() + config.ingestion().redis_outage_seconds
            log.warning("file %s: %s lost Redis (%s); waiting for it", job.file_id, step.name, exc)
            _ride_out_redis(ctx, exc, redis_deadline)
        except ProviderError as exc:
            if not exc.retryable or attempt == attempts:
                raise
            log.warning("file %s: %s failed (%s); attempt %s of %s", job.file_id, step.name, exc, attempt, attempts)
            ctx.progress(0.0, _("Waiting to retry: %(error)s") % {"error": exc}, force=True)
            time.sleep(config.ingestion().retry_delay * attempt)
            attempt += 1
            if ctx.cancelled():
                raise IngestCancelled from exc


REDIS_POLL_SECONDS = (0.5, 5.0)  # first and longest pause between pings while Redis is away


def _ride_out_redis(ctx: RunContext, exc: Exception, deadline: float) -> None:
    """Return once Redis answers again; re-raise `exc` when it is still away at `deadline` (the
    file then fails with its sentence and a Retry). Cancel is checked meanwhile (it lives in the
    database), and the file keeps beating (its Heartbeat)."""
    from kernel.redis_client import get_index_redis  # the index's own Redis, when REDIS_INDEX_URL names one

    ctx.progress(0.0, _("Waiting for the search index (Redis) to come back"), force=True)
    first, longest = REDIS_POLL_SECONDS
    try:
        wait_for_redis(get_index_redis(), first=first, longest=longest, give_up=ctx.cancelled, deadline=deadline)
    except GaveUp:
        if ctx.cancelled():
            raise IngestCancelled from exc
        raise exc from None


def _finish(job: IngestJob, tracker: IngestTracker) -> Outcome:
    if not tracker.finish(job):  # cancelled or deleted while the chunks were being written
        return _cancelled(job, tracker)
    log.info("file %s ready: %s chunks (%s cached)", job.file_id, len(job.chunks), job.cached_vectors)
    return Outcome.READY


def failure_message(exc: Exception) -> str:
    """The sentence a teacher sees for a run that ended with `exc` (the log keeps the detail), in
    the active language (the worker runs the job in the teacher's: collections_app.lifecycle)."""
    if isinstance(exc, IngestFailed):
        return str(exc)
    if isinstance(exc, ProviderError):
        return _("%(error)s Press Retry when the model server is back.") % {"error": exc}
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        return _("The search index (Redis) could not be reached. Press Retry once it is back.")
    return str(INTERNAL_ERROR)


def _fail(job: IngestJob, tracker: IngestTracker, exc: Exception) -> Outcome:
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        log.warning("file %s: Redis unavailable", job.file_id, exc_info=True)
    elif not isinstance(exc, IngestFailed | ProviderError):
        log.exception("file %s: ingestion failed", job.file_id)
    message = failure_message(exc)
    log.info("file %s failed: %s", job.file_id, message)
    tracker.fail(message)
    return Outcome.FAILED


def _cancelled(job: IngestJob, tracker: IngestTracker) -> Outcome:
    tracker.cancelled(job)
    log.info("file %s attempt %s cancelled", job.file_id, job.attempt)
    return Outcome.CANCELLED
