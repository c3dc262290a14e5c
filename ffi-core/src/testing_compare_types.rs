//! Object types for the recursive comparisons' tests, as tvm-ffi's tests name them: fields left
//! out of `==` or `hash` (`testing.TestCompare`, `testing.TestHash`), the comparison hooks
//! (`testing.TestCustomHash`, `testing.TestCustomCompare`, `testing.TestEqWithoutHash`).

use crate::reflection::{Obj, ObjectHeader};
use crate::{Function, Result};

crate::object_type! {
    /// `ignored_field` is left out of `==`, ordering and `hash`.
    pub struct TestCompare("testing.TestCompare") {
        /// Compared.
        pub key: i64,
        /// Compared.
        pub name: String,
        /// Not compared.
        #[compare_off]
        pub ignored_field: i64,
    }
    methods {
        /// Makes one from its fields, in order.
        #[static_method]
        "__ffi_init__" => |key: i64, name: String, ignored_field: i64| Obj::new(TestCompare {
            base: ObjectHeader::default(),
            key,
            name,
            ignored_field,
        });
    }
}

crate::object_type! {
    /// `hash_ignored` is left out of `hash` (still compared).
    pub struct TestHash("testing.TestHash") {
        /// Hashed.
        pub key: i64,
        /// Hashed.
        pub name: String,
        /// Compared, not hashed.
        #[hash_off]
        pub hash_ignored: i64,
    }
    methods {
        /// Makes one from its fields, in order.
        #[static_method]
        "__ffi_init__" => |key: i64, name: String, hash_ignored: i64| Obj::new(TestHash {
            base: ObjectHeader::default(),
            key,
            name,
            hash_ignored,
        });
    }
}

/// The `key` of an object of one of the hook types, hashed by `fn_hash`.
fn hash_key(key: i64, fn_hash: &Function) -> Result<i64> {
    fn_hash.call(&[key.into()])?.try_as::<i64>()
}

crate::object_type! {
    /// Hashed by its `__ffi_hash__` hook, on `key` only (compared by both fields).
    pub struct TestCustomHash("testing.TestCustomHash") {
        /// Hashed and compared.
        pub key: i64,
        /// Compared only.
        pub label: String,
    }
    methods {
        /// Makes one from its fields, in order.
        #[static_method]
        "__ffi_init__" => |key: i64, label: String| Obj::new(TestCustomHash {
            base: ObjectHeader::default(),
            key,
            label,
        });
        /// Hashes `key` only.
        #[type_attr]
        "__ffi_hash__" => |o: Obj<TestCustomHash>, fn_hash: Function| hash_key(o.key, &fn_hash);
    }
}

crate::object_type! {
    /// Compared, ordered and hashed by its hooks, on `key` only.
    pub struct TestCustomCompare("testing.TestCustomCompare") {
        /// What the hooks look at.
        pub key: i64,
        /// Ignored by the hooks.
        pub label: String,
    }
    methods {
        /// Makes one from its fields, in order.
        #[static_method]
        "__ffi_init__" => |key: i64, label: String| Obj::new(TestCustomCompare {
            base: ObjectHeader::default(),
            key,
            label,
        });
        /// Hashes `key` only.
        #[type_attr]
        "__ffi_hash__" => |o: Obj<TestCustomCompare>, fn_hash: Function| hash_key(o.key, &fn_hash);
        /// Equal when the keys are.
        #[type_attr]
        "__ffi_eq__" => |a: Obj<TestCustomCompare>, b: Obj<TestCustomCompare>, fn_eq: Function| {
            fn_eq.call(&[a.key.into(), b.key.into()])?.try_as::<bool>()
        };
        /// Ordered by the keys.
        #[type_attr]
        "__ffi_compare__" => |a: Obj<TestCustomCompare>,
                              b: Obj<TestCustomCompare>,
                              fn_cmp: Function| {
            fn_cmp.call(&[a.key.into(), b.key.into()])?.try_as::<i64>()
        };
    }
}

crate::object_type! {
    /// An `__ffi_eq__` hook and no `__ffi_hash__`: it cannot be hashed.
    pub struct TestEqWithoutHash("testing.TestEqWithoutHash") {
        /// What the hook looks at.
        pub key: i64,
        /// Ignored by the hook.
        pub label: String,
    }
    methods {
        /// Makes one from its fields, in order.
        #[static_method]
        "__ffi_init__" => |key: i64, label: String| Obj::new(TestEqWithoutHash {
            base: ObjectHeader::default(),
            key,
            label,
        });
        /// Equal when the keys are.
        #[type_attr]
        "__ffi_eq__" => |a: Obj<TestEqWithoutHash>, b: Obj<TestEqWithoutHash>, fn_eq: Function| {
            fn_eq.call(&[a.key.into(), b.key.into()])?.try_as::<bool>()
        };
    }
}
