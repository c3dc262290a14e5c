"""The one conversion table (``rffi/_convert.py``): every kind it has, sample values of each, and
the check that both call paths accept exactly the same values with the same results. On the
native path, the kinds with a native code are converted without the Python setters, and the
others through them (the table is what the native code reads)."""

import collections
import ctypes
import enum
import fractions
import sys

import numpy as np
import pytest

import rffi
from rffi import _convert, _function


class Color(enum.IntEnum):
    RED = 3


class MyInt(int):
    pass


class MyFloat(float):
    pass


class MyStr(str):
    pass


class MyBytes(bytes):
    pass


class HasValue:
    """Stands for another value through ``__rffi_value__``."""

    def __init__(self, value):
        self.value = value

    def __rffi_value__(self):
        return self.value


def offering(method):
    """A class whose instances offer ``method`` (protocols are looked up on the type)."""
    return type(method.strip("_"), (), {method: lambda self: self.value, "__init__": _init})


def _init(self, value):
    self.value = value


class SelfValue:
    def __rffi_value__(self):
        return self


class Frozen(collections.abc.Mapping):
    def __init__(self, d):
        self._d = d

    def __getitem__(self, k):
        return self._d[k]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)


class Thing:
    pass


class Adder:
    def __call__(self, x):
        return x + 1


THING = Thing()

# Every kind of the table, with values of it (a kind without samples fails the first test).
SAMPLES = {
    "none": [None],
    "bool": [True, False],
    "int": [0, -5, 2**63 - 1, -(2**63), Color.RED, MyInt(9)],
    "float": [1.5, -0.0, MyFloat(2.5), np.float64(0.25)],
    "str": ["", "short", "a longer string value", "nul\x00inside a long string", MyStr("sub")],
    "bytes": [b"", b"abc", b"b" * 40, MyBytes(b"subclass bytes value")],
    "buffer": [bytearray(b"ab"), memoryview(b"abcdefghij")],
    "object": [rffi.Array([1, 2]), rffi.Map({"a": 1})],
    "shape": [rffi.Shape((2, 3))],
    "device": [rffi.device("cuda", 1)],
    "dtype": [rffi.dtype("float16")],
    "truth": [np.bool_(True)],
    "index": [np.int32(7), np.uint8(200)],
    "real": [np.float32(1.5), fractions.Fraction(1, 4)],
    "dlpack": [np.arange(4, dtype=np.int16)],
    "value": [HasValue(5), HasValue("via __rffi_value__"), HasValue([1, 2]), HasValue(HasValue(1))],
    "object_protocol": [
        offering("__rffi_object__")(rffi.Array([1, 2])),
        offering("__tvm_ffi_object__")(rffi.Map({"k": 1})),
    ],
    "cuda_stream": [offering("__cuda_stream__")((0, 0x1000))],
    "int_protocol": [offering("__rffi_int__")(7), offering("__tvm_ffi_int__")(np.int64(-3))],
    "float_protocol": [offering("__rffi_float__")(0.5), offering("__tvm_ffi_float__")(2)],
    "opaque_ptr_protocol": [
        offering("__rffi_opaque_ptr__")(0x10),
        offering("__tvm_ffi_opaque_ptr__")(ctypes.c_void_p(0x20)),
    ],
    "dtype_like": [np.dtype("int8"), offering("__dlpack_data_type__")((2, 16, 1))],
    "device_like": [offering("__dlpack_device__")((2, 3))],
    "sequence": [[1, 2], (3, "a"), []],
    "mapping": [{"a": 1, 2: "b"}, Frozen({"k": 1.5})],
    "pointer": [ctypes.c_void_p(0x1234)],
    "exception": [ValueError("bad")],
    "callable": [lambda x: x * 2, Adder(), abs],
    "opaque": [THING],
}

# Values both paths refuse, with the exception type.
REFUSED = [
    (2**63, OverflowError),
    (-(2**70), OverflowError),
    (np.uint64(2**64 - 1), OverflowError),
    ("\ud800 lone surrogate", UnicodeEncodeError),
    (SelfValue(), TypeError),
    (offering("__rffi_object__")(5), TypeError),
    (offering("__cuda_stream__")(5), TypeError),
    (offering("__rffi_opaque_ptr__")(-1), ValueError),
    (offering("__rffi_int__")(1.5), TypeError),
    (offering("__dlpack_data_type__")((2, 33, 1)), ValueError),
    (offering("__dlpack_device__")((99, 0)), ValueError),
]


# Kinds whose values are used once (a moved reference is gone after the call): tested below.
ONE_SHOT = {"rvalue"}


def test_every_kind_has_samples():
    assert set(SAMPLES) | ONE_SHOT == set(_convert.KINDS)


def test_moved_objects_on_both_paths(testing):
    for echo in (testing.echo, _ctypes_path(testing.echo)):
        a = rffi.Array([1, 2])
        handle = a.__chandle__()
        moved = a._move()
        assert _convert.kind_of(type(moved)).name == "rvalue"
        out = echo(moved)
        assert out.__chandle__() == handle and list(out) == [1, 2]
        assert a.__chandle__() == 0  # the callee took the reference
        with pytest.raises(ValueError, match="moved or released"):
            echo(moved)



def test_a_moved_object_belongs_to_the_callee(testing):
    use_count = testing.object_use_count
    outer = rffi.Array([1, 2])
    seen = []

    def callback(x, expected):
        # The callee holds the only reference; the caller's wrapper is empty meanwhile.
        seen.append((use_count(x), outer.__chandle__()))
        return x._move()

    f = rffi.Function(callback)
    for call in (f, _ctypes_path(f)):
        outer = rffi.Array([1, 2])
        handle = outer.__chandle__()
        out = call(outer._move(), 1)
        assert seen.pop() == (1, 0)
        assert out.__chandle__() == handle and use_count(out) == 1
        assert outer.__chandle__() == 0 and outer.__ctypes_handle__().value is None


def test_a_failed_call_gives_a_moved_object_back(testing):
    for echo in (testing.echo, _ctypes_path(testing.echo)):
        a = rffi.Array([1, 2])
        handle = a.__chandle__()
        moved = a._move()
        with pytest.raises(OverflowError, match="argument #1"):
            echo(moved, 2**70)
        with pytest.raises(ValueError, match="moved or released"):
            echo(moved, moved)
        assert a.__chandle__() == handle and testing.object_use_count(a) == 1
        assert a.__ctypes_handle__().value == handle

@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_samples_resolve_to_their_kind(kind):
    for v in SAMPLES[kind]:
        assert _convert.kind_of(type(v)).name == kind, v


def _ctypes_path(f):
    """The same runtime function, called through the ctypes path."""
    cls = _function._CtypesFunction
    g = cls.__new__(cls)
    rffi._lib.ObjectIncRef(f._handle)
    g._h, g._ti, g._frames, g._name = f._handle, f._tidx, [], f._name
    return g


def _plain(v):
    """A result as comparable data (wrappers compare by identity)."""
    if isinstance(v, rffi.Tensor):
        return ("Tensor", v.shape, str(v.dtype), np.from_dlpack(v).tobytes())
    if isinstance(v, rffi.Function):
        return ("Function", v(20))
    if isinstance(v, rffi.Map):
        return ("Map", [(_plain(k), _plain(x)) for k, x in v.items()])
    if isinstance(v, rffi.Array):
        return ("Array", [_plain(x) for x in v])
    if isinstance(v, ctypes.c_void_p):
        return ("ptr", v.value)
    if isinstance(v, BaseException):
        return (type(v), str(v))
    if isinstance(v, float) and v == 0:
        return ("float", str(v))
    return v


def _expected(kind, v):
    if kind == "object":
        return v  # the same object comes back
    if kind == "opaque":
        return v
    return None


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_both_paths_accept_the_same_values(kind, testing):
    native, plain = testing.echo, _ctypes_path(testing.echo)
    for v in SAMPLES[kind]:
        a, b = native(v), plain(v)
        if _expected(kind, v) is not None:
            assert a is v or a == v
            assert b is v or b == v
        else:
            assert _plain(a) == _plain(b), v
            assert type(a) is type(b), v


def test_results_of_each_kind(testing):
    echo = testing.echo
    assert echo(Color.RED) == 3 and type(echo(Color.RED)) is int
    assert echo(MyStr("sub")) == "sub" and echo(np.float64(0.25)) == 0.25
    assert list(echo(HasValue([1, 2]))) == [1, 2] and echo(HasValue(HasValue(1))) == 1
    assert echo(offering("__cuda_stream__")((0, 0x1000))).value == 0x1000
    assert echo(offering("__tvm_ffi_int__")(np.int64(-3))) == -3
    assert echo(offering("__tvm_ffi_opaque_ptr__")(ctypes.c_void_p(0x20))).value == 0x20
    assert echo(np.dtype("int8")) == rffi.dtype("int8")
    assert echo(offering("__dlpack_device__")((2, 3))) == rffi.device("cuda:3")
    assert echo(np.bool_(True)) is True and echo(np.int32(7)) == 7
    assert echo(fractions.Fraction(1, 4)) == 0.25
    assert echo(rffi.Shape((2, 3))) == (2, 3)
    assert echo(THING) is THING
    assert echo(abs)(-3) == 3


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_convert_gives_what_a_call_gives(kind, testing):
    for v in SAMPLES[kind]:
        converted, echoed = rffi.convert(v), testing.echo(v)
        assert _plain(converted) == _plain(echoed), v
        if isinstance(echoed, str) and not isinstance(echoed, rffi.dtype):
            assert type(converted) is rffi.String  # text comes back as the runtime's String
        elif isinstance(echoed, bytes):
            assert type(converted) is rffi.Bytes
        else:
            assert type(converted) is type(echoed), v


def test_protocols_are_honoured_wherever_values_are_taken(testing):
    # Call arguments (above), and container items, map keys and values, callback results, and
    # rffi.convert: all through the one table.
    t = rffi.from_dlpack(np.arange(3, dtype=np.int32))
    wraps = offering("__tvm_ffi_object__")(t)
    stands = offering("__rffi_value__")([1, offering("__rffi_int__")(2)])
    arr = rffi.Array([wraps, stands, np.arange(2)])
    assert arr[0].same_as(t) and list(arr[1]) == [1, 2] and isinstance(arr[2], rffi.Tensor)
    m = rffi.Map({offering("__rffi_value__")("key"): wraps})
    assert m["key"].same_as(t)
    lst = rffi.List([])
    lst.append(offering("__dlpack_device__")((2, 1)))
    assert lst[0] == rffi.device("cuda:1")
    assert testing.apply(lambda: wraps).same_as(t)
    assert testing.apply(lambda: offering("__dlpack_data_type__")((0, 8, 1))) == "int8"
    assert rffi.convert(wraps).same_as(t) and list(rffi.convert(stands)) == [1, 2]


@pytest.mark.parametrize("value, exc", REFUSED)
def test_both_paths_refuse_the_same_values(value, exc, testing):
    with pytest.raises(exc):
        testing.echo(value)
    with pytest.raises(exc):
        _ctypes_path(testing.echo)(value)


@pytest.mark.skipif(not _function.FASTPATH, reason="the native path reads the table")
@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_native_path_converts_the_kinds_with_a_native_code(kind, testing):
    fallback = _function._CtypesFunction.__call__.__code__
    native = _convert.KINDS[kind] != _convert.PYTHON
    for v in SAMPLES[kind]:
        seen = []

        def probe(frame, event, arg, seen=seen):
            if event == "call" and frame.f_code is fallback:
                seen.append(1)

        testing.nop(v)  # learn the type first
        sys.setprofile(probe)
        try:
            testing.nop(v)
        finally:
            sys.setprofile(None)
        if kind == "str" and "\x00" in v:
            continue  # a NUL inside: a heap Str, made by the Python rule
        assert bool(seen) != native, (kind, v)


def test_register_kind_adds_a_value_kind(testing):
    class Celsius:
        def __init__(self, degrees):
            self.degrees = degrees

    def set_celsius(v, fr, i):
        return _convert.KINDS["float"].setter(v.degrees, fr, i)

    _convert.register_kind(Celsius, _convert.Kind("celsius", _convert.PYTHON, set_celsius))
    try:
        assert testing.echo(Celsius(21.5)) == 21.5
        assert _ctypes_path(testing.echo)(Celsius(-3.0)) == -3.0
    finally:
        _convert.TABLE.pop(Celsius)


def test_register_kind_takes_effect_for_a_type_already_converted(testing):
    # The native path remembers the kinds it looked up; changing one takes effect at once.
    class Meters(float):
        pass

    assert testing.echo(Meters(2.0)) == 2.0  # the float rule, converted natively

    def in_centimeters(v, fr, i):
        return _convert.KINDS["int"].setter(int(v * 100), fr, i)

    _convert.register_kind(Meters, _convert.Kind("meters", _convert.PYTHON, in_centimeters))
    try:
        assert testing.echo(Meters(2.0)) == 200
    finally:
        _convert.register_kind(Meters, "float")
    assert testing.echo(Meters(2.5)) == 2.5
