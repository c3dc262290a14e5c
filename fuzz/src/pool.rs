//! Real objects of every kind for the value targets to point at, created once per thread, with
//! the strong count each holds at rest: after every fuzz case the counts must be back there (a
//! reference leaked or released twice by the runtime shows up as a difference).

use rffi_core::abi::*;
use rffi_core::capi::function::RFFIFunctionCreate;
use rffi_core::{Any, Array, Bytes, Error, Function, Map, ObjectRef, RString, Shape, Tensor};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub struct Pool {
    /// One object of each kind (String, Bytes, Array, Map, Shape, Rust and C Functions, Error,
    /// Tensor, opaque objects of a registered type and of `ffi.OpaquePyObject`).
    pub objects: Vec<Any>,
    at_rest: Vec<u32>,
    /// Functions the value targets call with their values as arguments.
    pub callees: Vec<(&'static str, Function)>,
    /// A valid CPU `DLTensor` (float32, 2×3) for `DLTensor*` values.
    pub dltensor: *mut DLTensor,
}

/// A C callback that returns 7 (a function object with a C entry in the pool).
unsafe extern "C" fn returns_seven(
    _: *mut core::ffi::c_void,
    _: *const RFFIAny,
    _: i32,
    result: *mut RFFIAny,
) -> i32 {
    // SAFETY: the runtime passes a writable result slot.
    unsafe { result.write(Any::from(7i64).into_raw()) };
    0
}

// SAFETY: the objects are thread-safe values; the DLTensor is never written after creation.
unsafe impl Sync for Pool {}
// SAFETY: as above.
unsafe impl Send for Pool {}

static POOL: OnceLock<Pool> = OnceLock::new();
static CASES: Mutex<()> = Mutex::new(());

/// The pool, and a guard that keeps other threads' cases out while this one counts references
/// (the regression tests replay inputs on several threads).
pub fn pool() -> (&'static Pool, MutexGuard<'static, ()>) {
    let guard = CASES.lock().unwrap_or_else(|e| e.into_inner());
    (POOL.get_or_init(Pool::new), guard)
}

impl Pool {
    fn new() -> Pool {
        let global = |name: &str| {
            rffi_core::get_global_func(name).unwrap_or_else(|| panic!("{name} is not registered"))
        };
        let mut c_function = core::ptr::null_mut();
        // SAFETY: a callback following the calling convention, no context, an out-pointer.
        let rc = unsafe {
            RFFIFunctionCreate(
                core::ptr::null_mut(),
                Some(returns_seven),
                None,
                &mut c_function,
            )
        };
        assert_eq!(rc, 0);
        // SAFETY: a new reference to a Function object.
        let c_function = unsafe { Any::from_raw(object_value(c_function.cast())) };
        let opaque_type = rffi_core::type_registry::get_or_alloc_type_index("fuzz.Opaque").unwrap();
        let opaque = |index| {
            // SAFETY: no deleter to call.
            Any::from(unsafe { ObjectRef::new_opaque(index, 16 as *mut _, None) })
        };
        let objects = vec![
            Any::from(RString::new("a string longer than seven bytes")),
            Any::from(Bytes::new(b"bytes longer than seven")),
            Any::from(Array::new(vec![
                Any::from(1i64),
                Any::from("x"),
                Any::from("a heap string in an array"),
            ])),
            Any::from(
                Map::new(vec![
                    (Any::from(1i64), Any::from("one")),
                    (Any::from("key"), Any::from(2.5)),
                ])
                .unwrap(),
            ),
            Any::from(Shape::new(&[2, 3])),
            Any::from(global("testing.echo")),
            c_function,
            Any::from(Error::new("ValueError", "a pooled error")),
            Any::from(Tensor::from_slice(&[1f32, 2., 3., 4., 5., 6.], &[2, 3]).unwrap()),
            opaque(opaque_type),
            opaque(kRFFIOpaquePyObject),
        ];
        let typed = Function::from_typed(
            |s: String, i: i64, f: f64, b: Vec<u8>| -> rffi_core::Result<i64> {
                Ok(s.len() as i64 + i.wrapping_add(f as i64) + b.len() as i64)
            },
        );
        let objects_fn = Function::from_typed(
            |a: Array, m: Map, t: Tensor, s: Shape| -> rffi_core::Result<i64> {
                Ok(a.len() as i64 + m.len() as i64 + t.ndim() as i64 + s.as_slice().len() as i64)
            },
        );
        let kinds =
            Function::from_typed(
                |d: rffi_core::DataType,
                 v: rffi_core::Device,
                 p: rffi_core::OpaquePtr,
                 o: Option<ObjectRef>|
                 -> rffi_core::Result<i64> {
                    Ok(i64::from(d.bits())
                        + i64::from(v.index())
                        + p.0 as i64 % 2
                        + o.is_some() as i64)
                },
            );
        let mut callees: Vec<(&'static str, Function)> = [
            "ffi.Array",
            "ffi.Map",
            "ffi.Shape",
            "ffi.ArraySize",
            "ffi.ArrayGetItem",
            "ffi.MapSize",
            "ffi.MapGetItem",
            "ffi.MapCount",
            "ffi.MapItems",
            "ffi.ErrorBacktrace",
            "testing.echo",
            "testing.nop",
            "testing.add_one",
            "testing.object_use_count",
        ]
        .into_iter()
        .map(|n| (n, global(n)))
        .collect();
        callees.push(("typed(str, int, float, bytes)", typed));
        callees.push(("typed(Array, Map, Tensor, Shape)", objects_fn));
        callees.push(("typed(DataType, Device, void*, Object?)", kinds));
        let tensor = objects[8].try_as::<Tensor>().unwrap();
        let dltensor = Box::leak(Box::new(*tensor.dl_tensor()));
        // The pool keeps the tensor (and so the DLTensor's arrays and data) alive.
        drop(tensor);
        let at_rest = objects.iter().map(count).collect();
        Pool {
            objects,
            at_rest,
            callees,
            dltensor,
        }
    }

    /// The pool object `sel` picks.
    pub fn object(&self, sel: u8) -> &Any {
        &self.objects[usize::from(sel) % self.objects.len()]
    }

    /// Asserts that every pool object holds the references it held at rest.
    pub fn assert_at_rest(&self) {
        for (i, (obj, &n)) in self.objects.iter().zip(&self.at_rest).enumerate() {
            assert_eq!(
                count(obj),
                n,
                "pool object {i} ({}) has {} references, not {n}: a reference was leaked or \
                 released twice",
                obj.view().type_name(),
                count(obj)
            );
        }
    }
}

fn count(obj: &Any) -> u32 {
    obj.view().as_object().expect("an object").strong_count()
}

/// The value of an object handle (type index from its header).
///
/// # Safety
/// `obj` is a live object.
pub unsafe fn object_value(obj: *mut RFFIObject) -> RFFIAny {
    let mut raw = rffi_core::any::NONE_RAW;
    // SAFETY: forwarded contract.
    raw.type_index = unsafe { (*obj).type_index };
    raw.v.v_obj = obj;
    raw
}
