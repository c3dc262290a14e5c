"""Every conversion, both ways, through `testing.echo` (Python -> rffi -> Python)."""

import ctypes
import enum
import math
import pickle

import pytest

import rffi


@pytest.mark.parametrize(
    "value",
    [None, 0, 1, -1, 7, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 0.0, -2.5, 1e300, math.inf],
)
def test_pod_round_trip(testing, value):
    out = testing.echo(value)
    assert out == value
    assert type(out) is type(value)


def test_nan(testing):
    assert math.isnan(testing.echo(math.nan))


def test_bool_stays_bool(testing):
    assert testing.echo(True) is True
    assert testing.echo(False) is False
    assert testing.add_one(True) == 2  # a bool is accepted where an int is expected


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**100])
def test_int_outside_int64_is_overflow_error(testing, value):
    with pytest.raises(OverflowError, match=r"argument #1 of `testing.echo`.*int64"):
        testing.echo(0, value)
    with pytest.raises(OverflowError):
        testing.echo(value)
    with pytest.raises(OverflowError):
        testing.echo("x", value)  # the generic path (not the all-int one)
    with pytest.raises(OverflowError):
        rffi.convert(value)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "abcdefg",
        "abcdefgh",
        "hello world, long enough for the heap",
        "é",
        "日本語テキスト",
        "a\x00b",
        "nul\x00in a long string on the heap",
        "\x00" * 8,
        "x" * 10000,
    ],
)
def test_str_small_heap_and_nul(testing, text):
    out = testing.echo(text)
    assert out == text
    assert type(out) is str


@pytest.mark.parametrize(
    "data", [b"", b"a", b"1234567", b"12345678", b"\x00\xff" * 40, bytes(range(256))]
)
def test_bytes(testing, data):
    out = testing.echo(data)
    assert out == data
    assert type(out) is bytes
    assert testing.echo(bytearray(data)) == data
    assert testing.echo(memoryview(data)) == data


def test_str_passed_to_typed_function(testing):
    with pytest.raises(ValueError, match="x" * 20):
        testing.raise_error("ValueError", "x" * 20)  # RawStr argument read as a String
    with pytest.raises(KeyError):
        testing.raise_error("KeyError", "with\x00nul inside a long message")


def test_list_tuple_become_array(testing):
    out = testing.echo([1, "two", 3.0, None, [4, [5]]])
    assert isinstance(out, rffi.Array)
    assert len(out) == 5
    assert out[0] == 1 and out[1] == "two" and out[2] == 3.0 and out[3] is None
    assert list(out[4])[0] == 4 and list(out[4][1]) == [5]
    assert list(testing.echo((1, 2))) == [1, 2]
    assert list(testing.echo([])) == []


def test_dict_becomes_map_in_insertion_order(testing):
    out = testing.echo({"b": 1, "a": 2, 3: "three", None: [1]})
    assert isinstance(out, rffi.Map)
    assert list(out) == ["b", "a", 3, None]
    assert out["a"] == 2 and out[3] == "three" and list(out[None]) == [1]


def test_device_and_dtype(testing):
    d = rffi.device("cuda:1")
    assert testing.echo(d) == d
    assert isinstance(testing.echo(d), rffi.Device)
    t = rffi.dtype("float32x4")
    assert testing.echo(t) == t
    assert str(testing.echo(rffi.dtype("bfloat16"))) == "bfloat16"


def test_c_void_p_is_opaque_pointer(testing):
    out = testing.echo(ctypes.c_void_p(0x12345678))
    assert isinstance(out, ctypes.c_void_p)
    assert out.value == 0x12345678
    assert testing.echo(ctypes.c_void_p(None)).value is None


def test_function_identity(testing):
    f = rffi.get_global_func("testing.add_one")
    assert testing.echo(f).same_as(f)
    assert testing.echo(f)(1) == 2


def test_callable_becomes_function(testing):
    out = testing.echo(lambda x: x * 3)
    assert isinstance(out, rffi.Function)
    assert out(5) == 15


def test_anything_else_is_the_same_object(testing):
    class Thing:
        pass

    x = Thing()
    assert testing.echo(x) is x
    assert testing.echo([x])[0] is x
    obj = object()
    assert testing.echo(obj) is obj


def test_shape(testing):
    s = rffi.Shape([2, 3, 4])
    out = testing.echo(s)
    assert isinstance(out, rffi.Shape) and out == (2, 3, 4)
    assert repr(out) == "Shape((2, 3, 4))"
    with pytest.raises(TypeError, match="dimension #1"):
        rffi.Shape([1, "x"])


def test_int_and_float_like_values(testing):
    class Color(enum.IntEnum):
        RED = 5

    assert testing.echo(Color.RED) == 5 and type(testing.echo(Color.RED)) is int

    class MyFloat(float):
        pass

    assert testing.echo(MyFloat(1.5)) == 1.5


def test_numpy_scalars(testing):
    np = pytest.importorskip("numpy")
    assert testing.echo(np.int64(7)) == 7 and type(testing.echo(np.int64(7))) is int
    assert testing.echo(np.float32(0.5)) == 0.5
    assert testing.echo(np.bool_(True)) is True


def test_exception_becomes_error(testing):
    out = testing.echo(ValueError("bad"))
    assert isinstance(out, rffi.Error)
    assert out.kind == "ValueError" and out.message == "bad"


def test_many_arguments(test_plugin):
    for n in (0, 1, 5, 6, 7, 20, 100):
        assert test_plugin.nargs(*range(n)) == n


def test_keyword_arguments_are_refused(testing):
    with pytest.raises(TypeError):
        testing.echo(x=1)


def test_convert(testing):
    assert rffi.convert(5) == 5
    assert rffi.convert("text") == "text"
    assert rffi.convert(None) is None
    arr = rffi.convert([1, 2, 3])
    assert isinstance(arr, rffi.Array) and list(arr) == [1, 2, 3]
    m = rffi.convert({"k": "v"})
    assert isinstance(m, rffi.Map) and m["k"] == "v"
    f = rffi.convert(lambda a, b: a + b)
    assert isinstance(f, rffi.Function) and f(1, 2) == 3


@pytest.mark.parametrize("text", ["", "short", "a heap string of some length", "nul\x00in it"])
def test_string_is_a_str(text, testing):
    s = rffi.convert(text)
    assert type(s) is rffi.String and isinstance(s, str)
    assert s == text and text == s and hash(s) == hash(text) and {text: 1}[s] == 1
    assert str(s) == text and type(str(s)) is str and repr(s) == repr(text)
    assert f"{s}|{s!r}|{s:>40}" == f"{text}|{text!r}|{text:>40}"
    assert s + "!" == text + "!" and s[1:] == text[1:] and len(s) == len(text)
    assert testing.echo(s) == text and rffi.String(text) == s
    back = pickle.loads(pickle.dumps(s))
    assert type(back) is rffi.String and back == text


@pytest.mark.parametrize("data", [b"", b"abc", b"heap bytes of some length", b"\x00\xff" * 8])
def test_bytes_is_a_bytes(data, testing):
    for source in (data, bytearray(data), memoryview(data)):
        b = rffi.convert(source)
        assert type(b) is rffi.Bytes and isinstance(b, bytes) and b == data
    assert hash(b) == hash(data) and {data: 1}[b] == 1 and b"x" + b == b"x" + data
    assert repr(b) == repr(data) and f"{b!r}" == f"{data!r}" and bytes(b) == data
    assert b[1:] == data[1:] and b.hex() == data.hex()
    assert testing.echo(b) == data and rffi.Bytes(data) == b
    back = pickle.loads(pickle.dumps(b))
    assert type(back) is rffi.Bytes and back == data


def test_array_sequence_protocol():
    a = rffi.Array([10, 20, 30, "x"])
    assert len(a) == 4
    assert a[0] == 10 and a[-1] == "x" and a[-4] == 10
    assert a[1:3] == [20, 30] and a[::-1] == ["x", 30, 20, 10]
    assert list(a) == [10, 20, 30, "x"]
    assert 20 in a and 99 not in a
    assert a.index(30) == 2 and a.count(10) == 1
    with pytest.raises(IndexError):
        a[4]
    with pytest.raises(IndexError):
        a[-5]
    with pytest.raises(TypeError):
        a["0"]
    assert repr(a) == "[10, 20, 30, 'x']"


def test_map_mapping_protocol():
    m = rffi.Map({"a": 1, "b": [2], 7: None})
    assert len(m) == 3
    assert m["a"] == 1 and m[7] is None
    assert "a" in m and "z" not in m and [1] not in m
    assert m.get("z", 5) == 5 and m.get("a") == 1
    assert list(m.keys()) == ["a", "b", 7]
    assert list(m.values())[0] == 1
    assert [k for k, _ in m.items()] == ["a", "b", 7]
    assert dict(m)["a"] == 1
    with pytest.raises(KeyError):
        m["missing"]
    assert repr(rffi.Map({"x": 1})) == "{'x': 1}"
    assert list(rffi.Map([("p", 1), ("q", 2)])) == ["p", "q"]


def test_map_keys_of_every_kind():
    arr = rffi.Array([1])
    m = rffi.Map({1.5: "float", arr: "by identity", b"raw": "bytes", "long key " * 3: 1})
    assert m[1.5] == "float"
    assert m[arr] == "by identity"
    assert rffi.Array([1]) not in m  # objects are keys by identity
    assert m[b"raw"] == "bytes" and m["long key " * 3] == 1


def test_results_of_every_kind(testing):
    # Values made natively come back as natural Python values.
    assert testing.add_one(41) == 42
    assert isinstance(rffi.get_global_func("ffi.Shape")(1, 2), rffi.Shape)
    names = rffi.get_global_func("ffi.ListGlobalFunctionNames")()
    assert isinstance(names, rffi.Array) and "testing.echo" in list(names)
