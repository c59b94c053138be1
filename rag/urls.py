"""Pages for searching a collection (mounted under /collections/)."""

urlpatterns: list = []
