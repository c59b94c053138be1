"""The ingestion step's names for the text normaliser, which lives in `rag/text.py` (below the
index and the languages, which use it too). Kept so the apps' imports of `rag.ingest.normalize`
hold; new code imports `rag.text`."""

from rag.text import canonical_number, compare_form, fold_characters, normalize_text, search_form

__all__ = ["canonical_number", "compare_form", "fold_characters", "normalize_text", "search_form"]
