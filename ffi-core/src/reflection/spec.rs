//! What `object_type!` expands to: builders for one field, one method and the type's metadata,
//! each registering itself. Field options are method names: `#[default = v]`,
//! `#[default_factory = f]`, `#[kw_only]`, `#[init_off]`, `#[repr_off]`, `#[compare_off]`,
//! `#[hash_off]`, `#[structural_eq_ignore]`, `#[structural_eq_def]`, `#[structural_eq_def_simple]`,
//! `#[structural_eq_identity]`,
//! and `#[doc = ...]` (what `///` becomes).

use super::object_def::{field_getter, FieldValue, Obj, ObjectDef};
use crate::abi::*;
use crate::error::{Error, Result};
use crate::host::byte_array;
use crate::{Any, Function};

/// One field of an `object_type!`.
pub struct FieldSpec {
    name: &'static str,
    doc: String,
    schema: String,
    info: RFFIFieldInfo,
    default: Option<Any>,
}

impl FieldSpec {
    /// A field `name` of type `T` at `offset` in the struct: frozen unless `T` is `Mut<_>`.
    pub fn new<T: FieldValue>(name: &'static str, offset: usize) -> FieldSpec {
        let setter = T::setter();
        let mut flags = 0;
        if setter.is_some() {
            flags |= kRFFIFieldFlagBitMaskWritable;
        }
        FieldSpec {
            name,
            doc: String::new(),
            schema: T::schema(),
            info: RFFIFieldInfo {
                name: byte_array(b""),
                doc: byte_array(b""),
                metadata: byte_array(b""),
                flags,
                size: core::mem::size_of::<T>() as i64,
                alignment: core::mem::align_of::<T>() as i64,
                offset: offset as i64,
                getter: Some(field_getter::<T>),
                setter: setter.map_or(core::ptr::null_mut(), |s| s as *mut core::ffi::c_void),
                default_value_or_factory: crate::any::NONE_RAW,
                field_static_type_index: T::STATIC_INDEX,
            },
            default: None,
        }
    }

    /// Adds a line to the docstring (one `///` line each).
    pub fn doc(mut self, line: &str) -> Self {
        if !self.doc.is_empty() {
            self.doc.push('\n');
        }
        self.doc.push_str(line.strip_prefix(' ').unwrap_or(line));
        self
    }

    /// `#[default = v]`: the value of the field when an object is made without one.
    pub fn default(mut self, v: impl Into<Any>) -> Self {
        self.info.flags |= kRFFIFieldFlagBitMaskHasDefault;
        self.default = Some(v.into());
        self
    }

    /// `#[default_factory = f]`: `f()` makes the default for each new object.
    pub fn default_factory<F, R>(mut self, f: F) -> Self
    where
        F: crate::function::TypedFn<()> + Fn() -> R,
    {
        self.info.flags |=
            kRFFIFieldFlagBitMaskHasDefault | kRFFIFieldFlagBitMaskDefaultFromFactory;
        self.default = Some(Function::from_typed(f).into());
        self
    }

    /// `#[kw_only]`: a keyword-only parameter of generated constructors.
    pub fn kw_only(mut self) -> Self {
        self.info.flags |= kRFFIFieldFlagBitMaskKwOnly;
        self
    }
    /// `#[init_off]`: not a parameter of generated constructors.
    pub fn init_off(mut self) -> Self {
        self.info.flags |= kRFFIFieldFlagBitMaskInitOff;
        self
    }
    /// `#[repr_off]`: left out of `repr`.
    pub fn repr_off(mut self) -> Self {
        self.info.flags |= kRFFIFieldFlagBitMaskReprOff;
        self
    }
    /// `#[compare_off]`: left out of `==`.
    pub fn compare_off(mut self) -> Self {
        self.info.flags |= kRFFIFieldFlagBitMaskCompareOff;
        self
    }
    /// `#[hash_off]`: left out of `hash`.
    pub fn hash_off(mut self) -> Self {
        self.info.flags |= kRFFIFieldFlagBitMaskHashOff;
        self
    }
    /// Left out of structural equality and hashing.
    pub fn structural_eq_ignore(mut self) -> Self {
        self.info.flags |= kRFFIFieldFlagBitMaskSEqHashIgnore;
        self
    }
    /// A definition site: free variables first met inside are mapped to each other.
    pub fn structural_eq_def(mut self) -> Self {
        self.info.flags |= kRFFIFieldFlagBitMaskSEqHashDef;
        self
    }
    /// A simple definition site: the variable held is defined; its own fields are uses.
    pub fn structural_eq_def_simple(mut self) -> Self {
        self.info.flags |= kRFFIFieldFlagBitMaskSEqHashDefSimple;
        self
    }
    /// Compared structurally by identity (the same object), not by contents.
    pub fn structural_eq_identity(mut self) -> Self {
        self.info.flags |= kRFFIFieldFlagBitMaskSEqHashIdentity;
        self
    }

    /// Registers the field in type `type_index`, with its schema in its metadata.
    pub fn register(mut self, type_index: i32) -> Result<()> {
        let metadata = format!(
            r#"{{"type_schema":{}}}"#,
            crate::schema::json_quote(&self.schema)
        );
        self.info.name = byte_array(self.name.as_bytes());
        self.info.doc = byte_array(self.doc.as_bytes());
        self.info.metadata = byte_array(metadata.as_bytes());
        if let Some(d) = &self.default {
            self.info.default_value_or_factory = *d.as_raw();
        }
        // SAFETY: every pointer in `info` borrows from `self` or `metadata`, alive for the call.
        unsafe { super::register_field(type_index, &self.info) }
    }
}

/// One method of an `object_type!`: `#[static_method]` marks a static one, `#[type_attr]` a type
/// attribute (a hook such as `__ffi_hash__`).
pub struct MethodSpec {
    name: &'static str,
    doc: String,
    flags: i64,
    function: Function,
    /// `#[type_attr]`: a type attribute, not a method.
    type_attr: bool,
}

impl MethodSpec {
    /// A method `name` calling `function` (an instance method gets the object first).
    pub fn new(name: &'static str, function: Function) -> MethodSpec {
        MethodSpec {
            name,
            doc: String::new(),
            flags: 0,
            function,
            type_attr: false,
        }
    }
    /// Adds a line to the docstring (one `///` line each).
    pub fn doc(mut self, line: &str) -> Self {
        if !self.doc.is_empty() {
            self.doc.push('\n');
        }
        self.doc.push_str(line.strip_prefix(' ').unwrap_or(line));
        self
    }
    /// `#[static_method]`: called without an object.
    pub fn static_method(mut self) -> Self {
        self.flags |= kRFFIFieldFlagBitMaskIsStaticMethod;
        self
    }
    /// `#[type_attr]`: registered as the type attribute of its name (a hook the runtime looks
    /// up by type, such as `__ffi_hash__`), not as a method.
    pub fn type_attr(mut self) -> Self {
        self.type_attr = true;
        self
    }
    /// Registers the method in type `type_index`, with its signature in its metadata.
    pub fn register(self, type_index: i32) -> Result<()> {
        if self.type_attr {
            return super::type_attr::register_type_attr(
                type_index,
                self.name,
                self.function.into(),
            );
        }
        let value = Any::from(self.function.clone());
        // The method's signature, as tvm-ffi records it: `{"type_schema": "<schema JSON>"}`.
        let metadata = self.function.signature().map_or(String::new(), |s| {
            format!(
                r#"{{"type_schema":{}}}"#,
                crate::schema::json_quote(&s.to_json())
            )
        });
        let info = RFFIMethodInfo {
            name: byte_array(self.name.as_bytes()),
            doc: byte_array(self.doc.as_bytes()),
            metadata: byte_array(metadata.as_bytes()),
            flags: self.flags,
            method: *value.as_raw(),
        };
        // SAFETY: every pointer in `info` borrows from `self` / `value`, alive for the call.
        unsafe { super::register_method(type_index, &info) }
    }
}

/// The type-wide metadata of an `object_type!`: its docstring, its real size (`total_size`, what
/// reflection reports) and a `creator` that refuses: a Rust type's fields need Rust's
/// construction and drop, so `RFFIObjectCreate` cannot make one from zeroed memory; its objects
/// are made by its `__ffi_init__` or in Rust.
pub fn register_type_doc(type_index: i32, doc_lines: &[&str], size: usize) -> Result<()> {
    let doc = doc_lines
        .iter()
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let total_size = i32::try_from(size).map_err(|_| {
        crate::Error::value_error(format!(
            "`{}` is {size} bytes, more than a type's total_size can say",
            crate::type_registry::type_name(type_index)
        ))
    })?;
    let meta = RFFITypeMetadata {
        doc: byte_array(doc.as_bytes()),
        creator: Some(refuse_generic_creation),
        total_size,
        structural_eq_hash_kind: 0,
    };
    // SAFETY: the doc borrows a local alive for the call.
    unsafe { super::register_metadata(type_index, &meta) }
}

/// Registers `T`'s field constructor (`__ffi_from_fields__`): a Function taking every field's
/// value in `all_fields` order and returning a new `T`.
pub fn register_from_fields<T: ObjectDef>(type_index: i32) -> Result<()> {
    let f = Function::from_packed(|args| {
        let mut at = 0;
        let v = T::from_field_values(args, &mut at)?;
        if at != args.len() {
            return Err(Error::type_error(format!(
                "`{}` from fields: {} values for {at} fields",
                T::TYPE_KEY,
                args.len()
            )));
        }
        Ok(Obj::new(v).into())
    });
    super::type_attr::register_type_attr(type_index, super::type_attr::FROM_FIELDS_ATTR, f.into())
}

/// The `creator` of every `object_type!` (see `register_type_doc`).
unsafe extern "C" fn refuse_generic_creation(_out: *mut RFFIObjectHandle) -> i32 {
    crate::error::set_raised(crate::Error::type_error(
        "a type declared in Rust cannot be created generically: make its objects with its \
         `__ffi_init__` or in Rust",
    ));
    -1
}

/// Whether a type already has members (declared by another image of the same crate): then its
/// declaration is not repeated.
pub fn has_members(type_index: i32) -> bool {
    crate::type_registry::type_info(type_index)
        .is_some_and(|i| i.num_fields > 0 || i.num_methods > 0 || !i.metadata.is_null())
}

/// Declares an object type in Rust: a `#[repr(C)]` struct starting with its header (or, after
/// `: Parent`, with the parent type as field `base`), registered under its key with its fields
/// (read by every language; `Mut<T>` fields are writable) and methods.
///
/// ```
/// use rffi_core::reflection::{Obj, ObjectHeader};
/// rffi_core::object_type! {
///     /// A point in the plane.
///     pub struct Point("doc.Point") {
///         /// The x coordinate.
///         pub x: f64,
///         #[default = 0.0]
///         pub y: f64,
///     }
///     methods {
///         /// The distance from the origin.
///         "norm" => |p: Obj<Point>| (p.x * p.x + p.y * p.y).sqrt();
///     }
/// }
/// let p = Obj::new(Point { base: ObjectHeader::default(), x: 3.0, y: 4.0 });
/// let n = rffi_core::reflection::call_method(p.as_object(), "norm", &[]).unwrap();
/// assert_eq!(n.try_as::<f64>().unwrap(), 5.0);
/// ```
#[macro_export]
macro_rules! object_type {
    (
        $(#[doc = $doc:literal])*
        $vis:vis struct $name:ident ($key:literal) $(: $parent:ty)? {
            $(
                $(#[$fattr:ident $(= $fval:expr)?])*
                $fvis:vis $field:ident : $fty:ty
            ),* $(,)?
        }
        $(methods {
            $(
                $(#[$mattr:ident $(= $mval:expr)?])*
                $mname:literal => $mfn:expr
            );* $(;)?
        })?
    ) => {
        $crate::__object_struct! {
            [$(#[doc = $doc])* $vis struct $name [$($parent)?]] []
            $($(#[$fattr $(= $fval)?])* $fvis $field: $fty,)*
        }

        // SAFETY: `#[repr(C)]` with the header (or the parent, which starts with it) first; the
        // index is the one registered for the key.
        unsafe impl $crate::reflection::ObjectDef for $name {
            const TYPE_KEY: &'static str = $key;
            fn type_index() -> i32 {
                static INDEX: ::std::sync::OnceLock<i32> = ::std::sync::OnceLock::new();
                if let Some(&index) = INDEX.get() {
                    return index;
                }
                // Every declared type first (this one included), unless that is under way.
                $crate::reflection::declare_static_types();
                *INDEX.get_or_init(|| {
                    let declare = || -> $crate::Result<i32> {
                        let parent = $crate::__object_parent_index!($($parent)?);
                        let index = $crate::type_registry::register_type($key, parent)?;
                        if $crate::reflection::spec::has_members(index) {
                            return Ok(index);
                        }
                        $crate::reflection::spec::register_type_doc(
                            index, &[$($doc),*], ::core::mem::size_of::<$name>())?;
                        $(
                            let spec = $crate::reflection::spec::FieldSpec::new::<$fty>(
                                stringify!($field), ::core::mem::offset_of!($name, $field));
                            $(let spec = spec.$fattr($($fval)?);)*
                            spec.register(index)?;
                        )*
                        $($(
                            let spec = $crate::reflection::spec::MethodSpec::new(
                                $mname, $crate::Function::from_typed($mfn));
                            $(let spec = spec.$mattr($($mval)?);)*
                            spec.register(index)?;
                        )*)?
                        $crate::reflection::spec::register_from_fields::<$name>(index)?;
                        Ok(index)
                    };
                    declare().unwrap_or_else(|e| {
                        panic!("registering object type `{}`: {}", $key, e.message())
                    })
                })
            }

            fn from_field_values(
                values: &[$crate::AnyView<'_>],
                at: &mut usize,
            ) -> $crate::Result<Self> {
                let base = $crate::__object_base_from_fields!(values, at; $($parent)?);
                $(
                    let $field = <$fty as $crate::reflection::FieldValue>::from_value(
                        $crate::reflection::next_field_value(values, at, $key, stringify!($field))?,
                    )
                    .map_err(|e| {
                        $crate::reflection::field_value_error($key, stringify!($field), e)
                    })?;
                )*
                Ok($name { base, $($field,)* })
            }
        }

        $crate::inventory::submit! {
            $crate::reflection::StaticType {
                register: <$name as $crate::reflection::ObjectDef>::type_index,
            }
        }
    };
}

/// The struct of an `object_type!`: its fields keep their doc comments and drop the field
/// options (`#[default = ..]`, `#[kw_only]`, ...), which are registration, not Rust attributes.
#[doc(hidden)]
#[macro_export]
macro_rules! __object_struct {
    ([$(#[$sattr:meta])* $vis:vis struct $name:ident [$($parent:ty)?]] [$($out:tt)*]) => {
        $(#[$sattr])*
        #[repr(C)]
        $vis struct $name {
            /// The object header, or the parent type this one extends.
            pub base: $crate::__object_base!($($parent)?),
            $($out)*
        }
    };
    ($head:tt [$($out:tt)*] #[doc = $doc:expr] $($rest:tt)*) => {
        $crate::__object_struct! { $head [$($out)* #[doc = $doc]] $($rest)* }
    };
    ($head:tt [$($out:tt)*] #[$option:ident $(= $value:expr)?] $($rest:tt)*) => {
        $crate::__object_struct! { $head [$($out)*] $($rest)* }
    };
    ($head:tt [$($out:tt)*] $fvis:vis $field:ident : $fty:ty, $($rest:tt)*) => {
        $crate::__object_struct! { $head [$($out)* $fvis $field: $fty,] $($rest)* }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __object_base {
    () => {
        $crate::reflection::ObjectHeader
    };
    ($parent:ty) => {
        $parent
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __object_base_from_fields {
    ($values:ident, $at:ident;) => {
        $crate::reflection::ObjectHeader::default()
    };
    ($values:ident, $at:ident; $parent:ty) => {
        <$parent as $crate::reflection::ObjectDef>::from_field_values($values, $at)?
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __object_parent_index {
    () => {
        ::core::option::Option::None
    };
    ($parent:ty) => {
        ::core::option::Option::Some(<$parent as $crate::reflection::ObjectDef>::type_index())
    };
}
