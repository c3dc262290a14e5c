//! Object types for tests in every language: `testing.TestPoint` (a frozen and a writable field,
//! methods, a constructor) and `testing.TestPoint3`, derived from it; `testing.TestIntPair`,
//! `testing.TestObjectBase` and `testing.TestObjectDerived`, the types tvm-ffi's tests use, and
//! `testing.TestUnregisteredObject` (made by `testing.make_unregistered_object`), a type no
//! Python class is bound to.

use crate::reflection::{Mut, Obj, ObjectHeader};
use crate::{Array, Map};

crate::object_type! {
    /// A point for tests.
    pub struct TestPoint("testing.TestPoint") {
        /// The x coordinate (frozen).
        pub x: i64,
        /// The y coordinate (writable).
        #[default = 0i64]
        pub y: Mut<i64>,
        /// A label.
        #[default = "origin"]
        pub label: Mut<String>,
    }
    methods {
        /// Makes a point.
        #[static_method]
        "__ffi_init__" => |x: i64, y: i64, label: String| Obj::new(TestPoint {
            base: ObjectHeader::default(),
            x,
            y: Mut::new(y),
            label: Mut::new(label),
        });
        /// x + y.
        "sum" => |p: Obj<TestPoint>| p.x + p.y.get();
        /// Adds `d` to y and returns the new y.
        "shift" => |p: Obj<TestPoint>, d: i64| {
            p.y.set(p.y.get() + d);
            p.y.get()
        };
    }
}

crate::object_type! {
    /// A point with a z coordinate.
    pub struct TestPoint3("testing.TestPoint3"): TestPoint {
        /// The z coordinate.
        pub z: f64,
    }
    methods {
        #[static_method]
        "__ffi_init__" => |x: i64, y: i64, z: f64| Obj::new(TestPoint3 {
            base: TestPoint {
                base: ObjectHeader::default(),
                x,
                y: Mut::new(y),
                label: Mut::new("3d".to_owned()),
            },
            z,
        });
        /// x + y + z.
        "sum" => |p: Obj<TestPoint3>| p.base.x as f64 + p.base.y.get() as f64 + p.z;
    }
}

crate::function_registry::register_builtin!("testing.make_point", |x: i64, y: i64| {
    Obj::new(TestPoint {
        base: ObjectHeader::default(),
        x,
        y: Mut::new(y),
        label: Mut::new("made in Rust".to_owned()),
    })
});

crate::object_type! {
    /// A pair of integers.
    pub struct TestIntPair("testing.TestIntPair") {
        /// Field `a`
        pub a: i64,
        /// Field `b`
        pub b: i64,
    }
    methods {
        /// Makes a pair.
        #[static_method]
        "__ffi_init__" => |a: i64, b: i64| Obj::new(TestIntPair {
            base: ObjectHeader::default(),
            a,
            b,
        });
        /// a + b.
        "sum" => |p: Obj<TestIntPair>| p.a.wrapping_add(p.b);
    }
}

crate::object_type! {
    /// An object with a writable field of each scalar kind, all with defaults.
    pub struct TestObjectBase("testing.TestObjectBase") {
        /// i64 field
        #[default = 10i64]
        pub v_i64: Mut<i64>,
        /// f64 field
        #[default = 10.0f64]
        pub v_f64: Mut<f64>,
        /// str field
        #[default = "hello"]
        pub v_str: Mut<String>,
    }
    methods {
        /// Makes one from its fields, in order.
        #[static_method]
        "__ffi_init__" => |v_i64: i64, v_f64: f64, v_str: String| Obj::new(TestObjectBase {
            base: ObjectHeader::default(),
            v_i64: Mut::new(v_i64),
            v_f64: Mut::new(v_f64),
            v_str: Mut::new(v_str),
        });
        /// add_i64 method
        "add_i64" => |o: Obj<TestObjectBase>, x: i64| o.v_i64.get().wrapping_add(x);
    }
}

crate::object_type! {
    /// `testing.TestObjectBase` with a map and an array field (no defaults).
    pub struct TestObjectDerived("testing.TestObjectDerived"): TestObjectBase {
        /// map field
        pub v_map: Mut<Map>,
        /// array field
        pub v_array: Mut<Array>,
    }
    methods {
        /// Makes one from its fields, in order (the parent's first).
        #[static_method]
        "__ffi_init__" => |v_i64: i64, v_f64: f64, v_str: String, v_map: Map, v_array: Array| {
            Obj::new(TestObjectDerived {
                base: TestObjectBase {
                    base: ObjectHeader::default(),
                    v_i64: Mut::new(v_i64),
                    v_f64: Mut::new(v_f64),
                    v_str: Mut::new(v_str),
                },
                v_map: Mut::new(v_map),
                v_array: Mut::new(v_array),
            })
        };
    }
}

crate::object_type! {
    /// The parent of `testing.TestUnregisteredObject`.
    pub struct TestUnregisteredBaseObject("testing.TestUnregisteredBaseObject") {
        /// The first value.
        pub v1: i64,
    }
    methods {
        /// Get (v1 + 1) from TestUnregisteredBaseObject.
        "get_v1_plus_one" => |o: Obj<TestUnregisteredBaseObject>| o.v1.wrapping_add(1);
    }
}

crate::object_type! {
    /// A type that no Python class is bound to: Python makes one for it when an object arrives.
    pub struct TestUnregisteredObject("testing.TestUnregisteredObject"): TestUnregisteredBaseObject {
        /// The second value.
        pub v2: i64,
    }
    methods {
        /// Get (v2 + 2) from TestUnregisteredObject.
        "get_v2_plus_two" => |o: Obj<TestUnregisteredObject>| o.v2.wrapping_add(2);
    }
}

crate::function_registry::register_builtin!("testing.make_unregistered_object", || {
    Obj::new(TestUnregisteredObject {
        base: TestUnregisteredBaseObject {
            base: ObjectHeader::default(),
            v1: 41,
        },
        v2: 42,
    })
});
