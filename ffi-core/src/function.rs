//! Function objects: made from packed Rust closures, typed Rust closures, or a C safe-call pointer
//! with a context and deleter; called through the one calling convention of the ABI.
//!
//! A Rust closure's `safe_call` is monomorphized for the closure (one indirect call, no allocation
//! per call); it catches panics and turns errors into the raised-error slot. Every function this
//! runtime makes shares one header deleter, `function_deleter`, which is how a function object is
//! recognized as ours (to record its name) without reading past the ABI cell of a foreign one.

use crate::abi::*;
use crate::any::{Any, AnyView, FromAny, TypeMismatch, NONE_RAW};
use crate::error::{install_panic_hook, set_raised, take_raised, Error, Result};
use crate::object::{alloc_object_with_deleter, obj_box_deleter, static_object_type, ObjectRef};
use crate::schema::TypeSchema;
use core::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

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

/// The part of the body shared by every function this runtime makes.
#[repr(C)]
struct FunctionHead {
    cell: RFFIFunctionCell,
    /// The deleter for the full body type (`obj_box_deleter::<RustFunction<F>>` or the C one).
    release: unsafe extern "C" fn(*mut c_void, i32),
    /// The global name, set when first registered; used in error messages.
    name: OnceLock<Box<str>>,
    /// The type schema of a typed Rust closure (built only when asked for).
    signature: Option<fn() -> TypeSchema>,
}

#[repr(C)]
struct RustFunction<F> {
    head: FunctionHead,
    f: F,
}

#[repr(C)]
struct CFunction {
    head: FunctionHead,
    context: *mut c_void,
    call: unsafe extern "C" fn(*mut c_void, *const RFFIAny, i32, *mut RFFIAny) -> i32,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
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

unsafe extern "C" fn function_deleter(obj: *mut c_void, flags: i32) {
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
unsafe extern "C" fn rust_call<F>(
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

fn new_head<T>(
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

fn alloc_function<T>(body: T) -> Function {
    // SAFETY: `function_deleter` forwards to `head.release`, which is `obj_box_deleter::<T>`.
    Function(unsafe { alloc_object_with_deleter(kRFFIFunction, body, function_deleter) })
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

// ---------------------------------------------------------------------------------------------
// Typed closures

/// What a typed closure may return: a value convertible to `Any`, or a `Result` of one.
pub trait IntoCallResult {
    /// The returned value as an `Any`, or the error it carries.
    fn into_call_result(self) -> Result<Any, CallError>;
    /// The schema of the result, for signatures (`Any` where unknown).
    fn result_schema() -> TypeSchema
    where
        Self: Sized,
    {
        TypeSchema::Any
    }
}

impl<T: IntoCallResult, E: Into<Error>> IntoCallResult for core::result::Result<T, E> {
    #[inline]
    #[track_caller]
    fn into_call_result(self) -> Result<Any, CallError> {
        match self {
            Ok(v) => v.into_call_result(),
            Err(e) => Err(CallError::Raised(e.into())),
        }
    }
    fn result_schema() -> TypeSchema {
        T::result_schema()
    }
}

macro_rules! plain_results {
    ($($t:ty),*) => {$(
        impl IntoCallResult for $t {
            #[inline]
            fn into_call_result(self) -> Result<Any, CallError> {
                Ok(self.into())
            }
            fn result_schema() -> TypeSchema {
                <$t as FromAny>::type_schema()
            }
        }
    )*};
}
impl IntoCallResult for &'static str {
    #[inline]
    fn into_call_result(self) -> Result<Any, CallError> {
        Ok(self.into())
    }
    fn result_schema() -> TypeSchema {
        TypeSchema::Str
    }
}
plain_results!(
    (),
    bool,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    isize,
    f32,
    f64,
    String,
    Any,
    Function,
    Error,
    ObjectRef,
    crate::Device,
    crate::DataType,
    crate::RString,
    crate::Bytes,
    crate::Array,
    crate::Map,
    crate::Shape,
    crate::OpaquePtr,
    crate::Tensor,
    crate::TensorMut,
    crate::Module,
    crate::List,
    crate::Dict
);

impl<T: IntoCallResult + Into<Any>> IntoCallResult for Option<T> {
    #[inline]
    fn into_call_result(self) -> Result<Any, CallError> {
        Ok(self.map_or_else(Any::none, Into::into))
    }
    fn result_schema() -> TypeSchema {
        TypeSchema::Optional(Box::new(T::result_schema()))
    }
}

/// Closures callable with converted arguments; implemented for `Fn(A0, .., An) -> R`, n <= 8.
pub trait TypedFn<Args>: Send + Sync + 'static {
    /// Converts `args` to the closure's parameter types and calls it (a count or type mismatch names
    /// the argument).
    fn call_packed(&self, args: &[AnyView<'_>]) -> Result<Any, CallError>;
    /// `Function(Some((result, args)))` from the closure's types.
    fn signature() -> TypeSchema
    where
        Self: Sized;
}

#[inline]
fn arg<T: FromAny>(args: &[AnyView<'_>], index: usize) -> Result<T, CallError> {
    T::from_any(&args[index]).map_err(|mismatch| CallError::ArgType { index, mismatch })
}

macro_rules! typed_fn {
    ($n:expr; $($a:ident $i:tt),*) => {
        impl<Func, R, $($a),*> TypedFn<($($a,)*)> for Func
        where
            Func: Fn($($a),*) -> R + Send + Sync + 'static,
            R: IntoCallResult,
            $($a: FromAny,)*
        {
            #[inline]
            #[allow(unused_variables)]
            fn call_packed(&self, args: &[AnyView<'_>]) -> Result<Any, CallError> {
                if args.len() != $n {
                    return Err(CallError::ArgCount { expected: $n, got: args.len() });
                }
                (self)($(arg::<$a>(args, $i)?),*).into_call_result()
            }

            fn signature() -> TypeSchema {
                TypeSchema::Function(Some((Box::new(R::result_schema()), vec![$($a::type_schema()),*])))
            }
        }
    };
}
typed_fn!(0;);
typed_fn!(1; A0 0);
typed_fn!(2; A0 0, A1 1);
typed_fn!(3; A0 0, A1 1, A2 2);
typed_fn!(4; A0 0, A1 1, A2 2, A3 3);
typed_fn!(5; A0 0, A1 1, A2 2, A3 3, A4 4);
typed_fn!(6; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5);
typed_fn!(7; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6);
typed_fn!(8; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7);
