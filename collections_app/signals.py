"""What the collections app tells the apps above it, which it may not import (the layer table in
docs/ARCHITECTURE.md): receivers are connected by those apps (ChatConfig.ready).

    file_changed     (file_id, file_name)  a file's text may read otherwise now: read again, or a
                                           page corrected (what was cited from it may be stale)
    reindex_started  (collection)          a collection's index is being rebuilt from its files
    ingestion_ended  (collection_id)       a file of the collection was ingested (or failed); a
                                           receiver asks whether any file is still queued or busy

`reindex_started` and `ingestion_ended` go through `send`: a receiver's failure is logged and never
fails the re-index or the file.
"""

from __future__ import annotations

import logging

from django.dispatch import Signal

log = logging.getLogger(__name__)

file_changed = Signal()
reindex_started = Signal()
ingestion_ended = Signal()


def send(signal: Signal, **kwargs) -> None:
    """Send robustly: log each receiver's failure instead of raising it."""
    for receiver, outcome in signal.send_robust(sender=None, **kwargs):
        if isinstance(outcome, Exception):
            log.error("%s failed after %s", getattr(receiver, "__qualname__", receiver), kwargs, exc_info=outcome)
