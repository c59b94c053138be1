"""REST endpoints for searching collections."""

from ninja import Router

router = Router(tags=["search"])
