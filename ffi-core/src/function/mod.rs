//! Function objects: made from packed Rust closures, typed Rust closures, or a C safe-call pointer
//! with a context and deleter; called through the one calling convention of the ABI.
//!
//! A Rust closure's `safe_call` is monomorphized for the closure (one indirect call, no allocation
//! per call); it catches panics and turns errors into the raised-error slot. Every function this
//! runtime makes shares one header deleter, `function_deleter`, which is how a function object is
//! recognized as ours (to record its name) without reading past the ABI cell of a foreign one.
//!
//! This module holds the Function handle and its calls; `body` the bodies of the functions this
//! runtime makes and their `safe_call` entry points; `typed` the conversion of typed closures.

mod body;
mod typed;

pub(crate) use body::{c_call, c_name, c_target};
pub use typed::{IntoCallResult, TypedFn};

use crate::abi::*;
use crate::any::{Any, AnyView, TypeMismatch, NONE_RAW};
use crate::error::{install_panic_hook, set_raised, take_raised, Error, Result};
use crate::object::{static_object_type, ObjectRef};
use crate::schema::TypeSchema;
use body::{
    alloc_function, function_deleter, new_head, rust_call, CFunction, FunctionHead, RustFunction,
};
use core::ffi::c_void;

/// An owned reference to a Function object (type index 68).
#[derive(Clone)]
#[repr(transparent)]
pub struct Function(ObjectRef);
static_object_type!(Function, kRFFIFunction, "ffi.Function");
crate::any::object_any_conversions!(Function);

/// Why a call failed before or inside the callee.
pub enum CallError {
    /// The callee raised this error.
    Raised(Error),
    /// Argument `index` has the wrong type.
    ArgType {
        /// The argument's position, from 0.
        index: usize,
        /// What the argument should have been and what it was.
        mismatch: TypeMismatch,
    },
    /// Wrong number of arguments.
    ArgCount {
        /// How many the function takes.
        expected: usize,
        /// How many the call gave.
        got: usize,
    },
}

impl From<Error> for CallError {
    fn from(e: Error) -> Self {
        CallError::Raised(e)
    }
}

impl From<anyhow::Error> for CallError {
    #[track_caller]
    fn from(e: anyhow::Error) -> Self {
        CallError::Raised(e.into())
    }
}

impl Function {
    /// A function over borrowed arguments (`args[i]` is valid during the call only).
    pub fn from_packed<F>(f: F) -> Function
    where
        F: Fn(&[AnyView<'_>]) -> Result<Any> + Send + Sync + 'static,
    {
        Self::from_call(
            move |args: &[AnyView<'_>]| f(args).map_err(CallError::Raised),
            None,
        )
    }

    /// A function from a typed closure, e.g. `|a: i64, b: f64| -> Result<f64> { .. }`.
    /// Arguments are converted with `FromAny`; a wrong count or type is a TypeError naming the
    /// function, the argument position, and both types.
    pub fn from_typed<F, Args>(f: F) -> Function
    where
        F: TypedFn<Args>,
    {
        Self::from_call(
            move |args: &[AnyView<'_>]| f.call_packed(args),
            Some(F::signature),
        )
    }

    fn from_call<F>(f: F, signature: Option<fn() -> TypeSchema>) -> Function
    where
        F: Fn(&[AnyView<'_>]) -> Result<Any, CallError> + Send + Sync + 'static,
    {
        install_panic_hook();
        crate::panics::record_catching_frame(rust_call::<F> as *const () as usize);
        alloc_function(RustFunction {
            head: new_head::<RustFunction<F>>(rust_call::<F>, signature),
            f,
        })
    }

    /// A function from a C safe-call pointer: `call(context, args, n, result)`. `deleter`, if any,
    /// runs on `context` once when the function dies.
    ///
    /// # Safety
    /// `call` must follow the calling convention; `context` must stay valid until `deleter` runs
    /// and be usable from any thread.
    pub unsafe fn from_safe_call(
        context: *mut c_void,
        call: unsafe extern "C" fn(*mut c_void, *const RFFIAny, i32, *mut RFFIAny) -> i32,
        deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    ) -> Function {
        alloc_function(CFunction {
            head: new_head::<CFunction>(c_call, None),
            context,
            call,
            deleter,
        })
    }

    fn own_head(&self) -> Option<&FunctionHead> {
        // SAFETY: the header is readable for every object; our deleter marks a FunctionHead body.
        unsafe {
            let ours: unsafe extern "C" fn(_, _) = function_deleter;
            (*self.0.as_ptr())
                .deleter
                .is_some_and(|f| std::ptr::fn_addr_eq(f, ours))
                .then(|| &*self.0.cell_ptr::<FunctionHead>())
        }
    }

    /// The name the function was first registered under, for functions made by this runtime.
    pub fn name(&self) -> Option<&str> {
        self.own_head().and_then(|h| h.name.get()).map(|n| &**n)
    }

    /// The type schema of a function made from a typed Rust closure:
    /// `Function(Some((result, args)))`.
    pub fn signature(&self) -> Option<TypeSchema> {
        self.own_head().and_then(|h| h.signature).map(|s| s())
    }

    /// Records the name used in error messages (the first one wins).
    pub(crate) fn set_name(&self, name: &str) {
        if let Some(head) = self.own_head() {
            let _ = head.name.set(name.into());
        }
    }

    /// Calls through the ABI with borrowed arguments.
    pub fn call_views(&self, args: &[AnyView<'_>]) -> Result<Any> {
        let mut result = NONE_RAW;
        // SAFETY: AnyView is repr(transparent) over RFFIAny.
        let rc = unsafe { self.call_raw(args.as_ptr().cast(), args.len(), &mut result) };
        if rc == 0 {
            // SAFETY: on success the callee wrote an owned value.
            Ok(unsafe { Any::from_raw(result) })
        } else {
            Err(take_raised().unwrap_or_else(|| {
                Error::runtime_error("function failed without raising an error")
            }))
        }
    }

    /// Calls with owned arguments (borrowed for the duration of the call).
    pub fn call(&self, args: &[Any]) -> Result<Any> {
        // SAFETY: Any and AnyView share the RFFIAny layout; the views live as long as `args`.
        let views = unsafe { core::slice::from_raw_parts(args.as_ptr().cast(), args.len()) };
        self.call_views(views)
    }

    /// The raw call: `cell.safe_call(self, args, n, result)`.
    ///
    /// # Safety
    /// `args` must point to `n` valid values and `result` to a value holding no object.
    #[inline]
    pub unsafe fn call_raw(&self, args: *const RFFIAny, n: usize, result: *mut RFFIAny) -> i32 {
        let Ok(n) = i32::try_from(n) else {
            set_raised(Error::value_error("too many arguments"));
            return -1;
        };
        // SAFETY: the cell is at offset 24 of every function object.
        let cell = unsafe { &*self.0.cell_ptr::<RFFIFunctionCell>() };
        match cell.safe_call {
            // SAFETY: forwarded contract; the handle is the function object itself.
            Some(f) => unsafe { f(self.0.as_ptr().cast(), args, n, result) },
            None => {
                set_raised(Error::runtime_error("function object has no safe_call"));
                -1
            }
        }
    }

    /// The Function object's address (this reference keeps it alive).
    pub fn as_raw(&self) -> *mut RFFIObject {
        self.0.as_ptr()
    }
}

impl core::fmt::Debug for Function {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Function({})", self.name().unwrap_or("<anonymous>"))
    }
}
