//! The testing object types tvm-ffi's dataclass tests use, with its keys, fields, defaults and
//! field options: `testing.TestCxxClassBase` / `TestCxxClassDerived` / `TestCxxClassDerivedDerived`
//! (three levels of inheritance, defaults on the derived levels), `testing.TestCxxInitSubset`
//! (fields left out of `__init__`) and `testing.TestCxxKwOnly` (keyword-only fields). Their
//! Python classes are in `rffi.testing` (`_TestCxxClassBase`, ...). Every field is writable, as
//! tvm-ffi declares these types mutable.

use crate::reflection::Mut;

crate::object_type! {
    /// Two integer fields.
    pub struct TestCxxClassBase("testing.TestCxxClassBase") {
        /// An i64.
        pub v_i64: Mut<i64>,
        /// An i32.
        pub v_i32: Mut<i32>,
    }
}

crate::object_type! {
    /// `TestCxxClassBase` with two float fields, the second with a default.
    pub struct TestCxxClassDerived("testing.TestCxxClassDerived"): TestCxxClassBase {
        /// An f64.
        pub v_f64: Mut<f64>,
        /// An f32 (default 8).
        #[default = 8.0f64]
        pub v_f32: Mut<f32>,
    }
}

crate::object_type! {
    /// `TestCxxClassDerived` with a string (default "default") and a bool.
    pub struct TestCxxClassDerivedDerived("testing.TestCxxClassDerivedDerived"):
        TestCxxClassDerived {
        /// A string (default "default").
        #[default = "default"]
        pub v_str: Mut<String>,
        /// A bool.
        pub v_bool: Mut<bool>,
    }
}

crate::object_type! {
    /// One field taken by `__init__`, two that are not (with defaults).
    pub struct TestCxxInitSubset("testing.TestCxxInitSubset") {
        /// Given to `__init__`.
        pub required_field: Mut<i64>,
        /// Not in `__init__` (default -1).
        #[init_off]
        #[default = -1i64]
        pub optional_field: Mut<i64>,
        /// Not in `__init__` (default "default").
        #[init_off]
        #[default = "default"]
        pub note: Mut<String>,
    }
}

crate::object_type! {
    /// Four keyword-only fields, the last with a default (100).
    pub struct TestCxxKwOnly("testing.TestCxxKwOnly") {
        /// Keyword-only.
        #[kw_only]
        pub x: Mut<i64>,
        /// Keyword-only.
        #[kw_only]
        pub y: Mut<i64>,
        /// Keyword-only.
        #[kw_only]
        pub z: Mut<i64>,
        /// Keyword-only (default 100).
        #[kw_only]
        #[default = 100i64]
        pub w: Mut<i64>,
    }
}
