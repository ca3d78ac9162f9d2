"""Building dataclasses from loosely typed mappings (YAML, JSON, ``--set`` overrides) with clear errors."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

__all__ = ["build_dataclass"]


def _coerce(value: Any, hint: Any, where: str) -> Any:
    if value is None or hint is Any:
        return value
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if type(None) in options and value is None:
        return None
    for kind in options:
        if kind is type(None):  # a value that is not None does not match it
            continue
        if (typing.get_origin(kind) or kind) is dict:
            if isinstance(value, dict):
                return value
            continue
        if kind is float and isinstance(value, (int, float, str)) and not isinstance(value, bool):
            try:
                return float(value)
            except ValueError:
                continue
        if kind is int and not isinstance(value, bool):
            if isinstance(value, int):
                return value
            if isinstance(value, float) and value.is_integer():
                return int(value)
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                return int(value)
        if kind is bool and isinstance(value, bool):
            return value
        if kind is str and isinstance(value, str):
            return value
        if kind not in (float, int, bool, str):
            return value  # containers and nested types are checked by their owners
    names = " or ".join("null" if k is type(None) else getattr(k, "__name__", str(k)) for k in options)
    raise ValueError(f"{where} = {value!r} has the wrong type: expected {names}")


def build_dataclass(cls: type, values: dict[str, Any] | None, owner: str) -> Any:
    """``cls(**values)`` after checking the field names and coercing scalars to the annotated types
    (``"1e-2"`` → 0.01 for a float field). Unknown names raise ``ValueError`` listing the valid ones."""
    values = dict(values or {})
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ValueError(f"{owner}: unknown field(s) {unknown}; valid: {sorted(names)}")
    return cls(**{k: _coerce(v, hints[k], f"{owner}.{k}") for k, v in values.items()})
