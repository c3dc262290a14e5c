//! Target `containers`: Arrays and Maps built from arbitrary well-formed values (every plain
//! kind, small and heap strings and bytes, NaN and signed zeros, dtypes, devices, pointers, pooled
//! objects, nested containers), with the Rust API and with the `ffi.*` functions through the C
//! ABI, then read back every way.
//!
//! What must hold: an Array holds exactly its items in order and indexes like a Python list; a
//! Map matches a model dict (a repeated key keeps its first position and takes the last value;
//! keys are equal by value for plain kinds, strings and bytes, by identity for other objects;
//! 0.0 and -0.0 are one key); lookups through the C ABI agree; references balance.

use super::input::Input;
use super::pool::{pool, Pool};
use rffi_core::abi::*;
use rffi_core::capi::function::RFFIFunctionCall;
use rffi_core::error::take_raised;
use rffi_core::{Any, AnyView, Array, DataType, Device, Function, Map, OpaquePtr};

/// The identity of a map key, as the model sees it.
#[derive(Clone, Debug, PartialEq)]
enum Key {
    None,
    Int(i64),
    Bool(bool),
    Float(u64),
    Str(Vec<u8>),
    Bytes(Vec<u8>),
    DataType(DLDataType),
    Device(DLDevice),
    Ptr(usize),
    Object(usize),
}

fn float(input: &mut Input<'_>) -> f64 {
    match input.u8() % 8 {
        0 => 0.0,
        1 => -0.0,
        2 => f64::NAN,
        3 => -f64::NAN,
        4 => f64::INFINITY,
        5 => 1.0,
        _ => f64::from_bits(input.u64()),
    }
}

fn text(input: &mut Input<'_>, max: usize) -> String {
    String::from_utf8_lossy(input.string(max)).into_owned()
}

/// A well-formed owned value and its key.
fn value(input: &mut Input<'_>, pool: &Pool, depth: u32) -> (Any, Key) {
    let sel = input.u8();
    match sel % 14 {
        0 => (Any::none(), Key::None),
        1 => {
            let i = i64::from(input.u8() % 4);
            (Any::from(i), Key::Int(i))
        }
        2 => {
            let i = input.edgy_i64();
            (Any::from(i), Key::Int(i))
        }
        3 => {
            let b = input.bool();
            (Any::from(b), Key::Bool(b))
        }
        4 => {
            let x = float(input);
            let bits = if x == 0.0 { 0 } else { x.to_bits() };
            (Any::from(x), Key::Float(bits))
        }
        5 | 6 => {
            let s = text(input, if sel % 14 == 5 { 9 } else { 40 });
            (Any::from(s.as_str()), Key::Str(s.into_bytes()))
        }
        7 => {
            let b = input.string(20).to_vec();
            (Any::from(b.as_slice()), Key::Bytes(b))
        }
        8 => {
            let names = [
                "int32",
                "float16x4",
                "bool",
                "void",
                "float8_e4m3fn",
                "uint1",
            ];
            let d = DataType::parse(names[usize::from(input.u8()) % names.len()]).unwrap();
            (Any::from(d), Key::DataType(d.raw()))
        }
        9 => {
            let d = Device::new(i32::from(input.u8() % 3) + 1, i32::from(input.u8() % 3)).unwrap();
            (Any::from(d), Key::Device(d.raw()))
        }
        10 => {
            let p = usize::from(input.u8());
            (Any::from(OpaquePtr(p as *mut _)), Key::Ptr(p))
        }
        11 => {
            let obj = pool.object(input.u8()).clone();
            let key = match obj.type_index() {
                kRFFIStr => Key::Str(obj.try_as::<String>().unwrap().into_bytes()),
                kRFFIBytes => Key::Bytes(obj.try_as::<Vec<u8>>().unwrap()),
                _ => Key::Object(obj.view().as_object().unwrap().as_ptr() as usize),
            };
            (obj, key)
        }
        12 if depth < 3 => {
            let n = usize::from(input.u8() % 4);
            let items = (0..n).map(|_| value(input, pool, depth + 1).0).collect();
            let a = Any::from(Array::new(items));
            let key = Key::Object(a.view().as_object().unwrap().as_ptr() as usize);
            (a, key)
        }
        13 if depth < 3 => {
            let n = usize::from(input.u8() % 4);
            let pairs = (0..n)
                .map(|_| {
                    (
                        value(input, pool, depth + 1).0,
                        value(input, pool, depth + 1).0,
                    )
                })
                .collect();
            let m = Any::from(Map::new(pairs).unwrap());
            let key = Key::Object(m.view().as_object().unwrap().as_ptr() as usize);
            (m, key)
        }
        _ => (Any::none(), Key::None),
    }
}

/// The same value: the same 16 bytes (objects by pointer, small strings by their bytes).
fn same(a: &AnyView<'_>, b: &AnyView<'_>) -> bool {
    let (a, b) = (a.as_raw(), b.as_raw());
    // SAFETY: reading the payload's 8 bytes as an integer is valid for every value.
    a.type_index == b.type_index
        && a.small_str_len == b.small_str_len
        && unsafe { a.v.v_int64 == b.v.v_int64 }
}

pub fn run(data: &[u8]) {
    let _ = take_raised();
    let (pool, _case) = pool();
    {
        let mut input = Input::new(data);
        let mode = input.u8();
        let n = usize::from(input.u8() % 13);
        let items: Vec<(Any, Key)> = (0..n).map(|_| value(&mut input, pool, 0)).collect();
        if mode % 2 == 0 {
            array(&items, mode & 2 != 0, &mut input);
        } else {
            map(&items, mode & 2 != 0, &mut input, pool);
        }
        let _ = take_raised();
    }
    pool.assert_at_rest();
}

/// Calls the global function `name` through the C ABI.
fn call_c(name: &str, args: &[Any]) -> Result<Any, rffi_core::Error> {
    let f: Function = rffi_core::get_global_func(name).unwrap();
    let mut result = rffi_core::any::NONE_RAW;
    // SAFETY: `Any` has the layout of `RFFIAny`; arguments are borrowed for the call.
    let rc = unsafe {
        RFFIFunctionCall(
            f.as_raw().cast(),
            args.as_ptr().cast_mut().cast(),
            args.len() as i32,
            &mut result,
        )
    };
    match rc {
        // SAFETY: on success the slot holds an owned value.
        0 => Ok(unsafe { Any::from_raw(result) }),
        -1 => Err(take_raised().expect("-1 without an error")),
        rc => panic!("{name} returned {rc}"),
    }
}

fn array(items: &[(Any, Key)], through_c: bool, input: &mut Input<'_>) {
    let values: Vec<Any> = items.iter().map(|(v, _)| v.clone()).collect();
    let a = if through_c {
        call_c("ffi.Array", &values)
            .unwrap()
            .try_as::<Array>()
            .unwrap()
    } else {
        Array::new(values.clone())
    };
    assert_eq!(a.len(), items.len());
    for (i, v) in values.iter().enumerate() {
        assert!(same(&a.get(i).unwrap(), &v.view()), "item {i}");
    }
    let len = a.len() as i64;
    let probe = i64::from(input.u8() as i8);
    let got = a.get_item(probe);
    let at = if probe < 0 { probe + len } else { probe };
    match got {
        Ok(v) => assert!(same(&v.view(), &values[at as usize].view())),
        Err(e) => {
            assert!(!(0..len).contains(&at), "{}", e.message());
            assert_eq!(e.kind(), "IndexError");
        }
    }
    let size = call_c("ffi.ArraySize", &[Any::from(a.clone())]).unwrap();
    assert_eq!(size.try_as::<i64>().unwrap(), len);
    let c_got = call_c(
        "ffi.ArrayGetItem",
        &[Any::from(a.clone()), Any::from(probe)],
    );
    assert_eq!(c_got.is_ok(), (0..len).contains(&at));
    let _ = format!("{a:?}");
}

fn map(items: &[(Any, Key)], through_c: bool, input: &mut Input<'_>, pool: &Pool) {
    let pairs: Vec<(Any, Any)> = items
        .chunks_exact(2)
        .map(|kv| (kv[0].0.clone(), kv[1].0.clone()))
        .collect();
    // The model: entries in first-insertion order, each with its last value.
    let mut model: Vec<(Key, &Any, &Any)> = Vec::new();
    for kv in items.chunks_exact(2) {
        match model.iter_mut().find(|(k, _, _)| *k == kv[0].1) {
            Some(entry) => entry.2 = &kv[1].0,
            None => model.push((kv[0].1.clone(), &kv[0].0, &kv[1].0)),
        }
    }
    let m = if through_c {
        let flat: Vec<Any> = pairs
            .iter()
            .flat_map(|(k, v)| [k.clone(), v.clone()])
            .collect();
        call_c("ffi.Map", &flat).unwrap().try_as::<Map>().unwrap()
    } else {
        Map::new(pairs).unwrap()
    };
    assert_eq!(m.len(), model.len(), "{m:?}");
    for ((k, v), (_, mk, mv)) in m.iter().zip(&model) {
        assert!(same(&k, &mk.view()), "key {k:?} vs {mk:?}");
        assert!(same(&v, &mv.view()), "value of {k:?}: {v:?} vs {mv:?}");
    }
    for (key, mk, mv) in &model {
        let got = m
            .get(&mk.view())
            .unwrap()
            .unwrap_or_else(|| panic!("{key:?} not found"));
        assert!(same(&got, &mv.view()));
    }
    // A probe key, present or not, through the C ABI.
    let (probe, probe_key) = value(input, pool, 2);
    let expected = model.iter().find(|(k, _, _)| *k == probe_key).map(|e| e.2);
    let count = call_c("ffi.MapCount", &[Any::from(m.clone()), probe.clone()]).unwrap();
    assert_eq!(
        count.try_as::<i64>().unwrap(),
        expected.is_some() as i64,
        "{probe:?}"
    );
    match (
        call_c("ffi.MapGetItem", &[Any::from(m.clone()), probe.clone()]),
        expected,
    ) {
        (Ok(v), Some(mv)) => assert!(same(&v.view(), &mv.view())),
        (Err(e), None) => assert_eq!(e.kind(), "KeyError"),
        (got, expected) => panic!("MapGetItem({probe:?}) = {got:?}, model {expected:?}"),
    }
    let size = call_c("ffi.MapSize", &[Any::from(m.clone())]).unwrap();
    assert_eq!(size.try_as::<i64>().unwrap(), model.len() as i64);
    let _ = call_c("ffi.MapItems", &[Any::from(m.clone())]).unwrap();
}
