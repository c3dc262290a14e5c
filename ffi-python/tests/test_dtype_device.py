"""``rffi.dtype`` and ``rffi.device``: spellings, fields, conversions to and from numpy, torch and
DLPack, equality and hashing, and their round trip through the runtime."""

import pickle

import numpy as np
import pytest

import rffi
from rffi import DLDeviceType

# ---- dtype ----

ALIASES = [
    ("f16", "float16"),
    ("bf16", "bfloat16"),
    ("f32", "float32"),
    ("f64", "float64"),
    ("i8", "int8"),
    ("i16", "int16"),
    ("i32", "int32"),
    ("i64", "int64"),
    ("u8", "uint8"),
    ("u16", "uint16"),
    ("u32", "uint32"),
    ("u64", "uint64"),
    ("i4", "int4"),
    ("c64", "complex64"),
    ("c128", "complex128"),
    ("f32x4", "float32x4"),
    ("half", "float16"),
    ("double", "float64"),
    ("long", "int64"),
    ("bool_", "bool"),
]


@pytest.mark.parametrize("short, long", ALIASES)
def test_str_keeps_the_spelling_and_aliases_mean_the_long_name(short, long):
    dt = rffi.dtype(short)
    assert str(dt) == short and repr(dt) == f"dtype({short!r})" and f"{dt}" == short
    assert dt == long and dt == rffi.dtype(long) and str(rffi.dtype(long)) == long
    assert dt.__dlpack_data_type__() == rffi.dtype(long).__dlpack_data_type__()
    assert hash(dt) == hash(long) == hash(rffi.dtype(long))


@pytest.mark.parametrize(
    "short, long",
    [
        ("f8_e4m3fn", "float8_e4m3fn"),
        ("fp8_e5m2x4", "float8_e5m2x4"),
        ("f6_e2m3fn", "float6_e2m3fn"),
        ("fp6_e3m2fn", "float6_e3m2fn"),
        ("f4_e2m1fnx2", "float4_e2m1fnx2"),
        ("f4_e2m1fn_x2", "float4_e2m1fnx2"),
        ("float4_e2m1fn_x2", "float4_e2m1fnx2"),
    ],
)
def test_low_precision_float_short_names(short, long):
    dt = rffi.dtype(short)
    assert str(dt) == short and dt == long and dt.is_float is True
    with pytest.raises(ValueError, match="float8"):
        rffi.dtype("f8_e9m9")


def test_module_level_dtypes():
    assert rffi.float32 == "float32" and isinstance(rffi.float32, rffi.dtype)
    assert rffi.bool.is_bool is True and rffi.uint8.is_integer is True
    assert rffi.float4_e2m1fn_x2 == rffi.float4_e2m1fnx2 and rffi.float4_e2m1fnx2.lanes == 2
    assert rffi.bfloat16.__dlpack_data_type__() == (4, 16, 1)
    with pytest.raises(AttributeError):
        rffi.float7  # noqa: B018


def test_dtype_is_a_str_class_of_its_own():
    dt = rffi.dtype("float32")
    assert type(dt) is rffi.dtype and rffi.DataType is rffi.dtype and isinstance(dt, str)
    assert rffi.dtype(dt) is dt
    assert rffi.dtype("float32").type_code == 2 and rffi.dtype("bfloat16").type_code == 4
    # numpy reads it as the string it is.
    assert np.array([1, 2], dtype=dt).dtype == dt


def test_equality_and_hashing_follow_the_fields():
    assert rffi.dtype("f32") == rffi.dtype("float32") == "float32" == rffi.dtype("f32")
    assert rffi.dtype("f32") != "int32" and rffi.dtype("f32") != "not a dtype"
    assert not rffi.dtype("f32") != "float32"
    assert rffi.dtype("f32") != 32 and rffi.dtype("f32") != None  # noqa: E711
    table = {"float32": "found"}
    assert table[rffi.dtype("f32")] == "found"
    assert len({rffi.dtype("f32"), rffi.dtype("float32"), rffi.dtype("float"), "float32"}) == 1
    assert rffi.dtype("float32") == np.dtype("float32") and rffi.dtype("int8") != np.float32


# (name, bits, lanes, itemsize, is_bool, is_integer, is_float, is_handle)
FIELDS = [
    ("bool", 8, 1, 1, True, False, False, False),
    ("int8", 8, 1, 1, False, True, False, False),
    ("uint64", 64, 1, 8, False, True, False, False),
    ("int4", 4, 1, 1, False, True, False, False),
    ("float32", 32, 1, 4, False, False, True, False),
    ("float32x4", 32, 4, 16, False, False, True, False),
    ("bfloat16", 16, 1, 2, False, False, True, False),
    ("float8_e4m3fn", 8, 1, 1, False, False, True, False),
    ("float8_e5m2x4", 8, 4, 4, False, False, True, False),
    ("float6_e2m3fnx4", 6, 4, 3, False, False, True, False),
    ("float4_e2m1fnx4", 4, 4, 2, False, False, True, False),
    ("complex64", 64, 1, 8, False, False, False, False),
    ("handle", 64, 1, 8, False, False, False, True),
    ("void", 0, 0, 0, False, False, False, False),
]


@pytest.mark.parametrize("fields", FIELDS)
def test_fields_and_predicates(fields):
    name, bits, lanes, itemsize, is_bool, is_int, is_float, is_handle = fields
    dt = rffi.dtype(name)
    assert (dt.bits, dt.lanes, dt.itemsize) == (bits, lanes, itemsize)
    for answer, expected in (
        (dt.is_bool, is_bool),
        (dt.is_integer, is_int),
        (dt.is_float, is_float),
        (dt.is_handle, is_handle),
    ):
        assert answer is expected  # a property holding a plain bool, as tvm-ffi's


def test_with_lanes():
    for name in ("float32", "bool", "i8"):
        dt = rffi.dtype(name)
        v = dt.with_lanes(4)
        assert (v.type_code, v.bits, v.lanes) == (dt.type_code, dt.bits, 4)
        assert v.with_lanes(1) == dt
    assert str(rffi.dtype("f32").with_lanes(8)) == "float32x8"
    for bad in (0, 65536, 1.5, True):
        with pytest.raises(ValueError, match="lanes"):
            rffi.dtype("f32").with_lanes(bad)


@pytest.mark.parametrize("name", [f[0] for f in FIELDS] + ["f16", "u32x2"])
def test_dlpack_data_type_round_trip(name, testing):
    dt = rffi.dtype(name)
    fields = dt.__dlpack_data_type__()
    assert fields == (dt.type_code, dt.bits, dt.lanes)
    back = rffi.dtype.from_dlpack_data_type(fields)
    assert back == dt and back.__dlpack_data_type__() == fields

    class Producer:  # anything with __dlpack_data_type__ converts
        def __dlpack_data_type__(self):
            return fields

    assert rffi.dtype(Producer()) == dt
    assert rffi.convert(Producer()) == dt and testing.echo(Producer()) == dt
    echoed = testing.echo(dt)
    assert type(echoed) is rffi.dtype and echoed == dt
    assert str(echoed) == str(rffi.dtype.from_dlpack_data_type(fields))  # canonical spelling


def test_invalid_dtypes_are_clear_errors():
    with pytest.raises(ValueError, match="notatype"):
        rffi.dtype("notatype")
    with pytest.raises(ValueError, match="'f33' .short for 'float33'"):
        rffi.dtype("f33")
    for fields in ((2, 33, 1), (99, 8, 1), (2, 32, 0), (2, 300, 1)):
        with pytest.raises(ValueError, match="invalid DLPack data type"):
            rffi.dtype.from_dlpack_data_type(fields)
    with pytest.raises(TypeError, match="cannot make a dtype from int"):
        rffi.dtype(3)


def test_pickle_keeps_the_spelling():
    for name in ("f32", "float8_e5m2x4", "bool"):
        back = pickle.loads(pickle.dumps(rffi.dtype(name)))
        assert type(back) is rffi.dtype and str(back) == name and back == rffi.dtype(name)


NUMPY = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
NUMPY += ["float16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("name", NUMPY)
def test_numpy_dtypes_both_ways(name, testing):
    npdt = np.dtype(name)
    dt = rffi.dtype(npdt)
    assert dt == name and str(dt) == name and dt.to_numpy() == npdt
    assert rffi.dtype(npdt.type) == dt  # the scalar type (numpy.float32) too
    assert testing.echo(npdt) == dt and rffi.convert(npdt) == dt


def test_numpy_has_no_dtype_for_some():
    for name in ("handle", "float32x4"):
        with pytest.raises(TypeError, match="numpy has no dtype"):
            rffi.dtype(name).to_numpy()
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        with pytest.raises(TypeError, match="numpy has no dtype for bfloat16"):
            rffi.dtype("bf16").to_numpy()
    else:
        assert rffi.dtype(rffi.dtype("bf16").to_numpy()) == "bfloat16"


TORCH = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32"]
TORCH += ["float64", "complex64", "float8_e4m3fn", "float8_e5m2"]


@pytest.mark.parametrize("name", TORCH)
def test_torch_dtypes_both_ways(name, testing):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, name)
    dt = rffi.dtype(tdt)
    assert dt == name and dt.to_torch() is tdt and dt == tdt
    assert testing.echo(tdt) == dt and rffi.convert(tdt) == dt


# ---- device ----


def test_device_forms_agree():
    forms = [
        rffi.device("cuda", 1),
        rffi.device("cuda:1"),
        rffi.device(2, 1),
        rffi.device(DLDeviceType.kDLCUDA, 1),
        rffi.Device("cuda", 1),
        rffi.Device(DLDeviceType.kDLCUDA, 1),
        rffi.device(rffi.device("cuda", 0), 1),
    ]
    assert all(d == forms[0] for d in forms) and len(set(forms)) == 1
    d = forms[0]
    assert d.type == "cuda" and d.index == 1 and d.dlpack_device_type() == DLDeviceType.kDLCUDA
    assert str(d) == "cuda:1" and repr(d) == "device(type='cuda', index=1)"
    assert rffi.device("cpu") == rffi.device("cpu", 0) == rffi.Device("cpu") == "cpu:0"


@pytest.mark.parametrize("member", list(DLDeviceType))
def test_every_dlpack_device_type_has_a_name(member, testing):
    d = rffi.device(member, 3)
    assert d.dlpack_device_type() == member == member.value
    assert rffi.device(d.type, 3) == d and rffi.device(str(d)) == d
    assert d.__dlpack_device__() == (member.value, 3)
    back = testing.echo(d)  # through the runtime, and printed by it
    assert back == d and str(back) == str(d)


def test_device_equality_and_hashing():
    assert hash(rffi.device("cuda:1")) == hash("cuda:1")
    assert {"cuda:1": "found"}[rffi.device("cuda", 1)] == "found"
    assert rffi.device("cuda", 1) != rffi.device("cuda", 0) != rffi.device("cpu", 0)
    assert rffi.device("cpu") != "tpu:0" and rffi.device("cpu") != 1
    assert not rffi.device("cpu") != "cpu"
    assert len({rffi.device("cpu"), rffi.device("cpu:0"), rffi.device("cuda")}) == 2


@pytest.mark.parametrize("name", ["gpu", "llvm", "cl", "nvptx", "hip", "CUDA"])
def test_only_canonical_device_names_parse(name):
    with pytest.raises(ValueError) as e:
        rffi.device(name)
    # tvm-ffi's message; the names expected in a note (Python >= 3.11) or after the message.
    notes = getattr(e.value, "__notes__", None)
    if notes is None:
        assert str(e.value).startswith(f"Unknown device: {name} (expected a device name: cpu,")
    else:
        assert str(e.value) == f"Unknown device: {name}"
        assert notes[0].startswith("expected a device name: cpu, cuda, cuda_host, opencl,")
    with pytest.raises(ValueError) as e:
        rffi.device("gpu:1")
    assert str(e.value).endswith("(in 'gpu:1')")


def test_device_index_from_numpy_and_bad_input():
    assert rffi.device("cpu", np.int32(1)).index == 1
    assert rffi.Device(1, np.uint8(2)).index == 2
    for bad in ("cpu:0:0", "cpu:?", "cpu:", "tpu", "cuda:-1", ""):
        with pytest.raises(ValueError):
            rffi.device(bad)
    with pytest.raises(ValueError, match="already has an index"):
        rffi.device("cuda:1", 2)
    with pytest.raises(ValueError, match="index must be in"):
        rffi.device("cpu", -1)
    with pytest.raises(ValueError, match="unknown DLPack device type"):
        rffi.device(5, 0)
    for bad_index in ("?", 1.5, True):
        with pytest.raises(TypeError, match="device index must be an int"):
            rffi.device("cpu", bad_index)
    with pytest.raises(TypeError):
        rffi.device(1.5)


def test_device_protocols(testing):
    class Where:
        def __dlpack_device__(self):
            return (2, 5)

    assert rffi.device(Where()) == "cuda:5"
    assert testing.echo(Where()) == rffi.device("cuda:5")
    assert rffi.convert(Where()) == rffi.device("cuda:5")


def test_device_pickle():
    d = rffi.device("rocm", 2)
    back = pickle.loads(pickle.dumps(d))
    assert back == d and back.dlpack_device_type() == DLDeviceType.kDLROCM


def test_torch_device():
    torch = pytest.importorskip("torch")
    assert rffi.device(torch.device("cuda:1")) == "cuda:1"
    assert rffi.device(torch.device("cpu")) == "cpu:0"
    assert rffi.get_global_func("testing.echo")(torch.device("cuda:1")) == "cuda:1"
