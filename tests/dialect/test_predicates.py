"""The JSON predicate language: the evaluation table, missing values, and never throwing."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from tether.dialect.spec import Predicate
from tether.dialect.values import MISSING, evaluate, read, render, resolve_mapping

PREDICATE: TypeAdapter[Any] = TypeAdapter(Predicate)
ROOT = {"state": {"n": 3, "s": "b", "flag": True, "empty": "", "none": None, "items": ["a", "b"],
                  "nested": {"x": 1}, "list": [{"id": 7}]},
        "input": {"who": "ann"}, "context": {"tenant": "acme"}}


def p(op: str, **rest: Any) -> Any:
    return PREDICATE.validate_python({"op": op, **rest})


def path(value: str) -> dict[str, str]:
    return {"path": value}


def lit(value: Any) -> dict[str, Any]:
    return {"literal": value}


TABLE: list[tuple[str, dict[str, Any], bool]] = [
    ("eq", {"left": path("state.n"), "right": lit(3)}, True),
    ("eq", {"left": path("state.n"), "right": lit(4)}, False),
    ("ne", {"left": path("state.n"), "right": lit(4)}, True),
    ("eq", {"left": path("state.gone"), "right": lit(None)}, False),         # missing vs missing
    ("eq", {"left": path("state.gone"), "right": path("state.also_gone")}, False),
    ("ne", {"left": path("state.gone"), "right": lit(1)}, False),            # a missing side: false
    ("eq", {"left": path("state.none"), "right": lit(None)}, False),         # None counts as missing
    ("lt", {"left": path("state.n"), "right": lit(5)}, True),
    ("lte", {"left": path("state.n"), "right": lit(3)}, True),
    ("gt", {"left": path("state.s"), "right": lit("a")}, True),              # string ordering
    ("gte", {"left": path("state.s"), "right": lit("c")}, False),
    ("lt", {"left": path("state.n"), "right": lit("5")}, False),             # number vs string: false
    ("lt", {"left": path("state.flag"), "right": lit(2)}, False),            # a bool is not a number
    ("gt", {"left": path("state.gone"), "right": lit(0)}, False),
    ("eq", {"left": path("${state.nested.x}"), "right": lit(1)}, True),      # ${...} accepted
    ("eq", {"left": path("state.list.0.id"), "right": lit(7)}, True),
    ("eq", {"left": path("requestContext.tenant"), "right": lit("acme")}, True),
    ("eq", {"left": path("input.who"), "right": lit("ann")}, True),
    ("eq", {"left": path("results.x"), "right": lit(None)}, False),          # unknown root: missing
    ("in", {"value": path("state.s"), "set": lit(["a", "b"])}, True),
    ("in", {"value": path("state.gone"), "set": lit(["a"])}, False),
    ("notIn", {"value": path("state.gone"), "set": lit(["a"])}, True),       # notIn with missing: true
    ("notIn", {"value": path("state.s"), "set": lit(["a", "b"])}, False),
    ("in", {"value": path("state.s"), "set": path("state.gone")}, False),
    ("in", {"value": lit("a"), "set": path("state.items")}, True),
    ("exists", {"path": "state.n"}, True),
    ("exists", {"path": "state.none"}, False),
    ("notExists", {"path": "state.gone"}, True),
    ("truthy", {"value": path("state.flag")}, True),
    ("truthy", {"value": path("state.empty")}, False),
    ("truthy", {"value": path("state.gone")}, False),                        # truthy of missing: false
    ("falsy", {"value": path("state.gone")}, True),
    ("falsy", {"value": path("state.n")}, False),
]


@pytest.mark.parametrize(("op", "operands", "expected"), TABLE, ids=[f"{i}-{t[0]}" for i, t in enumerate(TABLE)])
def test_the_evaluation_table(op: str, operands: dict[str, Any], expected: bool) -> None:
    assert evaluate(p(op, **operands), ROOT) is expected


def test_and_or_not_compose() -> None:
    yes = {"op": "exists", "path": "state.n"}
    no = {"op": "exists", "path": "state.gone"}
    assert evaluate(p("and", args=[yes, yes]), ROOT) is True
    assert evaluate(p("and", args=[yes, no]), ROOT) is False
    assert evaluate(p("or", args=[no, yes]), ROOT) is True
    assert evaluate(p("not", arg=no), ROOT) is True


def test_a_condition_is_called_by_name_and_a_raising_one_does_not_hold() -> None:
    def vip(root: Any, arg: Any) -> bool:
        return bool(root["state"]["n"] > arg)

    def broken(root: Any, arg: Any) -> bool:
        raise RuntimeError("boom")

    conditions = {"vip": vip, "broken": broken}
    assert evaluate(p("condition", name="vip", arg=2), ROOT, conditions) is True
    assert evaluate(p("condition", name="vip", arg=5), ROOT, conditions) is False
    assert evaluate(p("condition", name="broken"), ROOT, conditions) is False
    assert evaluate(p("condition", name="unknown"), ROOT, conditions) is False


def test_evaluation_never_throws_on_odd_roots() -> None:
    odd = {"state": ["not", "a", "mapping"], "input": 42}
    for predicate in (p("eq", left=path("state.a"), right=lit(1)), p("exists", path="input.x.y"),
                      p("in", value=path("state.0"), set=lit([1])), p("lt", left=lit({}), right=lit([]))):
        assert evaluate(predicate, odd) in (True, False)


def test_read_and_render() -> None:
    assert read(ROOT, "state.nested") == {"x": 1}
    assert read(ROOT, "state.nested.x.y") is MISSING
    assert render("${state.s}-${state.nested}-[${state.gone}]", ROOT) == 'b-x: 1-[]'  # objects read as text
    mapped = resolve_mapping(
        {k: v for k, v in {"a": _src(value=1), "b": _src(path="state.n"), "c": _src(template="n=${state.n}"),
                           "d": _src(path="state.gone")}.items()}, ROOT)
    assert mapped == {"a": 1, "b": 3, "c": "n=3", "d": None}


def _src(**kw: Any) -> Any:
    from tether.dialect.spec import MappingSource

    return TypeAdapter(MappingSource).validate_python(kw)
