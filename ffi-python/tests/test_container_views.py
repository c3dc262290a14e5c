"""Map and Dict views behave like a dict's; the four containers repr like their Python twins."""

from collections.abc import ItemsView, KeysView, ValuesView

import rffi


def test_map_views_are_dict_like():
    m = rffi.Map({"a": 1, "b": [2], 7: None})
    keys, values, items = m.keys(), m.values(), m.items()
    assert isinstance(keys, KeysView) and isinstance(values, ValuesView)
    assert isinstance(items, ItemsView)
    assert len(keys) == len(values) == len(items) == 3
    assert list(keys) == ["a", "b", 7] and list(reversed(keys)) == [7, "b", "a"]
    assert "a" in keys and "z" not in keys and [1] not in keys
    assert 1 in values and [2] in values and 5 not in values
    assert ("a", 1) in items and ("a", 2) not in items and ("z", 1) not in items
    assert ([1], 1) not in items and "a" not in items
    # Set operations, as on dict_keys / dict_items.
    assert keys & {"a", "q"} == {"a"} and keys | {"q"} == {"a", "b", 7, "q"}
    assert keys - {"b", 7} == {"a"} and keys == {"a", "b", 7}
    assert rffi.Map({"x": 1}).items() == {("x", 1)}
    assert list(reversed(items))[0] == (7, None)


def test_view_reprs_name_their_mapping():
    m = rffi.Map({"a": 1})
    assert repr(m.keys()) == "map_keys(['a'])"
    assert repr(m.values()) == "map_values([1])"
    assert repr(m.items()) == "map_items([('a', 1)])"
    d = rffi.Dict({"a": 1})
    assert repr(d.keys()) == repr({"a": 1}.keys()) == "dict_keys(['a'])"
    assert repr(d.values()) == repr({"a": 1}.values())
    assert repr(d.items()) == repr({"a": 1}.items())


def test_dict_views_are_live():
    d = rffi.Dict({"a": 1})
    keys, values, items = d.keys(), d.values(), d.items()
    d["b"] = 2
    del d["a"]
    assert list(keys) == ["b"] and list(values) == [2] and list(items) == [("b", 2)]
    same = rffi.get_global_func("testing.echo")(d)
    same["c"] = 3  # a change through another holder
    assert len(keys) == 2 and "c" in keys and ("c", 3) in items
    assert [1] not in d  # a key the runtime cannot hold


def test_reprs_like_python():
    assert repr(rffi.Array([1, "x", None])) == repr([1, "x", None])
    assert repr(rffi.Array([])) == "[]"
    assert repr(rffi.List([1.5, b"b"])) == repr([1.5, b"b"])
    assert repr(rffi.Map({"a": 1, 2: "b"})) == repr({"a": 1, 2: "b"})
    assert repr(rffi.Map({})) == "{}"
    assert repr(rffi.Dict({"k": [1]})) == "{'k': [1]}"
    # Nested containers print their items' reprs.
    assert repr(rffi.Map({"a": rffi.Array([1, 2])})) == "{'a': [1, 2]}"
    # Keys the runtime keeps apart stay apart (a dict would merge 1 and True).
    assert repr(rffi.Map([(1, "int"), (True, "bool")])) == "{1: 'int', True: 'bool'}"


def test_containers_holding_themselves_repr_as_python_does():
    lst = rffi.List([1])
    lst.append(lst)
    assert repr(lst) == "[1, [...]]"
    d = rffi.Dict({"a": 1})
    d["me"] = d
    assert repr(d) == "{'a': 1, 'me': {...}}"
    lst.clear()  # break the cycles so the objects are freed
    d.clear()
