"""The core library: ingestion, the search index, retrieval and the model providers.

It reads no Django settings: the apps hand it its configuration (`rag.config`, filled by
`currechat/ragconfig.py`), and `tests/test_structure.py` keeps it so. It uses Django for two
things only, both checked by that test:
- `django.utils.translation`: its messages reach users (upload failures, model errors) in their
  language from the project's catalogs, like every other message of the site;
- `django.apps` in `rag/apps.py`: the project lists it in INSTALLED_APPS (with a translated name).
"""
