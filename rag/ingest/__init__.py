"""Ingestion: turn an uploaded file into indexed chunks (see `pipeline.py` for the steps)."""
