"""Pictures (PNG, JPEG, WebP) uploaded as course material: checked, and made into the PNG the
vision model reads and the teacher's review shows."""

from __future__ import annotations

import io
import warnings

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from PIL import Image, UnidentifiedImageError

from rag import config
from rag.ingest.job import IngestFailed, TooLarge

IMAGE_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff")
NEEDS_VISION = gettext_lazy(
    "“%(name)s” is a picture: reading it needs the vision model, which is not available now. "
    "Ask your administrator to connect it, or upload the material as a document or PDF with selectable text."
)
MAX_SIDE = 2000  # the side a page image is capped to for the model (as PDF pages are)


def is_image(head: bytes) -> bool:
    return head.startswith(IMAGE_SIGNATURES) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def image_png(data: bytes, name: str) -> bytes:
    """The picture as an RGB PNG no larger than MAX_SIDE; refuses damaged files and pictures whose
    pixel count would exhaust the worker's memory (checked before decoding them)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            picture: Image.Image = Image.open(io.BytesIO(data))
            if picture.format not in ("PNG", "JPEG", "WEBP"):
                raise UnidentifiedImageError(picture.format)
            if picture.width * picture.height > config.ingestion().max_image_pixels:
                raise TooLarge(
                    _("“%(name)s” is %(w)s × %(h)s pixels, more than the server accepts. Upload a smaller copy.")
                    % {"name": name, "w": picture.width, "h": picture.height}
                )
            picture.draft("RGB", (MAX_SIDE, MAX_SIDE))  # JPEG decodes at a reduced size directly
            picture = picture.convert("RGB")
    except (
        UnidentifiedImageError,
        OSError,
        ValueError,
        Image.DecompressionBombError,
        Image.DecompressionBombWarning,
    ) as exc:
        raise IngestFailed(
            _("“%(name)s” cannot be read as a picture (it may be damaged). Save it as PNG or JPEG and upload that.")
            % {"name": name}
        ) from exc
    picture.thumbnail((MAX_SIDE, MAX_SIDE))
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()
