"""Copy semantics of every object wrapper. ``copy.copy`` of a container or an object of a
registered type is a new one holding the same members; of other objects (tensors, errors,
functions) a new wrapper sharing the object, with a new reference. ``copy.deepcopy`` and
``pickle`` copy by value where the type has a value form, and raise a TypeError naming the type
where it has none. Runs on both call paths (scripts/test.sh)."""

import copy
import ctypes
import gc
import pickle

import numpy as np
import pytest

import rffi


def _array():
    return rffi.Array([1, "a long string value", rffi.Shape((2, 3)), [4.5, None]])


def _map():
    return rffi.Map({"a": 1, "b": [1, 2], 3: "three"})


def _tensor():
    return rffi.from_dlpack(np.arange(12, dtype=np.float32).reshape(3, 4))


def _error():
    return rffi.Error("ValueError", "bad value", '  File "x.py", line 3, in f\n')


def _function():
    return rffi.get_global_func("testing.add_one")


def _callback():
    return rffi.Function(lambda x: x + 1)


MAKERS = {
    "Array": _array,
    "Map": _map,
    "List": lambda: rffi.List([1, [2]]),
    "Dict": lambda: rffi.Dict({"k": [1]}),
    "TestIntPair": lambda: rffi.testing.TestIntPair(3, 7),
    "Tensor": _tensor,
    "Error": _error,
    "Function": _function,
    "callback": _callback,
}


SHALLOW_NEW = ("Array", "Map", "List", "Dict", "TestIntPair")


@pytest.mark.parametrize("name", SHALLOW_NEW)
def test_shallow_copy_of_containers_and_objects_is_new_with_the_same_members(name):
    obj = MAKERS[name]()
    dup = copy.copy(obj)
    assert type(dup) is type(obj) and not dup.same_as(obj)
    assert rffi.structural_equal(dup, obj)
    members = {
        "Array": lambda o: o[3],
        "Map": lambda o: o["b"],
        "List": lambda o: o[1],
        "Dict": lambda o: o["k"],
        "TestIntPair": lambda o: None,
    }[name]
    if members(obj) is not None:
        assert members(dup).same_as(members(obj))  # one level only: the members are shared


def test_shallow_copy_of_a_mutable_container_or_object_is_independent():
    items = rffi.List([1, 2])
    dup = copy.copy(items)
    dup.append(3)
    assert list(items) == [1, 2] and list(dup) == [1, 2, 3]
    t = rffi.testing
    obj = t.create_object("testing.TestObjectDerived", v_i64=5, v_map={"k": 1}, v_array=[1])
    dup = copy.copy(obj)
    assert isinstance(dup, t.TestObjectDerived) and not dup.same_as(obj)
    assert dup.v_map.same_as(obj.v_map) and dup.v_array.same_as(obj.v_array)
    dup.v_i64 = 99
    assert obj.v_i64 == 5 and dup.v_i64 == 99


@pytest.mark.parametrize("name", sorted(set(MAKERS) - set(SHALLOW_NEW)))
def test_shallow_copy_shares_with_a_reference(name, testing):
    obj = MAKERS[name]()
    count = testing.object_use_count(obj)
    dup = copy.copy(obj)
    assert type(dup) is type(obj)
    assert dup.same_as(obj) and dup is not obj
    assert testing.object_use_count(obj) == count + 1
    del obj
    gc.collect()
    # The copy owns its own reference: still usable after the original is gone.
    assert testing.object_use_count(dup) == count
    assert testing.echo(dup).same_as(dup)


def _plain(v):
    """A wrapper's value as plain Python data (wrappers themselves compare by identity)."""
    if isinstance(v, rffi.Tensor):
        return ("Tensor", v.shape, str(v.dtype), np.from_dlpack(v).tobytes())
    if isinstance(v, rffi.Error):
        return ("Error", v.kind, v.message, v.backtrace)
    if isinstance(v, rffi.Map):
        return ("Map", [(_plain(k), _plain(x)) for k, x in v.items()])
    if isinstance(v, rffi.Array):
        return ("Array", [_plain(x) for x in v])
    return v


def _same_value(a, b):
    return _plain(a) == _plain(b)


@pytest.mark.parametrize("name", ["Array", "Map", "Tensor", "Error"])
@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_value_copies(name, how, testing):
    obj = MAKERS[name]()
    count = testing.object_use_count(obj)
    dup = copy.deepcopy(obj) if how == "deepcopy" else pickle.loads(pickle.dumps(obj))
    assert type(dup) is type(obj)
    assert not dup.same_as(obj)
    assert _same_value(obj, dup)
    assert testing.object_use_count(obj) == count
    assert testing.object_use_count(dup) == 1


def test_deepcopy_tensor_is_independent():
    a = np.zeros(4, dtype=np.int32)
    t = rffi.from_dlpack(a)
    dup = copy.deepcopy(t)
    a[:] = 7
    assert np.from_dlpack(dup).tolist() == [0, 0, 0, 0]
    assert np.from_dlpack(t).tolist() == [7, 7, 7, 7]


def test_pickle_strided_and_empty_tensors():
    base = np.arange(24, dtype=np.int16).reshape(4, 6)
    for view in (base[::2, 1::2], base.T, base[:0], np.full((), 2.5)):
        t = rffi.from_dlpack(view)
        dup = pickle.loads(pickle.dumps(t))
        assert dup.shape == view.shape and dup.is_contiguous()
        assert np.array_equal(np.from_dlpack(dup), view)


def test_containers_copy_their_items_by_value(testing):
    t = _tensor()
    arr = rffi.Array([t, rffi.Map({"t": t})])
    dup = copy.deepcopy(arr)
    assert not dup[0].same_as(t)
    assert not dup[1]["t"].same_as(t)
    assert np.array_equal(np.from_dlpack(dup[0]), np.from_dlpack(t))
    # The Python memo is honoured: one tensor copied once, even if named twice.
    pair = copy.deepcopy([t, t])
    assert pair[0] is pair[1]


@pytest.mark.parametrize("name", ["Function", "callback"])
@pytest.mark.parametrize("how", [copy.deepcopy, pickle.dumps])
def test_functions_have_no_value_form(name, how):
    f = MAKERS[name]()
    with pytest.raises(TypeError, match=r"rffi\.Function.*no value form"):
        how(f)


def test_containers_of_functions_have_no_value_form():
    arr = rffi.Array([1, _function()])
    with pytest.raises(TypeError, match=r"rffi\.Function"):
        copy.deepcopy(arr)
    with pytest.raises(TypeError, match=r"rffi\.Function"):
        pickle.dumps(rffi.Map({"f": _function()}))


def test_module_has_no_value_form(test_plugin):
    assert copy.copy(test_plugin).same_as(test_plugin)
    with pytest.raises(TypeError, match=r"rffi\.Module"):
        copy.deepcopy(test_plugin)
    with pytest.raises(TypeError, match=r"rffi\.Module"):
        pickle.dumps(test_plugin)


def test_device_tensor_has_no_value_form():
    # A host array relabelled as CUDA memory (never read as such here).
    cap = np.arange(4, dtype=np.float32).__dlpack__(max_version=(1, 1))
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    managed = get(cap, b"dltensor_versioned")
    # DLManagedTensorVersioned: dl_tensor at 32, its device type at 8 within it.
    ctypes.c_int32.from_address(managed + 40).value = 2  # kDLCUDA
    t = rffi.from_dlpack(cap)
    assert t.device == rffi.device("cuda", 0)
    assert copy.copy(t).same_as(t)
    with pytest.raises(TypeError, match=r"rffi\.Tensor on cuda:0.*device memory"):
        copy.deepcopy(t)
    with pytest.raises(TypeError, match=r"rffi\.Tensor on cuda:0"):
        pickle.dumps(t)


def test_opaque_object_has_no_value_form(testing):
    holder = rffi.Array([object()])
    # The item decodes to the Python object itself, so the Array's deep copy copies that object.
    assert type(copy.deepcopy(holder)[0]) is object
    from rffi import _core

    o = _core.make_opaque(object())
    with pytest.raises(TypeError, match=r"rffi\.Object \(ffi\.OpaquePyObject\)"):
        copy.deepcopy(o)


def test_released_wrapper_refuses_copies():
    arr = rffi.Array([1])
    arr.__del__()
    assert repr(arr) == "<rffi.Array (released)>"
    for read in (len, list, lambda a: a[0], copy.copy, copy.deepcopy):
        with pytest.raises(ValueError, match="released"):
            read(arr)
    fn = rffi.get_global_func("testing.add_one")
    fn.__del__()
    assert copy.copy(fn)._handle == 0  # a wrapper of nothing, as the original
    with pytest.raises(ValueError, match="released"):
        pickle.dumps(arr)


def test_tensor_from_bytes_checks_its_size():
    from rffi._tensor import tensor_from_bytes

    with pytest.raises(ValueError, match="3 bytes given for a float32 tensor of shape"):
        tensor_from_bytes(b"abc", "float32", (2,))


# ---- Handles are read-only ----


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_handle_is_read_only(name, testing):
    obj = MAKERS[name]()
    h = obj._handle
    with pytest.raises(AttributeError):
        obj._handle = 5
    with pytest.raises(AttributeError):
        obj._tidx = 0
    with pytest.raises(AttributeError):
        del obj._handle
    assert obj._handle == h
    assert testing.echo(obj).same_as(obj)


def test_deepcopy_keeps_containers_shared():
    shared = rffi.Array([1, 2])
    outer = rffi.Array([shared, shared, rffi.Map({"s": shared})])
    dup = copy.deepcopy(outer)
    assert dup[0].same_as(dup[1]) and dup[2]["s"].same_as(dup[0])
    assert not dup[0].same_as(shared)


def test_shallow_copy_of_a_dataclass_shares_its_containers():
    @rffi.dataclasses.py_class("test_copies.Holder")
    class Holder:
        items: list[int]
        table: dict[str, int]

    h = Holder([1, 2], {"a": 1})
    c = copy.copy(h)
    assert c.items.same_as(h.items) and c.table.same_as(h.table)
    d = copy.deepcopy(h)
    assert not d.items.same_as(h.items) and list(d.items) == [1, 2]


def test_deepcopy_keeps_cycles_through_lists_and_dicts():
    lst = rffi.List()
    m = rffi.Map({"list": lst})
    lst.append(m)
    for root, back in ((lst, lambda c: c[0]["list"]), (m, lambda c: c["list"][0])):
        dup = copy.deepcopy(root)
        assert not dup.same_as(root)
        assert back(dup).same_as(dup)
    d = rffi.Dict()
    key = rffi.List([d])
    d[key] = rffi.Array([d])
    dup = copy.deepcopy(d)
    (k, v), = dup.items()
    assert k[0].same_as(dup) and v[0].same_as(dup) and not k.same_as(key)
    # An immutable root reached again through its cycle: one copy, the one the cycle holds.
    arr = rffi.Array([lst])
    dup = copy.deepcopy(arr)
    assert dup[0][0]["list"].same_as(dup[0]) and not dup[0].same_as(lst)


def test_pickle_dict_with_a_container_key():
    d = rffi.Dict()
    d[rffi.List([1])] = 2
    (k, v), = pickle.loads(pickle.dumps(d)).items()
    assert list(k) == [1] and v == 2


def test_pickle_keeps_cycles_and_sharing_through_containers():
    lst = rffi.List([1, "a"])
    d = rffi.Dict({"list": lst})
    lst.append(lst)
    lst.append(d)
    dup = pickle.loads(pickle.dumps(lst))
    assert not dup.same_as(lst)
    assert dup[:2] == [1, "a"]
    assert dup[2].same_as(dup) and dup[3]["list"].same_as(dup)
    # A container held twice comes back as one, as a Python list held twice does.
    shared = rffi.List([5])
    arr = pickle.loads(pickle.dumps(rffi.Array([shared, rffi.Map({"s": shared})])))
    assert arr[0].same_as(arr[1]["s"]) and list(arr[0]) == [5]
    # A List key of a Dict that holds the Dict, and an Array value holding it.
    d = rffi.Dict()
    d[rffi.List([d])] = rffi.Array([d])
    ((k, v),) = pickle.loads(pickle.dumps(d)).items()
    assert k[0].same_as(v[0]) and len(k[0]) == 1


def test_pickle_of_deeply_nested_containers_takes_no_deep_stack():
    root = rffi.List()
    cur = root
    for _ in range(50_000):
        nxt = rffi.List()
        cur.append(nxt)
        cur = nxt
    arr = rffi.Array([])
    for _ in range(20_000):
        arr = rffi.Array([arr, 1])
    for value in (root, arr):
        dup = pickle.loads(pickle.dumps(value))
        depth = 0
        while len(dup):
            dup, depth = dup[0], depth + 1
        assert depth == (50_000 if value is root else 20_000)


def test_a_malformed_container_table_is_a_clear_error():
    from rffi._container_pickle import _Ref, rebuild

    # Two Arrays holding each other: no List or Dict to close the cycle, so no pickle of
    # rffi's makes this.
    with pytest.raises(ValueError, match="cycle of immutable containers"):
        rebuild([0, 0], [[_Ref(1)], [_Ref(0)]])
    with pytest.raises(ValueError, match="differ in length"):
        rebuild([0], [])
