//! Object types for tests in every language: `testing.TestPoint` (a frozen and a writable field,
//! methods, a constructor) and `testing.TestPoint3`, derived from it.

use crate::reflection::{Mut, Obj, ObjectHeader};

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
