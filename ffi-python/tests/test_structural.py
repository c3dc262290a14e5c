"""Structural operations from Python: equality and hashing of object graphs (field options,
variables, cycles, the path of the first difference), deep copies that keep sharing, the
field-wise repr, and JSON graphs (tensors, shared nodes, errors)."""

import copy
import json
import pickle

import numpy as np
import pytest

import rffi
from rffi import dataclasses as dc
from rffi.access_path import AccessKind, AccessPath
from rffi.serialization import from_json_graph_str, to_json_graph_str


@dc.py_class("test_structural.Var", structural_eq="var")
class Var:
    name: str = dc.field(structural_eq="ignore")


@dc.py_class("test_structural.Func")
class Func:
    params: list = dc.field(structural_eq="def")
    body: list
    comment: str = dc.field(structural_eq="ignore", default="")


@dc.py_class("test_structural.Node")
class Node:
    name: str
    value: int = 0
    next: object = None


@dc.py_class("test_structural.Binding", structural_eq="dag")
class Binding:
    value: int


@dc.py_class("test_structural.Ref")
class Ref:
    target: object = dc.field(structural_eq="identity")


def roundtrip(v):
    return from_json_graph_str(to_json_graph_str(v))


# ---- equality and hashing ----


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1, True),
        (1, True, False),
        (1, 1.0, False),
        ("abc", "abc", True),
        ("1234567", "12345678", False),
        (b"xy", b"xy", True),
        ([1, [2, "x"]], [1, [2, "x"]], True),
        ([1, 2], [1, 2, 3], False),
        ({"a": 1, "b": [2]}, {"b": [2], "a": 1}, True),
        ({"a": 1}, {"a": 2}, False),
        (None, None, True),
        (rffi.Shape((2, 3)), rffi.Shape((2, 3)), True),
        (rffi.dtype("float32"), rffi.dtype("float16"), False),
    ],
)
def test_equal_and_hash_of_values(a, b, equal):
    assert rffi.structural_equal(a, b) is equal
    assert rffi.structural_equal(b, a) is equal
    assert (rffi.structural_hash(a) == rffi.structural_hash(b)) is equal
    assert 0 <= rffi.structural_hash(a) < 2**64


def test_map_and_dict_are_different_types():
    m, d = rffi.Map({"a": 1}), rffi.Dict({"a": 1})
    assert not rffi.structural_equal(m, d)
    assert rffi.structural_equal(d, rffi.Dict({"a": 1}))


def test_objects_by_fields_and_the_first_mismatch():
    a = Node("root", 1, [Node("x", 2), Node("y", 3)])
    b = Node("root", 1, [Node("x", 2), Node("y", 3)])
    c = Node("root", 1, [Node("x", 2), Node("z", 3)])
    assert rffi.structural_equal(a, b)
    assert rffi.structural_hash(a) == rffi.structural_hash(b)
    assert not rffi.structural_equal(a, c)
    assert rffi.get_first_structural_mismatch(a, b) is None
    lhs, rhs = rffi.get_first_structural_mismatch(a, c)
    assert isinstance(lhs, AccessPath)
    assert str(lhs) == "root.next[1].name" and str(rhs) == "root.next[1].name"
    steps = lhs.to_steps()
    assert [AccessKind(s.kind) for s in steps] == [
        AccessKind.ATTR,
        AccessKind.ARRAY_ITEM,
        AccessKind.ATTR,
    ]
    assert lhs == AccessPath.root().attr("next").array_item(1).attr("name")
    assert AccessPath.root().attr("next").is_prefix_of(lhs)
    short, long = [1], [1, 2]
    lhs, rhs = rffi.get_first_structural_mismatch(short, long)
    assert (str(lhs), str(rhs)) == ("root[<missing 1>]", "root[1]")


def test_field_options_and_variables():
    x, y, a, b = Var("x"), Var("y"), Var("a"), Var("b")
    fa = Func([x], [1, x], comment="one")
    fb = Func([y], [1, y], comment="two")
    assert rffi.structural_equal(fa, fb)
    assert rffi.structural_hash(fa) == rffi.structural_hash(fb)
    assert not rffi.structural_equal(Func([x, y], [x, x]), Func([a, b], [a, b]))
    assert not rffi.structural_equal(Func([x, y], [x, y]), Func([a, b], [b, a]))
    assert rffi.structural_equal(Func([x, y], [x, y]), Func([a, b], [a, b]))
    # Free variables: equal to themselves, or to any other when mapping is allowed.
    assert rffi.structural_equal(x, x)
    assert not rffi.structural_equal(x, y)
    assert rffi.structural_hash(x) != rffi.structural_hash(y)
    assert rffi.structural_equal(x, y, map_free_vars=True)
    hx, hy = (rffi.structural_hash(v, map_free_vars=True) for v in (x, y))
    assert hx == hy
    # Identity fields: the same object, not an equal one.
    t1, t2 = Node("t"), Node("t")
    assert rffi.structural_equal(Ref(t1), Ref(t1))
    assert not rffi.structural_equal(Ref(t1), Ref(t2))
    # DAG types: sharing counts.
    s = Binding(1)
    assert rffi.structural_equal([s, s], [Binding(1)] * 2)
    assert not rffi.structural_equal([s, s], [Binding(1), Binding(1)])
    with pytest.raises(ValueError, match="structural_eq"):
        dc.field(structural_eq="bad")
    with pytest.raises(ValueError, match="structural_eq"):
        dc.py_class(structural_eq="bad")


def test_cycles():
    a, b = Node("n", 1), Node("n", 1)
    a.next, b.next = [a], [b]
    assert rffi.structural_equal(a, b)
    assert rffi.structural_hash(a) == rffi.structural_hash(b)
    c = Node("n", 2)
    c.next = [c]
    assert not rffi.structural_equal(a, c)
    lst = rffi.List([1])
    lst.append(lst)
    assert rffi.structural_equal(lst, lst)
    assert "..." in rffi.repr_print(lst)
    for n in (a, b, c):
        n.next = None
    lst.clear()


def test_tensors_compare_by_content_unless_skipped():
    t1 = rffi.from_dlpack(np.array([1.0, 2.0, 3.0], dtype="float32"))
    t2 = rffi.from_dlpack(np.array([1.0, 2.0, 3.0], dtype="float32"))
    t3 = rffi.from_dlpack(np.array([1.0, 2.0, 4.0], dtype="float32"))
    assert rffi.structural_equal(t1, t2)
    assert rffi.structural_hash(t1) == rffi.structural_hash(t2)
    assert not rffi.structural_equal(t1, t3)
    assert rffi.structural_equal(t1, t3, skip_tensor_content=True)


def test_deep_nesting_is_a_recursion_error():
    lists = [rffi.List() for _ in range(100_000)]
    for outer, inner in zip(lists, lists[1:]):
        outer.append(inner)
    with pytest.raises(RecursionError):
        rffi.structural_hash(lists[0])
    for lst in lists:
        lst.clear()


# ---- deep copy ----


def test_deepcopy_keeps_sharing_and_cycles():
    shared = Node("s", 1)
    root = Node("root", 0, [shared, shared])
    dup = copy.deepcopy(root)
    assert not dup.same_as(root)
    assert rffi.structural_equal(dup, root)
    assert dup.next[0].same_as(dup.next[1])
    assert not dup.next[0].same_as(shared)
    # Two wrappers of one object give one copy.
    pair = copy.deepcopy([root, root.next[0], shared])
    assert pair[1].same_as(pair[2])
    # Cycles.
    a = Node("a")
    a.next = [a]
    dup = rffi.deep_copy(a)
    assert dup.next[0].same_as(dup) and not dup.same_as(a)
    a.next = dup.next = None
    # Rust-declared types too.
    p = rffi.get_global_func("testing.make_point")(3, 4)
    q = copy.deepcopy(p)
    assert not q.same_as(p) and (q.x, q.y, q.label) == (3, 4, "made in Rust")


def test_pickle_of_registered_objects():
    root = Node("r", 5, [Node("leaf", 6), "text", 2.5])
    back = pickle.loads(pickle.dumps(root))
    assert rffi.structural_equal(back, root)
    assert back.next[0].name == "leaf"


# ---- repr ----


def test_repr_prints_fields_shares_once_and_marks_cycles():
    p = rffi.get_global_func("testing.make_point")(1, 2)
    assert repr(p) == 'testing.TestPoint(x=1, y=2, label="made in Rust")'
    assert rffi.repr_print([p, p]) == (
        '(#1=testing.TestPoint(x=1, y=2, label="made in Rust"), #1)'
    )
    a = Node("a")
    a.next = [a]
    assert rffi.repr_print(a) == 'test_structural.Node(name="a", value=0, next=(...,))'
    a.next = None
    long = Node("a long name " * 3, 7, [Node("another long name " * 2, 8)])
    text = rffi.repr_print(long, 40)
    assert text.splitlines()[0] == "test_structural.Node("
    assert '  name="a long name a long name a long name ",' in text
    assert rffi.repr_print({"k": [1, 2.5, None, True]}) == '{"k": (1, 2.5, None, True)}'


# ---- JSON graphs ----


def test_json_round_trips():
    t = rffi.from_dlpack(np.arange(6, dtype="int32").reshape(2, 3))
    values = [
        None,
        True,
        -(2**62),
        2.5,
        "text with \"quotes\" and 世界",
        b"\x00\xff",
        rffi.dtype("float32"),
        rffi.device("cuda", 1),
        rffi.Shape((1, 2)),
        [1, [2, "x"], {"k": None}],
        rffi.List([1, 2]),
        rffi.Dict({"a": [1]}),
        t,
        Node("n", 3, [Node("m", 4)]),
        Func([Var("x")], [1]),
    ]
    for v in values:
        back = roundtrip(v)
        assert rffi.structural_equal(back, v), (v, back)
    back = roundtrip(t)
    assert np.array_equal(np.from_dlpack(back), np.arange(6, dtype="int32").reshape(2, 3))


def test_json_format_keeps_shared_nodes_and_metadata():
    s = Node("s")
    text = to_json_graph_str([s, s, 42, 42], metadata={"version": "1.0"})
    doc = json.loads(text)
    assert doc["version"] == 1 and doc["metadata"] == {"version": "1.0"}
    root = doc["nodes"][doc["root_index"]]
    assert root["type"] == "ffi.Array"
    assert root["data"][0] == root["data"][1] and root["data"][2] == root["data"][3]
    back = from_json_graph_str(text)
    assert back[0].same_as(back[1])
    assert "metadata" not in json.loads(to_json_graph_str(1))
    # Cycles survive.
    a = Node("a")
    a.next = [a]
    back = roundtrip(a)
    assert back.next[0].same_as(back)
    a.next = back.next = None


def test_json_errors():
    f = rffi.get_global_func("testing.add_one")
    with pytest.raises(TypeError, match=r"ffi\.Function.*root\[1\]"):
        to_json_graph_str([1, f])
    with pytest.raises(TypeError, match="OpaquePyObject"):
        to_json_graph_str([object()])
    for bad in [
        "",
        "not json",
        "[1]",
        '{"nodes": []}',
        '{"root_index": 0}',
        '{"root_index": 2, "nodes": [{"type": "None"}]}',
        '{"root_index": 0, "nodes": [{"type": "int", "data": "x"}]}',
        '{"root_index": 0, "nodes": [{"type": "no.such.Type", "data": {}}]}',
        '{"root_index": 0, "nodes": [{"type": "ffi.Array", "data": [0]}]}',
        '{"version": 7, "root_index": 0, "nodes": [{"type": "None"}]}',
    ]:
        with pytest.raises(ValueError, match="from_json_graph_str"):
            from_json_graph_str(bad)
    with pytest.raises(TypeError):
        from_json_graph_str(b"{}")


def test_global_functions_under_tvm_ffi_names():
    from rffi._ffi_api import DeepCopy, RecursiveEq, RecursiveLt, ReprPrint

    assert ReprPrint(rffi.Array([1, "x"])) == '(1, "x")'
    assert RecursiveEq(-0.0, 0.0) and RecursiveLt([1, 2], [1, 3])
    with pytest.raises(TypeError):
        RecursiveLt(1, "x")
    n = Node("n", 1)
    assert rffi.structural_equal(DeepCopy(n), n)


# ---- The recursive comparisons' hooks (__ffi_eq__, __ffi_compare__, __ffi_hash__) ----


def test_hooks_of_runtime_types():
    from rffi._ffi_api import RecursiveEq, RecursiveHash, RecursiveLt

    t = rffi.testing
    a, b, c = t.TestCustomCompare(1, "a"), t.TestCustomCompare(1, "b"), t.TestCustomCompare(2, "a")
    assert RecursiveEq(a, b) and not RecursiveEq(a, c)
    assert RecursiveHash(a) == RecursiveHash(b)
    assert RecursiveLt(a, c) and not RecursiveLt(a, b)
    assert RecursiveEq(rffi.Array([a]), rffi.Array([b]))
    # A hash hook alone: hashed by key, still compared by both fields.
    h1, h2 = t.TestCustomHash(5, "x"), t.TestCustomHash(5, "y")
    assert RecursiveHash(h1) == RecursiveHash(h2) and not RecursiveEq(h1, h2)
    # An equality hook without a hash hook cannot be hashed.
    e = t.TestEqWithoutHash(1, "a")
    assert RecursiveEq(e, t.TestEqWithoutHash(1, "b"))
    for v in (e, rffi.Array([e])):
        with pytest.raises(ValueError, match="__ffi_eq__ or __ffi_compare__ but not __ffi_hash__"):
            RecursiveHash(v)
    # Fields left out of == (and hash), or of hash only.
    assert RecursiveEq(t.TestCompare(1, "n", 2), t.TestCompare(1, "n", 3))
    assert RecursiveHash(t.TestCompare(1, "n", 2)) == RecursiveHash(t.TestCompare(1, "n", 3))
    assert not RecursiveEq(t.TestHash(1, "n", 2), t.TestHash(1, "n", 3))
    assert RecursiveHash(t.TestHash(1, "n", 2)) == RecursiveHash(t.TestHash(1, "n", 3))


def test_hooks_of_py_classes():
    from rffi._ffi_api import RecursiveEq, RecursiveHash, RecursiveLt

    @dc.py_class("test_structural.py.Keyed", eq=True)
    class Keyed:
        key: int
        label: str

        def __ffi_eq__(self, other, fn_eq):
            return fn_eq(self.key, other.key)

        def __ffi_compare__(self, other, fn_cmp):
            return fn_cmp(self.key, other.key)

        def __ffi_hash__(self, fn_hash):
            return fn_hash(self.key)

    a, b, c = Keyed(1, "a"), Keyed(1, "b"), Keyed(2, "a")
    assert a == b and a != c and RecursiveEq(a, b)
    assert hash(a) == hash(b) == RecursiveHash(b)
    assert RecursiveLt(a, c) and not RecursiveLt(c, a)


def test_testing_cxx_classes():
    t = rffi.testing
    base = t._TestCxxClassBase(v_i64=1, v_i32=2)  # this __init__ adds 1 and 2
    assert (base.v_i64, base.v_i32) == (2, 4)
    d = t._TestCxxClassDerived(10, 20, 1.5)
    assert (d.v_i64, d.v_i32, d.v_f64, d.v_f32) == (10, 20, 1.5, 8.0)
    assert d == t._TestCxxClassDerived(10, 20, 1.5, 8.0) and hash(d) == hash(
        t._TestCxxClassDerived(10, 20, 1.5, 8.0)
    )
    assert d < t._TestCxxClassDerived(11, 0, 0.0)
    dd = t._TestCxxClassDerivedDerived(1, 2, 3.0, True)
    assert (dd.v_bool, dd.v_f32, dd.v_str) == (True, 8.0, "default")
    assert isinstance(dd, t._TestCxxClassDerived) and isinstance(dd, t._TestCxxClassBase)


def test_repr_hook_of_a_py_class():
    @dc.py_class("test_structural.py.Tagged")
    class Tagged:
        value: int

        def __ffi_repr__(self, fn_repr):
            return f"<Tagged {fn_repr([self.value])}>"

    assert rffi.repr_print(Tagged(3)) == "<Tagged (3,)>"
    assert rffi.repr_print(rffi.Array([Tagged(1), 2])) == "(<Tagged (1,)>, 2)"
    assert repr(Tagged(4)) == "<Tagged (4,)>"


def test_hooks_that_raise_return_the_wrong_type_or_recurse():
    from rffi._ffi_api import RecursiveEq, RecursiveHash, RecursiveLt

    @dc.py_class("test_structural.py.Raising", eq=True)
    class Raising:
        key: int

        def __ffi_eq__(self, other, fn_eq):
            raise ValueError("eq hook failed")

        def __ffi_compare__(self, other, fn_cmp):
            raise KeyError("compare hook failed")

        def __ffi_hash__(self, fn_hash):
            raise ZeroDivisionError("hash hook failed")

    a, b = Raising(1), Raising(1)
    # The hook's own exception, through == and inside containers alike.
    for eq in (lambda: a == b, lambda: RecursiveEq(rffi.Array([a]), rffi.Array([b]))):
        with pytest.raises(ValueError, match="eq hook failed"):
            eq()
    with pytest.raises(KeyError, match="compare hook failed"):
        RecursiveLt(a, b)
    for h in (lambda: hash(a), lambda: RecursiveHash(rffi.Array([a]))):
        with pytest.raises(ZeroDivisionError, match="hash hook failed"):
            h()

    @dc.py_class("test_structural.py.Wrong", eq=True)
    class Wrong:
        key: int

        def __ffi_eq__(self, other, fn_eq):
            return "yes"

        def __ffi_compare__(self, other, fn_cmp):
            return [1]

        def __ffi_hash__(self, fn_hash):
            return "h"

    a, b = Wrong(1), Wrong(1)
    key = "`test_structural.py.Wrong`"
    with pytest.raises(TypeError, match=f"the __ffi_eq__ hook of {key} must return a bool"):
        RecursiveEq(a, b)
    with pytest.raises(TypeError, match=f"the __ffi_compare__ hook of {key} must return an int"):
        RecursiveLt(a, b)
    with pytest.raises(TypeError, match=f"the __ffi_hash__ hook of {key} must return an int"):
        hash(a)

    @dc.py_class("test_structural.py.Endless", eq=True)
    class Endless:
        key: int

        def __ffi_eq__(self, other, fn_eq):
            return fn_eq(self, other)

        def __ffi_hash__(self, fn_hash):
            return fn_hash(self)

    a, b = Endless(1), Endless(1)
    for op in (lambda: a == b, lambda: hash(a)):
        with pytest.raises(RecursionError):
            op()
