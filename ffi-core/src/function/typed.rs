//! Typed closures: `TypedFn` converts a call's arguments to a closure's parameter types (naming
//! the argument that does not fit), `IntoCallResult` its result back to a value.

use super::{CallError, Function};
use crate::any::{Any, AnyView, FromAny};
use crate::error::{Error, Result};
use crate::object::ObjectRef;
use crate::schema::TypeSchema;

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
