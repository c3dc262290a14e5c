"""Traversals from Python: structural_walk / structural_visit (callbacks on every value) and
structural_map / structural_mutate (rebuilding with what callbacks return), and StructuralKey."""

from __future__ import annotations

import typing

import pytest

import rffi
from rffi import dataclasses as dc


@dc.py_class("test_traverse_py.Var", structural_eq="var")
class Var(dc.Object):
    name: str = dc.field(structural_eq="ignore")
    value: int = 0


@dc.py_class("test_traverse_py.Func")
class Func(dc.Object):
    params: rffi.Array = dc.field(structural_eq="def")
    body: rffi.Array
    note: str = dc.field(structural_eq="ignore", default="")


@dc.py_class("test_traverse_py.Let")
class Let(dc.Object):
    var: Var = dc.field(structural_eq="def-simple")
    uses: rffi.Array


def _trace(order):
    trace = []
    root = rffi.Array([rffi.Array([1, "s"]), 2.5])
    rffi.structural_walk(
        root,
        [
            (rffi.Array, lambda v: trace.append(f"array{len(v)}")),
            ((int, float), lambda v: trace.append(f"num{v}")),
            (str, lambda v: trace.append(f"str:{v}")),
        ],
        order=order,
    )
    return trace


def test_walk_orders():
    assert _trace(rffi.WalkOrder.PREORDER) == ["array2", "array2", "num1", "str:s", "num2.5"]
    assert _trace("pre") == _trace(rffi.WalkOrder.PREORDER)
    assert _trace("post") == ["num1", "str:s", "array2", "num2.5", "array2"]
    with pytest.raises(ValueError, match="order"):
        rffi.structural_walk([], lambda v: None, order="sideways")


def test_walk_catch_all_forms_and_first_match():
    seen = []
    rffi.structural_walk(rffi.Array([1]), lambda v: seen.append(type(v).__name__), order="pre")
    assert seen == ["Array", "int"]
    seen.clear()
    rffi.structural_walk(
        rffi.Array([1, None]),
        [(int, lambda v: seen.append("int")), (typing.Any, lambda v: seen.append("any"))],
        order="pre",
    )
    assert seen == ["any", "int", "any"]
    seen.clear()
    rffi.structural_walk(
        rffi.Array([rffi.Map({"k": 1})]),
        (rffi.Object, lambda v: seen.append(type(v).__name__)),
        order="pre",
    )
    assert seen == ["Array", "Map"]


def test_walk_skips_map_keys_and_ignored_fields():
    strings = []
    x = Var("x-name", 3)
    root = rffi.Array([rffi.Map({"key": "value"}), Func(rffi.Array([x]), rffi.Array([x]), "n")])
    rffi.structural_walk(root, (str, strings.append))
    assert strings == ["value"]  # not the key, the note nor the variable's name


def test_walk_skip_and_interrupt():
    seen = []

    def on_array(v):
        seen.append(len(v))
        return rffi.WalkResult.SKIP

    assert (
        rffi.structural_walk(rffi.Array([rffi.Array([1])]), (rffi.Array, on_array), order="pre")
        is None
    )
    assert seen == [1]

    hit = rffi.structural_walk(
        rffi.Array([1, 2, 3]),
        (int, lambda v: rffi.VisitInterrupt({"at": v}) if v == 2 else None),
    )
    assert isinstance(hit, rffi.VisitInterrupt)
    assert rffi.structural_equal(hit.value, {"at": 2})
    assert rffi.VisitInterrupt().value is None


def test_walk_definition_regions():
    x, y = Var("x"), Var("y")
    kinds = []
    rffi.structural_walk(
        Func(rffi.Array([x]), rffi.Array([x, y])),
        with_def_region_kind=(Var, lambda v, k: kinds.append((v.name, k))),
        order="pre",
    )
    assert kinds == [
        ("x", rffi.DefRegionKind.DEF_PATTERN),
        ("x", rffi.DefRegionKind.NONE),
        ("y", rffi.DefRegionKind.NONE),
    ]
    assert all(type(k) is rffi.DefRegionKind for _, k in kinds)
    kinds.clear()
    # A simple definition: the variable is defined, its own fields are uses.
    rffi.structural_walk(
        Let(x, rffi.Array([])),
        with_def_region_kind=[
            (Var, lambda v, k: kinds.append(k)),
            (int, lambda v, k: kinds.append(k)),
        ],
    )
    assert kinds == [rffi.DefRegionKind.NONE, rffi.DefRegionKind.DEF_SIMPLE]


def test_walk_errors():
    with pytest.raises(ZeroDivisionError):
        rffi.structural_walk(rffi.Array([1]), (int, lambda v: 1 // 0))
    with pytest.raises(TypeError, match="structural_walk callback"):
        rffi.structural_walk(rffi.Array([1]), (int, lambda v: "what"))
    with pytest.raises(TypeError, match="callback type"):
        rffi.structural_walk(rffi.Array([1]), (list, lambda v: None))
    with pytest.raises(TypeError, match="callbacks"):
        rffi.structural_walk(rffi.Array([1]), 42)


def test_visit_owns_descent_and_visitor_is_scoped():
    seen = []
    kept = []

    def on_array(v, visitor):
        kept.append(visitor)
        assert visitor.def_region_kind() == rffi.DefRegionKind.NONE
        seen.append("array")
        return visitor.visit(v[1])  # only the second item

    result = rffi.structural_visit(
        rffi.Array([1, rffi.Array([2, 3])]),
        [(rffi.Array, on_array), (int, lambda v, visitor: seen.append(v))],
    )
    assert result is None
    assert seen == ["array", "array", 3]
    with pytest.raises(ValueError, match="has returned"):
        kept[0].visit(1)


def test_map_copy_on_write_and_move():
    child = rffi.Array([1])
    root = rffi.Array([child, rffi.Map({"k": rffi.Array([2])})])
    mapped = rffi.structural_map(root, (int, lambda v: v * 10))
    assert list(root[0]) == [1] and list(child) == [1]
    assert list(mapped[0]) == [10] and list(mapped[1]["k"]) == [20]
    assert not mapped.same_as(root)

    same = rffi.structural_map(root, (int, lambda v: v))
    assert same.same_as(root)

    moved = rffi.Array([rffi.Array([1]), 2])
    handle = moved.__chandle__()
    out = rffi.structural_map(moved._move(), (int, lambda v: v + 1))
    assert out.__chandle__() == handle  # changed in place
    assert out[1] == 3 and list(out[0]) == [2]
    with pytest.raises(ValueError, match="released"):
        moved._move()


def test_map_pre_order_and_strings():
    trace = []

    def on_array(v):
        trace.append(len(v))
        return rffi.Array([*v, "new"]) if len(v) == 1 else v

    out = rffi.structural_map(
        rffi.Array(["ab"]), [(rffi.Array, on_array), (str, str.upper)], order="pre"
    )
    assert list(out) == ["AB", "NEW"]
    assert trace == [1]


def test_map_gives_a_variable_one_replacement():
    x = Var("x", 1)
    out = rffi.structural_map(Let(x, rffi.Array([x, x])), (int, lambda v: v + 1))
    assert out.var.value == 2 and not out.var.same_as(x)
    assert out.uses[0].same_as(out.var) and out.uses[1].same_as(out.var)
    assert x.value == 1


def test_mutate_callbacks_own_the_result():
    modes = []

    def on_array(v, mutator, mode):
        modes.append(mode)
        return rffi.Array([mutator.mutate(v[0]), "tail"])

    out = rffi.structural_mutate(
        rffi.Array([1, 2]), [(rffi.Array, on_array), (int, lambda v, m: v + 100)]
    )
    assert list(out) == [101, "tail"]
    assert modes == [rffi.InplaceMode.DISALLOW]
    out = rffi.structural_mutate(
        rffi.Array([5])._move(), [(rffi.Array, on_array), (int, lambda v, m: v)]
    )
    assert modes[-1] == rffi.InplaceMode.ALLOW
    deflt = rffi.structural_mutate(
        rffi.Array([1, 2]),
        [(rffi.Array, lambda v, m: m.default_mutate(v)), (int, lambda v, m: -v)],
    )
    assert list(deflt) == [-1, -2]
    with pytest.raises(TypeError, match="inplace_mode"):
        rffi.structural_mutate(1, (int, lambda v: v))


def test_mutator_var_remap():
    x, y = Var("x", 1), Var("y", 2)

    def on_func(v, mutator):
        mutator.var_remap_set(x, y)
        assert mutator.var_remap_get(x).same_as(y)
        return mutator.default_mutate(v)

    out = rffi.structural_mutate(Func(rffi.Array([]), rffi.Array([x])), (Func, on_func))
    assert out.body[0].same_as(y)
    with pytest.raises(TypeError, match="variable or DAG node"):
        rffi.structural_mutate(rffi.Array([]), (rffi.Array, lambda v, m: m.var_remap_get(v)))


def test_structural_key():
    a = rffi.StructuralKey({"x": [1, 2]})
    b = rffi.StructuralKey({"x": [1, 2]})
    c = rffi.StructuralKey({"x": [1, 3]})
    assert a == b and a != c and hash(a) == hash(b)
    assert a.__hash__() == rffi.structural_hash(a.key)
    assert {a: 1, c: 2}[b] == 1
    m = rffi.Map({a: 1, b: 2, c: 3})
    assert len(m) == 2 and m[a] == 2
    assert rffi.Dict({a: 1, b: 2})[b] == 2
