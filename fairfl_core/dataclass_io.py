"""Building dataclasses from loosely typed mappings (YAML, JSON, ``--set`` overrides) with clear errors.

Every number is checked here, so every config section and every algorithm ``Hyper`` gets the check without
code of its own: a float must be finite (``nan``, ``inf`` and ``-inf`` are refused, as is an
integer too large for a float), an int must fit in 64 bits (torch's seeds and counters are int64). Ranges
are the owners' (``ExperimentConfig.validate``, each ``Hyper.check``).
"""

from __future__ import annotations

import dataclasses
import math
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
                number = float(value)
            except ValueError:
                continue
            except OverflowError:  # an int beyond the float range
                raise ValueError(f"{where} = {value} is too large for a float: give a finite value") from None
            if not math.isfinite(number):
                raise ValueError(f"{where} = {number} is not finite: give a finite number (not nan or ±inf)")
            return number
        if kind is int and not isinstance(value, bool):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            if isinstance(value, int):
                if not -(2**63) <= value < 2**63:
                    raise ValueError(f"{where} = {value!r} is too large: an integer must fit in 64 bits")
                return value
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
