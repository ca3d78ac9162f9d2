"""Building dataclasses from loosely typed mappings (YAML, JSON, ``--set`` overrides) with clear errors.

Every number is checked here, so every config section and every algorithm ``Hyper`` gets the check without
code of its own: a float must be finite (``nan``, ``inf`` and ``-inf`` are refused, as is an
integer too large for a float), an int must fit in 64 bits (torch's seeds and counters are int64). An
option, a field annotated ``Literal[...]`` (or ``Literal[...] | None``), must hold one of its listed values:
checked as a config is read (``build_dataclass``), when a dataclass is built directly (``check_literals``,
which ``Hyper.__post_init__`` calls), and for a function's option argument (``check_option``). Ranges are
the owners' (``ExperimentConfig.validate``, each ``Hyper.check``).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any

__all__ = ["build_dataclass", "check_literals", "check_option"]


def _options(hint: Any) -> tuple[Any, ...]:
    """The members of a union hint (``int | None`` → ``(int, NoneType)``), or the hint alone."""
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _choices(options: tuple[Any, ...]) -> tuple[Any, ...]:
    """The values of the ``Literal`` members among a field's ``options`` (empty if it has none)."""
    literals = (kind for kind in options if typing.get_origin(kind) is typing.Literal)
    return tuple(v for kind in literals for v in typing.get_args(kind))


def _check_option(value: Any, options: tuple[Any, ...], where: str) -> None:
    """Raise ``ValueError`` unless ``value`` is one of the ``Literal`` values among ``options``, or None when
    they include None. Types must match too: ``True`` is not the option ``1``."""
    choices = _choices(options)
    optional = type(None) in options
    if any(type(value) is type(c) and value == c for c in choices) or (optional and value is None):
        return
    allowed = f"null or one of {choices}" if optional else f"one of {choices}"
    raise ValueError(f"{where} must be {allowed}, got {value!r}")


def _coerce(value: Any, hint: Any, where: str) -> Any:
    options = _options(hint)
    if _choices(options):
        _check_option(value, options, where)
        return value
    if value is None or hint is Any:
        return value
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


def check_literals(obj: Any) -> None:
    """Raise ``ValueError`` naming the first field of the dataclass ``obj`` annotated ``Literal[...]`` (or
    ``Literal[...] | None``) whose value is not one of its options."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        options = _options(hints[f.name])
        if _choices(options):
            _check_option(getattr(obj, f.name), options, f"{type(obj).__name__}.{f.name}")


def check_option(value: Any, kind: Any, where: str) -> None:
    """Raise ``ValueError`` ("``where`` must be one of (...), got ...") unless ``value`` is one of the values
    of ``kind``, a ``Literal[...]`` type (or ``Literal[...] | None``): a function's option argument checked
    as an option field is."""
    options = _options(kind)
    if not _choices(options):
        raise TypeError(f"check_option needs a Literal type for {where}, got {kind!r}")
    _check_option(value, options, where)
