"""Django's JSON serialization with times to the microsecond (`manage.py backup`): its own encoder
cuts them to milliseconds, and a restored chat must read exactly as before."""

from __future__ import annotations

import datetime

from django.core.serializers.json import Deserializer, DjangoJSONEncoder
from django.core.serializers.json import Serializer as DjangoSerializer

__all__ = ["Deserializer", "Serializer"]


class ExactTimes(DjangoJSONEncoder):
    def default(self, o):
        if isinstance(o, datetime.datetime | datetime.time):
            return o.isoformat()
        return super().default(o)


class Serializer(DjangoSerializer):
    def _init_options(self):
        super()._init_options()  # type: ignore[misc]  # django-stubs does not list it
        self.json_kwargs["cls"] = ExactTimes
