//! The bodies of the functions this runtime makes (a Rust closure, or a C callback with its
//! context), all behind one `FunctionHead` and one header deleter, and their `safe_call` entry
//! points: `rust_call::<F>` (catches panics, fills the raised slot) and `c_call`.

use super::{CallError, Function};
use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::error::{set_raised, Error, Result};
use crate::object::{alloc_object_with_deleter, obj_box_deleter};
use crate::schema::TypeSchema;
use core::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// The part of the body shared by every function this runtime makes.
#[repr(C)]
pub(super) struct FunctionHead {
    pub(super) cell: RFFIFunctionCell,
    /// The deleter for the full body type (`obj_box_deleter::<RustFunction<F>>` or the C one).
    pub(super) release: unsafe extern "C" fn(*mut c_void, i32),
    /// The global name, set when first registered; used in error messages.
    pub(super) name: OnceLock<Box<str>>,
    /// The type schema of a typed Rust closure (built only when asked for).
    pub(super) signature: Option<fn() -> TypeSchema>,
}

#[repr(C)]
pub(super) struct RustFunction<F> {
    pub(super) head: FunctionHead,
    pub(super) f: F,
}

#[repr(C)]
pub(super) struct CFunction {
    pub(super) head: FunctionHead,
    pub(super) context: *mut c_void,
    pub(super) call: unsafe extern "C" fn(*mut c_void, *const RFFIAny, i32, *mut RFFIAny) -> i32,
    pub(super) deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

impl Drop for CFunction {
    fn drop(&mut self) {
        if let Some(d) = self.deleter {
            // SAFETY: the creator handed us the context together with its deleter, to be called
            // once when the function dies.
            unsafe { d(self.context) };
        }
    }
}

pub(super) unsafe extern "C" fn function_deleter(obj: *mut c_void, flags: i32) {
    let head = obj
        .cast::<RFFIObject>()
        .wrapping_add(1)
        .cast::<FunctionHead>();
    // SAFETY: installed only on bodies that start with a FunctionHead; `release` is the deleter
    // made for the full body type.
    unsafe { ((*head).release)(obj, flags) }
}

fn name_of(head: &FunctionHead) -> &str {
    head.name.get().map_or("<anonymous>", |n| n)
}

/// The `safe_call` of a Rust closure `F`.
///
/// # Safety
/// `handle` is a function object made by `from_call::<F>`; `args`/`result` follow the calling
/// convention.
pub(super) unsafe extern "C" fn rust_call<F>(
    handle: *mut c_void,
    args: *const RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32
where
    F: Fn(&[AnyView<'_>]) -> Result<Any, CallError>,
{
    // SAFETY: forwarded contract; the body of the object is a repr(C) RustFunction<F>.
    let this = unsafe { &*handle.cast::<RFFIObject>().add(1).cast::<RustFunction<F>>() };
    // A plain `catch_unwind`: the panic hook finds this frame on the stack (`panics`), so the
    // call pays nothing for staying quiet.
    #[allow(clippy::disallowed_methods)]
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        if num_args < 0 || (num_args > 0 && args.is_null()) {
            return Err(CallError::Raised(Error::value_error(
                "invalid argument array (negative count or NULL pointer)",
            )));
        }
        // SAFETY: the caller passes `num_args` valid values that outlive the call.
        let views = unsafe { AnyView::slice_from_raw(args, num_args as usize) };
        (this.f)(views)
    }));
    let err = match outcome {
        Ok(Ok(value)) => {
            if !result.is_null() {
                // SAFETY: the caller owns `result` and zeroed it (no object to release).
                unsafe { result.write(value.into_raw()) };
            }
            return 0;
        }
        Ok(Err(e)) => describe_call_error(e, &this.head),
        Err(payload) => Error::from_panic(payload),
    };
    err.note_function(name_of(&this.head));
    set_raised(err);
    -1
}

#[cold]
fn describe_call_error(e: CallError, head: &FunctionHead) -> Error {
    let name = name_of(head);
    // The signature, where the function has one: `name(_0: int, _1: float) -> str`.
    let signature = || match head.signature {
        Some(s) => format!(
            " (signature: {})",
            crate::function_metadata::render_signature(name, &s(), &[])
        ),
        None => String::new(),
    };
    match e {
        CallError::Raised(e) => e,
        CallError::ArgType { index, mismatch } => Error::type_error(format!(
            "Mismatched type on argument #{index} when calling `{name}`: {mismatch}{}",
            signature()
        )),
        CallError::ArgCount { expected, got } => Error::type_error(format!(
            "`{name}` expects {expected} argument{} but {got} {} given{}",
            if expected == 1 { "" } else { "s" },
            if got == 1 { "was" } else { "were" },
            signature()
        )),
    }
}

/// The `safe_call` of a function made from a C callback: passes the callback its own context,
/// through the runtime's one entry into foreign code (`foreign::call_c`).
///
/// # Safety
/// `handle` is a function object made by `from_safe_call`; `args`/`result` follow the calling
/// convention.
pub(crate) unsafe extern "C" fn c_call(
    handle: *mut c_void,
    args: *const RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { crate::foreign::call_c(handle, args, num_args, result) }
}

/// The creator's entry point and context of a function made by `from_safe_call` (whose cell's
/// `safe_call` is `c_call`).
///
/// # Safety
/// `handle` is a live function object made by `from_safe_call`.
#[inline(always)]
pub(crate) unsafe fn c_target(
    handle: *mut c_void,
) -> (
    unsafe extern "C" fn(*mut c_void, *const RFFIAny, i32, *mut RFFIAny) -> i32,
    *mut c_void,
) {
    // SAFETY: the body is a repr(C) CFunction (contract).
    let this = unsafe { &*handle.cast::<RFFIObject>().add(1).cast::<CFunction>() };
    (this.call, this.context)
}

/// How error messages name a function made by `from_safe_call`.
///
/// # Safety
/// `handle` is a live function object made by `from_safe_call`.
pub(crate) unsafe fn c_name(handle: *mut c_void) -> String {
    // SAFETY: the body is a repr(C) CFunction (contract).
    let this = unsafe { &*handle.cast::<RFFIObject>().add(1).cast::<CFunction>() };
    match this.head.name.get() {
        Some(n) => format!("the C function `{n}`"),
        None => "an unnamed C function".to_owned(),
    }
}

pub(super) fn new_head<T>(
    safe_call: unsafe extern "C" fn(*mut c_void, *const RFFIAny, i32, *mut RFFIAny) -> i32,
    signature: Option<fn() -> TypeSchema>,
) -> FunctionHead {
    FunctionHead {
        cell: RFFIFunctionCell {
            safe_call: Some(safe_call),
            cpp_call: core::ptr::null_mut(),
        },
        release: obj_box_deleter::<T>,
        name: OnceLock::new(),
        signature,
    }
}

pub(super) fn alloc_function<T>(body: T) -> Function {
    // SAFETY: `function_deleter` forwards to `head.release`, which is `obj_box_deleter::<T>`.
    Function(unsafe { alloc_object_with_deleter(kRFFIFunction, body, function_deleter) })
}
