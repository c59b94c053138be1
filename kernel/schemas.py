"""API schemas derived from the dataclasses they serialise, so a record and its JSON cannot drift."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from ninja import Field, Schema
from pydantic import create_model


def schema_from_dataclass(name: str, record: type, **types: Any) -> type[Schema]:
    """A ninja schema with the dataclass's fields, types, defaults and `description` metadata;
    `types` narrows a field's type for the API (e.g. a `str` status to its `Literal` values)."""
    hints = typing.get_type_hints(record)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        default = ... if f.default is dataclasses.MISSING else f.default
        fields[f.name] = (types.get(f.name, hints[f.name]), Field(default, description=f.metadata.get("description")))
    return create_model(name, __base__=Schema, **fields)
