"""``dataclass_io``: options (``Literal`` fields) on hand-written cases, as a config is read
(``build_dataclass``), when a dataclass is built directly (``check_literals``) and for a function's argument
(``check_option``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest

from fairfl_core.dataclass_io import build_dataclass, check_literals, check_option


@dataclass
class Options:
    mode: Literal["fast", "exact"] = "fast"
    ring: Literal["selected", "active"] | None = None
    level: Literal[1, 2] = 1
    name: str = "free"


def test_a_listed_option_is_kept_as_given():
    built = build_dataclass(Options, {"mode": "exact", "ring": "active", "level": 2}, "section")
    assert (built.mode, built.ring, built.level) == ("exact", "active", 2)


def test_null_is_an_option_only_of_an_optional_field():
    assert build_dataclass(Options, {"ring": None}, "section").ring is None
    with pytest.raises(ValueError, match=r"^section\.mode must be one of \('fast', 'exact'\), got None$"):
        build_dataclass(Options, {"mode": None}, "section")


@pytest.mark.parametrize(
    "values,message",
    [
        ({"mode": "quick"}, "config section 'x'.mode must be one of ('fast', 'exact'), got 'quick'"),
        ({"mode": "Fast"}, "config section 'x'.mode must be one of ('fast', 'exact'), got 'Fast'"),
        ({"ring": "all"}, "config section 'x'.ring must be null or one of ('selected', 'active'), got 'all'"),
        ({"level": 3}, "config section 'x'.level must be one of (1, 2), got 3"),
        ({"level": "1"}, "config section 'x'.level must be one of (1, 2), got '1'"),  # no coercion
        ({"level": True}, "config section 'x'.level must be one of (1, 2), got True"),  # though True == 1
        ({"level": 1.0}, "config section 'x'.level must be one of (1, 2), got 1.0"),
    ],
)
def test_a_value_not_listed_is_one_line_naming_the_owner_the_field_the_value_and_the_options(values, message):
    with pytest.raises(ValueError) as refused:
        build_dataclass(Options, values, "config section 'x'")
    assert str(refused.value) == message


def test_a_plain_str_field_takes_any_string():
    assert build_dataclass(Options, {"name": "anything"}, "section").name == "anything"


def test_check_literals_names_the_class_on_direct_construction():
    check_literals(Options(mode="exact", ring="selected", level=2))
    ring = r"^Options\.ring must be null or one of \('selected', 'active'\), got 'x'$"
    with pytest.raises(ValueError, match=ring):
        check_literals(Options(ring="x"))
    with pytest.raises(ValueError, match=r"^Options\.level must be one of \(1, 2\), got False$"):
        check_literals(Options(level=False))


def test_check_option_checks_a_function_argument_as_a_field_is_checked():
    mode = Literal["fast", "exact"]
    check_option("exact", mode, "mode")
    check_option(None, Literal["a"] | None, "ring")
    with pytest.raises(ValueError, match=r"^mode must be one of \('fast', 'exact'\), got 'Exact'$"):
        check_option("Exact", mode, "mode")
    with pytest.raises(TypeError, match="check_option needs a Literal type for mode, got <class 'str'>"):
        check_option("exact", str, "mode")
