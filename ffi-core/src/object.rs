//! Reference-counted objects: the header protocol, the `ObjectRef` smart pointer, and allocation of
//! objects whose body is a Rust value.
//!
//! The increment/decrement protocol is exactly tvm-ffi's (strong count in the low 32 bits, weak count
//! in the high 32 bits, `deleter(self, flags)`), because C++ plugins inline it: an object made by any
//! library that follows it can be held and released here, and ours there.

use crate::abi::{
    kRFFIObjectDeleterFlagBitMaskBoth, kRFFIObjectDeleterFlagBitMaskStrong,
    kRFFIObjectDeleterFlagBitMaskWeak, RFFIObject,
};
use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{fence, AtomicU64, Ordering};
use std::alloc::Layout;

const STRONG_ONE: u64 = 1;
const WEAK_ONE: u64 = 1 << 32;
/// Count of a fresh object: one strong reference plus the weak reference held by the strong side.
pub(crate) const INITIAL_COUNT: u64 = STRONG_ONE | WEAK_ONE;

/// The atomic view of an object's combined count.
///
/// # Safety
/// `obj` must point to a live object header.
unsafe fn count<'a>(obj: *mut RFFIObject) -> &'a AtomicU64 {
    // SAFETY: the caller guarantees a live header; the count is 8-aligned (asserted in `abi`) and
    // every access to it goes through atomics.
    unsafe { AtomicU64::from_ptr(&raw mut (*obj).combined_ref_count) }
}

/// Adds a strong reference.
///
/// # Safety
/// `obj` must point to a live object on which the caller holds a strong reference.
#[inline]
pub unsafe fn inc_ref(obj: *mut RFFIObject) {
    // SAFETY: forwarded contract.
    unsafe { count(obj) }.fetch_add(STRONG_ONE, Ordering::Relaxed);
}

/// Drops a strong reference, running the deleter as the protocol requires.
///
/// # Safety
/// `obj` must point to a live object and the caller gives up one strong reference.
#[inline]
pub unsafe fn dec_ref(obj: *mut RFFIObject) {
    // SAFETY: forwarded contract.
    let rc = unsafe { count(obj) };
    let old = rc.fetch_sub(STRONG_ONE, Ordering::Release);
    if old & 0xffff_ffff == STRONG_ONE {
        acquire(rc);
        // SAFETY: this was the last strong reference.
        unsafe { release_last_strong(obj, old == INITIAL_COUNT) };
    }
}

/// Orders what follows after every earlier holder's release of `rc` (their Release decrements),
/// before an object is destroyed. A fence, except under ThreadSanitizer (`make sanitize-tsan`
/// sets `rffi_tsan`), which does not model standalone fences and would report the destruction as
/// a race: there an Acquire load of the count does the same.
#[inline(always)]
fn acquire(rc: &AtomicU64) {
    if cfg!(rffi_tsan) {
        rc.load(Ordering::Acquire);
    } else {
        fence(Ordering::Acquire);
    }
}

/// How deeply deleters may nest on one thread before the next release waits for the outermost
/// one to return (see `release_last_strong`).
const NESTED_DELETERS: u32 = 256;

/// Releases queued while deleters were `NESTED_DELETERS` deep on a thread: each object, and
/// whether its weak count was the strong side's alone.
pub(crate) type Queued = Vec<(*mut RFFIObject, bool)>;

/// Runs the deleters of an object whose last strong reference was dropped (`alone`: the weak
/// count is the one the strong side holds). A container's deleter drops its items, whose
/// deleters drop theirs: freeing a List nested a million deep would nest a million deleters and
/// overflow the stack. So past `NESTED_DELETERS` the release is queued, and the outermost release
/// on this thread runs the queue, each entry again at most that deep. The count and the queue
/// live in the thread's call-depth guard, found without a thread-local access
/// (`call_depth::release_guard`): a thread local in librffi.so would cost a `__tls_get_addr` call
/// on every release.
///
/// # Safety
/// `obj` is live and its last strong reference was just given up.
#[inline]
unsafe fn release_last_strong(obj: *mut RFFIObject, alone: bool) {
    let Some(g) = crate::call_depth::release_guard() else {
        // This thread's locals are gone (it is exiting): release at once.
        // SAFETY: forwarded contract.
        return unsafe { run_deleters(obj, alone) };
    };
    let depth = g.releasing.load(Ordering::Relaxed);
    if depth >= NESTED_DELETERS {
        return queue(g, obj, alone);
    }
    g.releasing.store(depth + 1, Ordering::Relaxed);
    // SAFETY: forwarded contract.
    unsafe { run_deleters(obj, alone) };
    g.releasing.store(depth, Ordering::Relaxed);
    if depth == 0 && !g.queued.load(Ordering::Relaxed).is_null() {
        // SAFETY: the outermost release on this thread, with nothing of the queue borrowed.
        unsafe { run_queued(g) };
    }
}

/// Queues a release for the outermost one on this thread (see `release_last_strong`).
#[cold]
#[inline(never)]
fn queue(g: &crate::call_depth::Guard, obj: *mut RFFIObject, alone: bool) {
    let mut q = g.queued.load(Ordering::Relaxed);
    if q.is_null() {
        q = Box::into_raw(Box::<Queued>::default());
        g.queued.store(q, Ordering::Relaxed);
    }
    // SAFETY: this thread's queue, made above or earlier, freed only by `run_queued` in the
    // outermost release, which is below us on this stack.
    unsafe { (*q).push((obj, alone)) };
}

/// Runs the queued releases (which may queue more), one level deep, then frees the queue.
///
/// # Safety
/// Called by the outermost release on this thread, with a queue.
#[cold]
#[inline(never)]
unsafe fn run_queued(g: &crate::call_depth::Guard) {
    let q = g.queued.load(Ordering::Relaxed);
    g.releasing.store(1, Ordering::Relaxed);
    // SAFETY: this thread's queue; no reference into it is held across a deleter (one that
    // queues pushes through the pointer afresh).
    while let Some((o, a)) = unsafe { (*q).pop() } {
        // SAFETY: queued under `release_last_strong`'s contract, and not released since.
        unsafe { run_deleters(o, a) };
    }
    g.queued.store(core::ptr::null_mut(), Ordering::Relaxed);
    g.releasing.store(0, Ordering::Relaxed);
    // SAFETY: made by `Box::into_raw` in `queue`; no longer reachable.
    drop(unsafe { Box::from_raw(q) });
}

/// # Safety
/// As `release_last_strong`.
#[inline]
unsafe fn run_deleters(obj: *mut RFFIObject, alone: bool) {
    if alone {
        // SAFETY: the last strong and the only weak reference.
        unsafe { run_deleter(obj, kRFFIObjectDeleterFlagBitMaskBoth) };
        return;
    }
    // SAFETY: last strong reference: destroy the contents, keep the memory for weak holders.
    unsafe { run_deleter(obj, kRFFIObjectDeleterFlagBitMaskStrong) };
    // SAFETY: the header stays allocated while the strong side's weak reference is held.
    let rc = unsafe { count(obj) };
    if rc.fetch_sub(WEAK_ONE, Ordering::Release) >> 32 == 1 {
        acquire(rc);
        // SAFETY: the last weak reference is gone too.
        unsafe { run_deleter(obj, kRFFIObjectDeleterFlagBitMaskWeak) };
    }
}

/// # Safety
/// `obj` is a header whose deleter may run with `flags` now.
#[inline]
unsafe fn run_deleter(obj: *mut RFFIObject, flags: i32) {
    // SAFETY: reading the header of an object that is still allocated.
    if let Some(deleter) = unsafe { (*obj).deleter } {
        // SAFETY: the protocol says this deleter expects exactly this call.
        unsafe { deleter(obj.cast(), flags) };
    }
}

/// The strong count of an object.
///
/// # Safety
/// `obj` must point to a live object.
pub unsafe fn strong_count(obj: *mut RFFIObject) -> u32 {
    // SAFETY: forwarded contract.
    (unsafe { count(obj) }.load(Ordering::Relaxed) & 0xffff_ffff) as u32
}

/// An owned strong reference to an object of any type.
#[repr(transparent)]
pub struct ObjectRef(NonNull<RFFIObject>);

// SAFETY: the count is atomic and object bodies are immutable after construction or guard their
// mutable parts with locks, so references may move and be shared between threads.
unsafe impl Send for ObjectRef {}
// SAFETY: as above.
unsafe impl Sync for ObjectRef {}

impl ObjectRef {
    /// Takes ownership of one strong reference.
    ///
    /// # Safety
    /// `ptr` must be a live object whose reference the caller hands over.
    #[inline]
    pub unsafe fn from_raw(ptr: NonNull<RFFIObject>) -> Self {
        ObjectRef(ptr)
    }

    /// Adds a strong reference to a borrowed object.
    ///
    /// # Safety
    /// `ptr` must be a live object the caller holds a reference to for the duration of the call.
    #[inline]
    pub unsafe fn from_borrowed(ptr: NonNull<RFFIObject>) -> Self {
        // SAFETY: forwarded contract.
        unsafe { inc_ref(ptr.as_ptr()) };
        ObjectRef(ptr)
    }

    /// Gives up ownership without decrementing; pair with `from_raw`.
    #[inline]
    pub fn into_raw(self) -> NonNull<RFFIObject> {
        let p = self.0;
        core::mem::forget(self);
        p
    }

    /// The object's header (this reference keeps it alive).
    #[inline]
    pub fn as_ptr(&self) -> *mut RFFIObject {
        self.0.as_ptr()
    }

    /// The object's type index.
    #[inline]
    pub fn type_index(&self) -> i32 {
        // SAFETY: we hold a strong reference, so the header is live; the index never changes.
        unsafe { (*self.0.as_ptr()).type_index }
    }

    /// The object's strong reference count (this one included), for tests and diagnostics.
    pub fn strong_count(&self) -> u32 {
        // SAFETY: we hold a strong reference.
        unsafe { strong_count(self.0.as_ptr()) }
    }

    /// Whether this is the only reference, strong or weak (a fresh object nothing else has seen).
    pub(crate) fn is_unique(&self) -> bool {
        // SAFETY: we hold a strong reference.
        unsafe { count(self.0.as_ptr()) }.load(Ordering::Acquire) == INITIAL_COUNT
    }

    /// Pointer identity.
    pub fn same_as(&self, other: &ObjectRef) -> bool {
        self.0 == other.0
    }

    /// Address of the cell at offset 24, where each type's body starts.
    #[inline]
    pub(crate) fn cell_ptr<T>(&self) -> *mut T {
        // SAFETY: every object is at least a header; the result is only dereferenced by the
        // module that knows the type's layout.
        unsafe { self.0.as_ptr().add(1).cast() }
    }
}

impl Clone for ObjectRef {
    #[inline]
    fn clone(&self) -> Self {
        // SAFETY: we hold a strong reference.
        unsafe { inc_ref(self.0.as_ptr()) };
        ObjectRef(self.0)
    }
}

impl Drop for ObjectRef {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own one strong reference.
        unsafe { dec_ref(self.0.as_ptr()) }
    }
}

impl core::fmt::Debug for ObjectRef {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "ObjectRef({} @ {:p})",
            crate::type_registry::type_name(self.type_index()),
            self.0
        )
    }
}

/// An object whose body is the Rust value `T`, stored right after the header.
///
/// Types whose body starts with an ABI cell put the cell first in a `#[repr(C)]` `T`, so it lands
/// at offset 24.
#[repr(C)]
pub(crate) struct ObjBox<T> {
    header: RFFIObject,
    pub value: T,
}

/// Allocates an object holding `value`, with a deleter that drops it and frees the memory.
pub(crate) fn alloc_object<T>(type_index: i32, value: T) -> ObjectRef {
    // SAFETY: the deleter is the one made for exactly this layout.
    unsafe { alloc_object_with_deleter(type_index, value, obj_box_deleter::<T>) }
}

/// Like `alloc_object`, with a deleter of the caller's choosing (one that identifies a family of
/// objects, say) which must end up calling `obj_box_deleter::<T>`.
///
/// # Safety
/// `deleter` must release the object exactly as `obj_box_deleter::<T>` does.
pub(crate) unsafe fn alloc_object_with_deleter<T>(
    type_index: i32,
    value: T,
    deleter: unsafe extern "C" fn(*mut c_void, i32),
) -> ObjectRef {
    let boxed = Box::new(ObjBox {
        header: RFFIObject {
            combined_ref_count: INITIAL_COUNT,
            type_index,
            __padding: 0,
            deleter: Some(deleter),
        },
        value,
    });
    // SAFETY: a fresh allocation carrying the one strong reference we hand to the ObjectRef.
    unsafe { ObjectRef::from_raw(NonNull::from(Box::leak(boxed)).cast()) }
}

/// Allocates an object from a builder that initialises it in place, for types whose body has a
/// variable-length tail (strings, shapes, arrays). `layout` covers the whole object; `init` gets
/// the uninitialised memory after the header (`layout.size() - 24` bytes) and must fill it.
///
/// # Safety
/// `deleter` must release exactly what `init` builds and free `layout` with the global allocator.
pub(crate) unsafe fn alloc_with_tail(
    type_index: i32,
    layout: Layout,
    deleter: unsafe extern "C" fn(*mut c_void, i32),
    init: impl FnOnce(*mut u8),
) -> ObjectRef {
    // SAFETY: layout has a non-zero size (at least the header).
    let mem = unsafe { std::alloc::alloc(layout) }.cast::<RFFIObject>();
    let Some(ptr) = NonNull::new(mem) else {
        std::alloc::handle_alloc_error(layout)
    };
    // SAFETY: fresh memory large enough for the header followed by the body.
    unsafe {
        ptr.as_ptr().write(RFFIObject {
            combined_ref_count: INITIAL_COUNT,
            type_index,
            __padding: 0,
            deleter: Some(deleter),
        });
        init(ptr.as_ptr().add(1).cast());
        ObjectRef::from_raw(ptr)
    }
}

/// Deleter of objects made by `alloc_object::<T>`.
///
/// # Safety
/// Called by the refcount protocol on such an object.
pub(crate) unsafe extern "C" fn obj_box_deleter<T>(obj: *mut c_void, flags: i32) {
    let obj = obj.cast::<ObjBox<T>>();
    if flags & kRFFIObjectDeleterFlagBitMaskStrong != 0 {
        // SAFETY: the protocol calls this once with the strong bit, when the body is still live.
        unsafe { core::ptr::drop_in_place(&raw mut (*obj).value) };
    }
    if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
        // SAFETY: allocated by `alloc_object::<T>` as a Box<ObjBox<T>>; the body was dropped above
        // or by an earlier strong-only call, so only the memory remains.
        unsafe { std::alloc::dealloc(obj.cast(), Layout::new::<ObjBox<T>>()) };
    }
}

/// The body of an object made by `alloc_object::<T>`.
///
/// # Safety
/// `obj` must have been allocated by `alloc_object::<T>` with this same `T`.
#[inline]
pub(crate) unsafe fn body<T>(obj: &ObjectRef) -> &T {
    // SAFETY: forwarded contract; the reference lives as long as the borrow of `obj`.
    unsafe { &(*obj.as_ptr().cast::<ObjBox<T>>()).value }
}

/// Typed object references: a newtype over `ObjectRef` whose type index is checked on conversion.
///
/// # Safety
/// `from_object_unchecked` may only be called on an object of the implementing type, and the type
/// must be `#[repr(transparent)]` over `ObjectRef`.
pub unsafe trait ObjectType: Sized + Clone {
    /// Registered type key, such as `"ffi.Array"`.
    const TYPE_KEY: &'static str;
    /// Type index; runtime-registered types look theirs up once.
    fn type_index() -> i32;
    /// The reference as a plain object.
    fn as_object(&self) -> &ObjectRef;
    /// # Safety
    /// `obj` must be of this type.
    unsafe fn from_object_unchecked(obj: ObjectRef) -> Self;

    /// Checks the type index and converts.
    fn from_object(obj: ObjectRef) -> Result<Self, ObjectRef> {
        if obj.type_index() == Self::type_index() {
            // SAFETY: the type index matches.
            Ok(unsafe { Self::from_object_unchecked(obj) })
        } else {
            Err(obj)
        }
    }

    /// The reference as a plain object, consumed.
    fn into_object(self) -> ObjectRef {
        self.as_object().clone()
    }
}

/// Implements `ObjectType` for a newtype over `ObjectRef` with a static type index.
macro_rules! static_object_type {
    ($ty:ident, $index:expr, $key:literal) => {
        // SAFETY: `$ty` is `#[repr(transparent)]` over ObjectRef and only built from objects of
        // index `$index`.
        unsafe impl $crate::object::ObjectType for $ty {
            const TYPE_KEY: &'static str = $key;
            #[inline]
            fn type_index() -> i32 {
                $index
            }
            #[inline]
            fn as_object(&self) -> &$crate::object::ObjectRef {
                &self.0
            }
            #[inline]
            unsafe fn from_object_unchecked(obj: $crate::object::ObjectRef) -> Self {
                $ty(obj)
            }
            fn into_object(self) -> $crate::object::ObjectRef {
                self.0
            }
        }
    };
}
pub(crate) use static_object_type;

/// Body of an opaque object: a foreign handle (a `PyObject*`, say) released by its own deleter.
#[repr(C)]
struct OpaqueBody {
    cell: crate::abi::RFFIOpaqueObjectCell,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

impl Drop for OpaqueBody {
    fn drop(&mut self) {
        if let Some(d) = self.deleter {
            // SAFETY: the creator handed over the handle with this deleter, to run once.
            unsafe { d(self.cell.handle) };
        }
    }
}

// SAFETY: the creator of an opaque object promises its handle and deleter may be used from any
// thread (a Python binding's deleter takes the GIL itself).
unsafe impl Send for OpaqueBody {}
// SAFETY: as above; the body is never mutated.
unsafe impl Sync for OpaqueBody {}

impl ObjectRef {
    /// Wraps a foreign handle as an object of `type_index` (`kRFFIOpaquePyObject` or a registered
    /// type): the handle is in the `RFFIOpaqueObjectCell` at offset 24 and `deleter(handle)` runs
    /// once when the last reference goes.
    ///
    /// # Safety
    /// `deleter`, if any, must be safe to call on `handle` from any thread, once.
    pub unsafe fn new_opaque(
        type_index: i32,
        handle: *mut c_void,
        deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    ) -> ObjectRef {
        alloc_object(
            type_index,
            OpaqueBody {
                cell: crate::abi::RFFIOpaqueObjectCell { handle },
                deleter,
            },
        )
    }

    /// The handle of an opaque object (the pointer at offset 24).
    ///
    /// # Safety
    /// The object must have been made by `new_opaque` (or follow its cell layout).
    pub unsafe fn opaque_handle(&self) -> *mut c_void {
        // SAFETY: forwarded contract.
        unsafe { (*self.cell_ptr::<crate::abi::RFFIOpaqueObjectCell>()).handle }
    }
}
