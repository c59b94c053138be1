"""Ingestion: turn an uploaded file into indexed chunks (`steps.py` holds the steps, `pipeline.py`
the loop that runs them and reports to an `job.IngestTracker`; this package knows no app)."""
