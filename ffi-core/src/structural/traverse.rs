//! Structural traversal: one engine for the four ways of going over a value graph by the fields
//! the runtime knows, with callbacks chosen by the type of each value met:
//!
//! - a walk ([`Style::Walk`]) calls `f(value)` before or after the value's children and goes on
//!   by itself (a callback may skip the children in pre-order, or stop the walk with a
//!   [`VisitInterrupt`](super::VisitInterrupt) that the walk returns);
//! - a visit ([`Style::Visit`]) calls `f(value, visitor)`, and the callback decides which
//!   children to visit (`visitor.visit(child)`, `visitor.default_visit(value)`);
//! - a map ([`Style::Map`]) replaces each value by what `f(value)` returns, before or after its
//!   children are mapped, and rebuilds the containers and objects whose parts changed;
//! - a mutation ([`Style::Mutate`]) calls `f(value, mutator[, inplace_mode])`, whose result is
//!   final: the callback maps the children it wants (`mutator.mutate(child)`).
//!
//! The children of a value: an Array's or List's items, a Map's or Dict's values (keys are never
//! visited nor changed), an object's fields but those marked `structural_eq="ignore"`. Strings,
//! shapes, tensors, functions and plain values have none. Fields flagged as definition sites
//! put what they hold in a definition region (`kRFFIDefRegionKind*`), which callbacks may ask
//! for.
//!
//! A map keeps the source intact (copy on write) unless the root was handed over (`owned`):
//! then containers and objects that nothing else holds are changed in place. A map remembers,
//! for variables (`structural_eq="var"`) and DAG nodes, what their children's mapping gave, so a
//! variable's uses get the same new variable as its definition, and a shared DAG node is mapped
//! once (callbacks still run at every occurrence). Maps and mutations are in `mutate.rs`; this
//! file holds the engine, walks and visits, and the parts of a value.

use super::items::{Entries, Seq};
use super::{class_of, eq_hash_kind, Class, Depth};
use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::error::{Error, Result};
use crate::object::{alloc_object_with_deleter, body, obj_box_deleter, ObjectRef};
use crate::reflection::{all_fields, read_field};
use crate::Function;
use core::ffi::c_void;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};
use std::thread::ThreadId;

/// The type index a callback of "any value" is registered for.
pub const ANY_TYPE: i32 = -1;

/// Whether a walk's or a map's callbacks run before (`Pre`) or after (`Post`) the children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// A value's callback first, then its children.
    Pre,
    /// The children first, then the value's callback (the default of tvm-ffi's API).
    Post,
}

/// The four uses of the engine (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `f(value)`; the engine goes into the children.
    Walk(Order),
    /// `f(value, visitor)`; the callback goes into the children it wants.
    Visit,
    /// `f(value) -> replacement`; the engine maps the children.
    Map(Order),
    /// `f(value, mutator[, inplace_mode]) -> result`; the callback maps the children it wants.
    Mutate,
}

impl Style {
    pub(super) fn name(self) -> &'static str {
        match self {
            Style::Walk(_) => "structural_walk",
            Style::Visit => "structural_visit",
            Style::Map(_) => "structural_map",
            Style::Mutate => "structural_mutate",
        }
    }

    fn maps(self) -> bool {
        matches!(self, Style::Map(_) | Style::Mutate)
    }
}

/// A callback and the values it is for: `type_index` (a value of that type, or of a type derived
/// from it; `kRFFIStr` and `kRFFIBytes` take their small and borrowed forms too), or
/// `ANY_TYPE`. The first callback that matches a value is the one called.
#[derive(Clone)]
pub struct Callback {
    /// The values it is for (see above).
    pub type_index: i32,
    /// What is called.
    pub func: Function,
    /// Walk and map: the definition region kind is passed after the value.
    pub with_region: bool,
    /// Mutate: the in-place mode (1: the value may be changed in place) is passed after the
    /// mutator.
    pub with_mode: bool,
}

impl Callback {
    fn matches(&self, index: i32) -> bool {
        match self.type_index {
            ANY_TYPE => true,
            kRFFIStr => matches!(index, kRFFIStr | kRFFISmallStr | kRFFIRawStr),
            kRFFIBytes => matches!(index, kRFFIBytes | kRFFISmallBytes | kRFFIByteArrayPtr),
            t if t >= kRFFIStaticObjectBegin => crate::type_registry::is_instance(index, t),
            t => t == index,
        }
    }
}

/// The state of one traversal: the body of its visitor (or mutator) object, which callbacks get
/// and call back into (`visit`, `mutate`, ...), so all of it is reached through `&self`.
pub(super) struct Engine {
    pub(super) style: Style,
    /// Emptied when the traversal returns, so a visitor a callback kept holds no callback.
    callbacks: RwLock<Vec<Callback>>,
    region: AtomicI32,
    /// Variables and DAG nodes mapped by default descent: address -> (the node, its result).
    pub(super) remap: Mutex<FxHashMap<usize, (Any, Any)>>,
    depth: Mutex<Depth>,
    thread: ThreadId,
    running: AtomicBool,
}

/// What a walk callback asks for.
enum Signal {
    Advance,
    Skip,
    Interrupt(Any),
}

/// A traversal in progress: a `ffi.StructuralVisitor` (walks and visits) or
/// `ffi.StructuralMutator` (maps and mutations) object, which callbacks receive.
#[derive(Clone)]
pub struct Traversal(ObjectRef);

/// The one deleter of traversal objects, by which `from_object` recognizes them.
unsafe extern "C" fn engine_deleter(obj: *mut c_void, flags: i32) {
    // SAFETY: installed only on objects allocated with an `Engine` body.
    unsafe { obj_box_deleter::<Engine>(obj, flags) }
}

fn type_index_of(key: &'static str, slot: &'static OnceLock<i32>) -> Result<i32> {
    if let Some(&i) = slot.get() {
        return Ok(i);
    }
    let i = crate::type_registry::register_type(key, Some(kRFFIObject))?;
    Ok(*slot.get_or_init(|| i))
}

fn visitor_index() -> Result<i32> {
    static INDEX: OnceLock<i32> = OnceLock::new();
    type_index_of("ffi.StructuralVisitor", &INDEX)
}

fn mutator_index() -> Result<i32> {
    static INDEX: OnceLock<i32> = OnceLock::new();
    type_index_of("ffi.StructuralMutator", &INDEX)
}

/// Registered with the built-in types, so every language finds the keys from the start.
fn declare_visitor() -> i32 {
    visitor_index().unwrap_or_else(|e| panic!("registering ffi.StructuralVisitor: {}", e.message()))
}

fn declare_mutator() -> i32 {
    mutator_index().unwrap_or_else(|e| panic!("registering ffi.StructuralMutator: {}", e.message()))
}

inventory::submit! { crate::reflection::StaticType { register: declare_visitor } }
inventory::submit! { crate::reflection::StaticType { register: declare_mutator } }

impl Traversal {
    /// A traversal of `style` calling `callbacks` (the first that matches a value).
    pub fn new(style: Style, callbacks: Vec<Callback>) -> Result<Traversal> {
        let index = if style.maps() {
            mutator_index()?
        } else {
            visitor_index()?
        };
        let engine = Engine {
            style,
            callbacks: RwLock::new(callbacks),
            region: AtomicI32::new(kRFFIDefRegionKindNone),
            remap: Mutex::new(FxHashMap::default()),
            depth: Mutex::new(Depth::new(style.name())),
            thread: std::thread::current().id(),
            running: AtomicBool::new(true),
        };
        // SAFETY: `engine_deleter` forwards to `obj_box_deleter::<Engine>`.
        Ok(Traversal(unsafe {
            alloc_object_with_deleter(index, engine, engine_deleter)
        }))
    }

    /// The traversal an object is, for the global functions its methods call: a TypeError for
    /// any other object, and for one whose traversal has returned or runs on another thread.
    pub fn from_object(obj: &ObjectRef, what: &str) -> Result<Traversal> {
        let ours: unsafe extern "C" fn(_, _) = engine_deleter;
        // SAFETY: the header is live (we hold a reference); the deleter marks the objects made
        // by this image's `new` (an `Engine` body), whatever their type index says.
        let deleter = unsafe { (*obj.as_ptr()).deleter };
        if !deleter.is_some_and(|d| std::ptr::fn_addr_eq(d, ours)) {
            return Err(Error::type_error(format!(
                "{what}: expected a structural visitor or mutator, got {}",
                crate::type_registry::type_name(obj.type_index())
            )));
        }
        let t = Traversal(obj.clone());
        let e = t.engine();
        if !e.running.load(Ordering::Acquire) || e.thread != std::thread::current().id() {
            return Err(Error::value_error(format!(
                "{what}: the {} this visitor belongs to has returned or runs on another \
                 thread; use it only inside its callbacks",
                e.style.name()
            )));
        }
        Ok(t)
    }

    pub(super) fn engine(&self) -> &Engine {
        // SAFETY: made by `new` (or checked by `from_object`): the body is an `Engine`.
        unsafe { body::<Engine>(&self.0) }
    }

    /// The object callbacks receive.
    pub fn as_object(&self) -> &ObjectRef {
        &self.0
    }

    /// Marks the traversal finished: its object, if a callback kept it, refuses further use.
    pub fn finish(&self) {
        let e = self.engine();
        e.running.store(false, Ordering::Release);
        e.callbacks
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// The definition region kind the traversal is in (`kRFFIDefRegionKind*`).
    pub fn region(&self) -> i32 {
        self.engine().region.load(Ordering::Relaxed)
    }

    /// Runs `f` in definition region `kind`; inside a pattern region, the pattern holds.
    pub fn with_region<R>(&self, kind: i32, f: impl FnOnce() -> Result<R>) -> Result<R> {
        if !(kRFFIDefRegionKindNone..=kRFFIDefRegionKindSimple).contains(&kind) {
            return Err(Error::value_error(format!(
                "def region kind must be 0 (none), 1 (pattern) or 2 (simple), not {kind}"
            )));
        }
        let e = self.engine();
        let outer = e.region.load(Ordering::Relaxed);
        if outer == kRFFIDefRegionKindPattern {
            return f();
        }
        e.region.store(kind, Ordering::Relaxed);
        let r = f();
        e.region.store(outer, Ordering::Relaxed);
        r
    }

    pub(super) fn nested<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let e = self.engine();
        e.depth.lock().unwrap_or_else(|p| p.into_inner()).enter()?;
        let r = f();
        e.depth.lock().unwrap_or_else(|p| p.into_inner()).leave();
        r
    }

    pub(super) fn find(&self, index: i32) -> Option<Callback> {
        let callbacks = self
            .engine()
            .callbacks
            .read()
            .unwrap_or_else(|p| p.into_inner());
        callbacks.iter().find(|c| c.matches(index)).cloned()
    }

    pub(super) fn call(&self, cb: &Callback, v: &AnyView<'_>, mode: Option<bool>) -> Result<Any> {
        let mut args: Vec<AnyView<'_>> = vec![*v];
        let region = Any::from(i64::from(self.region()));
        let me = Any::from_object(self.0.clone());
        let mode = Any::from(i64::from(mode.unwrap_or(false)));
        match self.engine().style {
            Style::Walk(_) | Style::Map(_) if cb.with_region => args.push(region.view()),
            Style::Visit => args.push(me.view()),
            Style::Mutate => {
                args.push(me.view());
                if cb.with_mode {
                    args.push(mode.view());
                }
            }
            _ => {}
        }
        cb.func.call_views(&args)
    }

    // ---- Walks and visits ----

    /// Visits `v`: its callback if one matches (the style says how), else its children.
    /// `Some(interrupt)` when a callback stopped the traversal.
    pub fn visit(&self, v: &AnyView<'_>) -> Result<Option<Any>> {
        self.nested(|| {
            let Some(cb) = self.find(v.type_index()) else {
                return self.default_visit(v);
            };
            match self.engine().style {
                Style::Walk(Order::Pre) => match self.signal(self.call(&cb, v, None)?)? {
                    Signal::Advance => self.default_visit(v),
                    Signal::Skip => Ok(None),
                    Signal::Interrupt(i) => Ok(Some(i)),
                },
                Style::Walk(Order::Post) => {
                    if let Some(i) = self.default_visit(v)? {
                        return Ok(Some(i));
                    }
                    match self.signal(self.call(&cb, v, None)?)? {
                        Signal::Interrupt(i) => Ok(Some(i)),
                        _ => Ok(None),
                    }
                }
                Style::Visit => match self.signal(self.call(&cb, v, None)?)? {
                    Signal::Interrupt(i) => Ok(Some(i)),
                    Signal::Advance => Ok(None),
                    Signal::Skip => Err(Error::type_error(
                        "structural_visit callback must return None or a VisitInterrupt",
                    )),
                },
                style => Err(Error::type_error(format!(
                    "visit() is for walks and visits, not {}",
                    style.name()
                ))),
            }
        })
    }

    /// Visits `v`'s children (each through [`visit`](Self::visit)), whatever callback `v` has.
    pub fn default_visit(&self, v: &AnyView<'_>) -> Result<Option<Any>> {
        match parts(v)? {
            Parts::Leaf => Ok(None),
            Parts::Seq(_, items) => first_some(items.iter().map(|x| self.visit(&x.view()))),
            Parts::Map(_, entries) => {
                first_some(entries.iter().map(|(_, x)| self.visit(&x.view())))
            }
            Parts::Object(fields) => self.in_object(v, || {
                first_some(fields.iter().map(|(f, x)| match field_region(f) {
                    FieldRegion::Skip => Ok(None),
                    FieldRegion::Same => self.visit(&x.view()),
                    FieldRegion::Enter(k) => self.with_region(k, || self.visit(&x.view())),
                }))
            }),
        }
    }

    /// Runs `f` over an object's fields: a variable defined by a simple definition has its
    /// fields walked as uses.
    pub(super) fn in_object<R>(&self, v: &AnyView<'_>, f: impl FnOnce() -> Result<R>) -> Result<R> {
        if self.region() == kRFFIDefRegionKindSimple
            && eq_hash_kind(v.type_index()) == kRFFISEqHashKindFreeVar
        {
            self.with_region(kRFFIDefRegionKindNone, f)
        } else {
            f()
        }
    }

    fn signal(&self, r: Any) -> Result<Signal> {
        let what = self.engine().style.name();
        if r.is_none() {
            return Ok(Signal::Advance);
        }
        match r.type_index() {
            kRFFIInt | kRFFIBool => match r.try_as::<i64>()? {
                0 => Ok(Signal::Advance),
                1 => Ok(Signal::Skip),
                n => Err(Error::value_error(format!(
                    "{what} callback returned {n}: expected None, WalkResult.ADVANCE (0), \
                     WalkResult.SKIP (1) or a VisitInterrupt"
                ))),
            },
            i if i == super::traverse_api::interrupt_index() => Ok(Signal::Interrupt(r)),
            _ => Err(Error::type_error(format!(
                "{what} callback returned a value of type {}: expected None, a WalkResult or \
                 a VisitInterrupt",
                r.view().type_name()
            ))),
        }
    }
}

/// The parts of a value a traversal goes into.
pub(super) enum Parts {
    Leaf,
    Seq(Class, Vec<Any>),
    Map(Class, Vec<(Any, Any)>),
    /// Every field (the ignored ones too, which a copy keeps) with its value.
    Object(Vec<(&'static RFFIFieldInfo, Any)>),
}

pub(super) fn parts(v: &AnyView<'_>) -> Result<Parts> {
    let class = class_of(v.type_index());
    Ok(match class {
        Class::Array | Class::List => Parts::Seq(
            class,
            Seq::of(v)?
                .iter()
                .map(|x| x.to_owned())
                .collect::<Result<_>>()?,
        ),
        Class::Map | Class::Dict => Parts::Map(
            class,
            Entries::of(v)?
                .iter()
                .map(|(k, x)| Ok((k.to_owned()?, x.to_owned()?)))
                .collect::<Result<_>>()?,
        ),
        Class::Object => {
            let obj = v.as_object().expect("an object");
            Parts::Object(
                all_fields(v.type_index())
                    .into_iter()
                    .map(|f| Ok((f, read_field(obj, f)?)))
                    .collect::<Result<_>>()?,
            )
        }
        _ => Parts::Leaf,
    })
}

pub(super) enum FieldRegion {
    /// Left out (`structural_eq="ignore"`).
    Skip,
    /// In the region around it.
    Same,
    /// A definition site: in a region of this kind.
    Enter(i32),
}

pub(super) fn field_region(f: &RFFIFieldInfo) -> FieldRegion {
    if f.flags & kRFFIFieldFlagBitMaskSEqHashIgnore != 0 {
        FieldRegion::Skip
    } else if f.flags & kRFFIFieldFlagBitMaskSEqHashDefSimple != 0 {
        FieldRegion::Enter(kRFFIDefRegionKindSimple)
    } else if f.flags & kRFFIFieldFlagBitMaskSEqHashDef != 0 {
        FieldRegion::Enter(kRFFIDefRegionKindPattern)
    } else {
        FieldRegion::Same
    }
}

/// The first `Some` of a sequence of visits, stopping there (or at the first error).
fn first_some(visits: impl Iterator<Item = Result<Option<Any>>>) -> Result<Option<Any>> {
    for r in visits {
        if let Some(i) = r? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}
