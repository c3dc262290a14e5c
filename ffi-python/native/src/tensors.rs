//! Tensor arguments: through the DLPack C exchange API (`__dlpack_c_exchange_api__`), or a
//! native `__dlpack__` call for host-memory producers without one (numpy).
//!
//! A tensor type that publishes the API on its class (torch.Tensor does) hands over a managed
//! tensor with one C call and tells its current work stream with another, with no Python
//! `__dlpack__` call, no capsule and no stream synchronisation. The fast path imports such
//! arguments as runtime Tensors (owned for the call), makes the producer's current stream rffi's
//! current stream for each device the arguments live on, installs the producer's allocator as
//! this thread's environment allocator (tensors the call makes are the framework's memory), and
//! undoes all three after the call: the same rules as the Python path (`rffi/_tensor.py`).
//!
//! The API is looked up on the argument's exact type once and remembered (a type that gains the
//! attribute later keeps the Python path).
//!
//! Other DLPack producers (the types the package's rules send to its DLPack setter) are called
//! as the Python path calls them, `obj.__dlpack__(max_version=(1, 1))`, but from here: the
//! capsule is consumed and the tensor imported without Python code in between. Only host-memory
//! tensors are taken this way; a type whose export is on a device (where the Python path lends
//! the framework's stream) or fails is left to the Python path, which words the errors.

use super::cpython::*;
use super::Hooks;
use rffi_core::abi::*;
use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `DLPackExchangeAPI` (DLPack 1.3): a stable header, then the producer's entry points. Only the
/// ones the fast path calls are typed; the others are kept as addresses.
#[repr(C)]
pub(crate) struct DLPackExchangeAPI {
    pub version: DLPackVersion,
    pub prev_api: *const c_void,
    pub managed_tensor_allocator: RFFIDLPackManagedTensorAllocator,
    pub managed_tensor_from_py_object_no_sync:
        Option<unsafe extern "C" fn(PyObj, *mut *mut DLManagedTensorVersioned) -> c_int>,
    pub managed_tensor_to_py_object_no_sync: *const c_void,
    pub dltensor_from_py_object_no_sync: *const c_void,
    pub current_work_stream: Option<unsafe extern "C" fn(i32, i32, *mut *mut c_void) -> c_int>,
}

const _: () = assert!(core::mem::size_of::<DLPackExchangeAPI>() == 56);

/// The capsule name the DLPack specification gives the API object.
const CAPSULE_NAME: &std::ffi::CStr = c"dlpack_exchange_api";

/// A small append-only table from type objects to a word, filled under the GIL and read without
/// a lock (an entry is written before `len` publishes it and never changes). The types in it are
/// kept alive, so an address is never reused by another type while it is in the table; once
/// full, nothing more is remembered (callers then redo their work).
struct TypeTable {
    types: [AtomicUsize; TYPE_SLOTS],
    values: [AtomicUsize; TYPE_SLOTS],
    len: AtomicUsize,
}

const TYPE_SLOTS: usize = 32;

impl TypeTable {
    const fn new() -> TypeTable {
        TypeTable {
            types: [const { AtomicUsize::new(0) }; TYPE_SLOTS],
            values: [const { AtomicUsize::new(0) }; TYPE_SLOTS],
            len: AtomicUsize::new(0),
        }
    }

    fn get(&self, t: PyObj) -> Option<usize> {
        let len = self.len.load(Ordering::Acquire);
        (0..len)
            .find(|&k| self.types[k].load(Ordering::Relaxed) == t as usize)
            .map(|k| self.values[k].load(Ordering::Relaxed))
    }

    /// # Safety
    /// GIL held; `t` a live type object not in the table.
    unsafe fn remember(&self, api: &Api, t: PyObj, value: usize) {
        let len = self.len.load(Ordering::Acquire);
        if len < TYPE_SLOTS {
            // SAFETY: GIL held; the reference keeps the type (and its address) alive.
            unsafe { (api.Py_IncRef)(t) };
            self.types[len].store(t as usize, Ordering::Relaxed);
            self.values[len].store(value, Ordering::Relaxed);
            self.len.store(len + 1, Ordering::Release);
        }
    }
}

/// Types probed for an exchange API: the API's address, or 0 for none.
static EXCHANGE_APIS: TypeTable = TypeTable::new();

/// The exchange API of arguments of exact type `t`, if it publishes a usable one.
///
/// # Safety
/// GIL held; `t` a live type object.
pub(super) unsafe fn api_of(api: &Api, h: &Hooks, t: PyObj) -> Option<&'static DLPackExchangeAPI> {
    let address = EXCHANGE_APIS.get(t).unwrap_or_else(|| {
        // SAFETY: forwarded.
        unsafe {
            let address = probe(api, h, t);
            EXCHANGE_APIS.remember(api, t, address);
            address
        }
    });
    // SAFETY: a non-zero address was checked by `probe` to be an API table of major version 1,
    // which the producer keeps for the life of the process (DLPack's rule).
    unsafe { (address as *const DLPackExchangeAPI).as_ref() }
}

/// Reads `t.__dlpack_c_exchange_api__`: the API's address when it is a capsule of the right name
/// holding a major-version-1 table with the entries the fast path calls, else 0.
///
/// # Safety
/// GIL held; `t` a live type object.
unsafe fn probe(api: &Api, h: &Hooks, t: PyObj) -> usize {
    // SAFETY: GIL held; a new reference (or NULL with an AttributeError, cleared: no API).
    let attr = unsafe { (api.PyObject_GetAttr)(t, h.exchange_name) };
    if attr.is_null() {
        // SAFETY: GIL held.
        unsafe { (api.PyErr_Clear)() };
        return 0;
    }
    // SAFETY: GIL held; `attr` is live. IsValid never raises; GetPointer cannot fail after it.
    let table = unsafe {
        let p = if (api.PyCapsule_IsValid)(attr, CAPSULE_NAME.as_ptr()) != 0 {
            (api.PyCapsule_GetPointer)(attr, CAPSULE_NAME.as_ptr())
        } else {
            std::ptr::null_mut()
        };
        (api.Py_DecRef)(attr);
        p.cast::<DLPackExchangeAPI>().cast_const()
    };
    // SAFETY: a valid capsule of this name holds a DLPackExchangeAPI (DLPack's rule); only the
    // stable header is read before the major version is known to match.
    match unsafe { table.as_ref() } {
        Some(x)
            if x.version.major == DLPACK_MAJOR_VERSION
                && x.managed_tensor_from_py_object_no_sync.is_some()
                && x.current_work_stream.is_some() =>
        {
            table as usize
        }
        _ => 0,
    }
}

/// Types whose `__dlpack__` gave a device tensor: the native `__dlpack__` call is not tried again
/// for them.
static NOT_HOST: TypeTable = TypeTable::new();

const VERSIONED: &std::ffi::CStr = c"dltensor_versioned";
const USED_VERSIONED: &std::ffi::CStr = c"used_dltensor_versioned";
const LEGACY: &std::ffi::CStr = c"dltensor";
const USED_LEGACY: &std::ffi::CStr = c"used_dltensor";

/// What a call imported and set, undone by `release` (or on drop). The arrays are filled from
/// the front (the first `n_*` entries are written); left uninitialized until then, so that the
/// common call, which imports nothing, does not clear them.
pub(super) struct Imports {
    tensors: [MaybeUninit<RFFIObjectHandle>; super::convert::MAX_ARGS],
    n_tensors: usize,
    /// (device type, device id, previous stream) for each device whose stream was set.
    streams: [MaybeUninit<(i32, i32, *mut c_void)>; super::convert::MAX_ARGS],
    n_streams: usize,
    /// The allocator in effect before the first tensor's producer installed its own.
    allocator: Option<RFFIDLPackManagedTensorAllocator>,
    /// The runtime's entry points.
    rt: &'static RFFIHostApi,
}

/// Why an import failed: a Python error is set, or an rffi Error was raised on this thread.
pub(super) enum ImportError {
    Python,
    Runtime,
}

impl Imports {
    pub(super) fn new(rt: &'static RFFIHostApi) -> Imports {
        Imports {
            tensors: [MaybeUninit::uninit(); super::convert::MAX_ARGS],
            n_tensors: 0,
            streams: [MaybeUninit::uninit(); super::convert::MAX_ARGS],
            n_streams: 0,
            allocator: None,
            rt,
        }
    }

    /// Takes `handle` (an imported Tensor) for the call: owned until `release`, passed in `slot`.
    fn keep(&mut self, handle: RFFIObjectHandle, slot: &mut RFFIAny) {
        self.keep_object(handle, kRFFITensor, slot);
    }

    /// Takes `handle` (an object of type `type_index` made for this call, such as a callback
    /// Function) for the call: owned until `release`, passed in `slot`.
    pub(super) fn keep_object(
        &mut self,
        handle: RFFIObjectHandle,
        type_index: i32,
        slot: &mut RFFIAny,
    ) {
        self.tensors[self.n_tensors].write(handle);
        self.n_tensors += 1;
        slot.type_index = type_index;
        slot.small_str_len = 0;
        slot.v.v_obj = handle.cast();
    }

    /// Imports `obj` through `x` into `slot`, installs the producer's allocator (the first
    /// producer decides) and makes its current stream rffi's for the tensor's device (the first
    /// tensor on a device decides).
    ///
    /// # Safety
    /// GIL held; `obj` live, of the type `x` was found on.
    pub(super) unsafe fn import(
        &mut self,
        api: &Api,
        x: &DLPackExchangeAPI,
        obj: PyObj,
        pos: usize,
        slot: &mut RFFIAny,
    ) -> Result<(), ImportError> {
        // SAFETY: forwarded.
        let (handle, device) = unsafe { import_exchange(api, self.rt, x, obj, pos) }?;
        self.keep(handle, slot);
        if self.allocator.is_none() && x.managed_tensor_allocator.is_some() {
            let mut prev: RFFIDLPackManagedTensorAllocator = None;
            // SAFETY: the producer's allocator has the DLPack allocator signature and lives for
            // the process (DLPack's rule for the API table); installed for this thread only.
            if unsafe {
                (self.rt.env_set_dlpack_managed_tensor_allocator)(
                    x.managed_tensor_allocator,
                    0,
                    &mut prev,
                )
            } != 0
            {
                return Err(ImportError::Runtime);
            }
            self.allocator = Some(prev);
        }
        let (dt, id) = (device.device_type, device.device_id);
        let seen = self.streams().iter().any(|&(t, i, _)| t == dt && i == id);
        if dt == kDLCPU || dt == kDLCUDAHost || seen {
            return Ok(());
        }
        let stream_of = x.current_work_stream.expect("checked by probe");
        let mut stream: *mut c_void = std::ptr::null_mut();
        // SAFETY: GIL held; the producer's own query for a device it reported.
        if unsafe { stream_of(dt, id, &mut stream) } != 0 {
            // SAFETY: GIL held.
            return Err(unsafe { producer_failed(api, pos, "querying its current stream") });
        }
        let mut prev: *mut c_void = std::ptr::null_mut();
        // SAFETY: plain values and a writable out-pointer.
        if unsafe { (self.rt.env_set_stream)(dt, id, stream, &mut prev) } != 0 {
            return Err(ImportError::Runtime);
        }
        self.streams[self.n_streams].write((dt, id, prev));
        self.n_streams += 1;
        Ok(())
    }

    /// Imports `obj` (of type `t`) through its own `__dlpack__` into `slot` (see
    /// [`import_dlpack`]). `Ok(false)`: leave this call to the Python path.
    ///
    /// # Safety
    /// GIL held; `obj` live, `t` its type.
    pub(super) unsafe fn import_dlpack(
        &mut self,
        api: &Api,
        h: &Hooks,
        obj: PyObj,
        t: PyObj,
        slot: &mut RFFIAny,
    ) -> Result<bool, ImportError> {
        // SAFETY: forwarded.
        Ok(match unsafe { import_dlpack(api, h, obj, t) }? {
            Some(handle) => {
                self.keep(handle, slot);
                true
            }
            None => false,
        })
    }

    /// The streams set so far.
    fn streams(&self) -> &[(i32, i32, *mut c_void)] {
        // SAFETY: the first `n_streams` entries are written (`import`).
        unsafe { written(&self.streams, self.n_streams) }
    }

    /// Restores the streams and the allocator, and releases the imported tensors (and the other
    /// objects made for the call).
    #[inline(always)]
    pub(super) fn release(&mut self) {
        if self.n_tensors == 0 && self.n_streams == 0 && self.allocator.is_none() {
            return; // the common call: nothing imported
        }
        self.release_all();
    }

    fn release_all(&mut self) {
        if let Some(prev) = self.allocator.take() {
            // SAFETY: putting back the allocator read when it was replaced.
            unsafe {
                (self.rt.env_set_dlpack_managed_tensor_allocator)(prev, 0, std::ptr::null_mut())
            };
        }
        for &(dt, id, prev) in self.streams().iter().rev() {
            // SAFETY: restoring a value read from the same call; cannot fail for a device that
            // was just accepted.
            unsafe { (self.rt.env_set_stream)(dt, id, prev, std::ptr::null_mut()) };
        }
        self.n_streams = 0;
        // SAFETY: the first `n_tensors` entries are written (`keep_object`).
        let tensors = unsafe { written(&self.tensors, self.n_tensors) };
        for &t in tensors {
            // SAFETY: a reference this call owns.
            unsafe { (self.rt.object_dec_ref)(t) };
        }
        self.n_tensors = 0;
    }
}

/// The first `n` entries of `a`.
///
/// # Safety
/// They must be initialized.
unsafe fn written<T>(a: &[MaybeUninit<T>], n: usize) -> &[T] {
    // SAFETY: `MaybeUninit<T>` has the layout of `T`; the first `n <= a.len()` are initialized.
    unsafe { std::slice::from_raw_parts(a[..n].as_ptr().cast::<T>(), n) }
}

impl Drop for Imports {
    fn drop(&mut self) {
        self.release();
    }
}

/// Exports `obj` through `x` and imports it: an owned Tensor, and its device.
///
/// # Safety
/// GIL held; `obj` live, of the type `x` was found on.
unsafe fn import_exchange(
    api: &Api,
    rt: &RFFIHostApi,
    x: &DLPackExchangeAPI,
    obj: PyObj,
    pos: usize,
) -> Result<(RFFIObjectHandle, DLDevice), ImportError> {
    let export = x
        .managed_tensor_from_py_object_no_sync
        .expect("checked by probe");
    let mut managed: *mut DLManagedTensorVersioned = std::ptr::null_mut();
    // SAFETY: GIL held; `obj` is of the type the API came from (the API's contract).
    if unsafe { export(obj, &mut managed) } != 0 || managed.is_null() {
        // SAFETY: GIL held.
        return Err(unsafe { producer_failed(api, pos, "exporting it") });
    }
    // SAFETY: the producer returned an owning, initialised managed tensor.
    let device = unsafe { (*managed).dl_tensor.device };
    let mut handle: RFFIObjectHandle = std::ptr::null_mut();
    // SAFETY: ownership of `managed` passes to the runtime (which releases it on failure).
    if unsafe { (rt.tensor_from_dlpack_versioned)(managed, 0, 0, &mut handle) } != 0 {
        return Err(ImportError::Runtime);
    }
    Ok((handle, device))
}

/// Imports `obj` (of type `t`) through `obj.__dlpack__(max_version=(1, 1))` as an owned Tensor.
/// `Ok(None)`: leave it to the Python path (a device tensor, an unknown capsule, or a failed
/// export; no error is left set).
///
/// # Safety
/// GIL held; `obj` live, `t` its type.
unsafe fn import_dlpack(
    api: &Api,
    h: &Hooks,
    obj: PyObj,
    t: PyObj,
) -> Result<Option<RFFIObjectHandle>, ImportError> {
    if NOT_HOST.get(t).is_some() {
        return Ok(None);
    }
    // SAFETY: GIL held; new references, each released below.
    let capsule = unsafe {
        // obj.__dlpack__(max_version=(1, 1)), as a vectorcall (no bound method, no dict).
        let args = [obj, h.dlpack_version];
        let c = (api.PyObject_VectorcallMethod)(h.dlpack_name, args.as_ptr(), 1, h.dlpack_kwnames);
        if c.is_null() {
            (api.PyErr_Clear)(); // the Python path repeats the export and raises
            return Ok(None);
        }
        c
    };
    // SAFETY: GIL held; `capsule` is a new reference. A capsule of either name holds the managed
    // tensor of that DLPack form (DLPack's rule); renaming it "used" hands the tensor to the
    // runtime, which releases it even when the import fails.
    unsafe {
        let versioned = (api.PyCapsule_IsValid)(capsule, VERSIONED.as_ptr()) != 0;
        let legacy = !versioned && (api.PyCapsule_IsValid)(capsule, LEGACY.as_ptr()) != 0;
        let managed = if versioned {
            (api.PyCapsule_GetPointer)(capsule, VERSIONED.as_ptr())
        } else if legacy {
            (api.PyCapsule_GetPointer)(capsule, LEGACY.as_ptr())
        } else {
            std::ptr::null_mut()
        };
        let device_type = if versioned {
            managed
                .cast::<DLManagedTensorVersioned>()
                .as_ref()
                .map(|m| m.dl_tensor.device)
        } else {
            managed
                .cast::<DLManagedTensor>()
                .as_ref()
                .map(|m| m.dl_tensor.device)
        }
        .map(|d| d.device_type);
        if device_type != Some(kDLCPU) {
            if device_type.is_some() {
                NOT_HOST.remember(api, t, 1);
            }
            // Unconsumed: the capsule's destructor releases the tensor.
            (api.Py_DecRef)(capsule);
            return Ok(None);
        }
        let used = if versioned {
            USED_VERSIONED
        } else {
            USED_LEGACY
        };
        (api.PyCapsule_SetName)(capsule, used.as_ptr());
        (api.Py_DecRef)(capsule);
        let mut handle: RFFIObjectHandle = std::ptr::null_mut();
        let rc = if versioned {
            (h.rt.tensor_from_dlpack_versioned)(managed.cast(), 0, 0, &mut handle)
        } else {
            (h.rt.tensor_from_dlpack)(managed.cast(), 0, 0, &mut handle)
        };
        if rc != 0 {
            return Err(ImportError::Runtime);
        }
        Ok(Some(handle))
    }
}

/// `rffi.from_dlpack(obj)` without Python code in between, for the producers the call path
/// imports natively: a new Tensor handle, 0 when `obj` is left to the Python code (no error
/// set), or -1 with an rffi Error raised on this thread. A Python error a producer sets is left
/// set (ctypes raises it).
///
/// # Safety
/// GIL held; `obj` a live object.
pub(super) unsafe fn from_dlpack(api: &Api, h: &Hooks, obj: PyObj) -> i64 {
    // SAFETY: GIL held; `obj` live.
    let r = unsafe {
        let t = api.type_of(obj);
        if let Some(x) = api_of(api, h, t) {
            import_exchange(api, h.rt, x, obj, 0).map(|(handle, _)| Some(handle))
        } else {
            // A type the package's conversion table knows as a DLPack producer (a type it does
            // not know yet is left to the Python code, which learns its rule).
            if super::kinds::known_kind(api, h, t) == Some(super::kinds::native::DLPACK) {
                import_dlpack(api, h, obj, t)
            } else {
                Ok(None)
            }
        }
    };
    match r {
        Ok(Some(handle)) => handle as i64,
        Ok(None) => 0,
        Err(ImportError::Runtime) => -1,
        Err(ImportError::Python) => 0,
    }
}

/// A producer entry failed: keep its Python error, or raise one naming what failed when it set
/// none.
///
/// # Safety
/// GIL held.
unsafe fn producer_failed(api: &Api, pos: usize, what: &str) -> ImportError {
    // SAFETY: GIL held.
    unsafe {
        if (api.PyErr_Occurred)().is_null() {
            let msg = format!(
                "rffi: argument {pos}: the tensor's DLPack exchange API failed {what} without \
                 setting an error\0"
            );
            (api.PyErr_SetString)(api.PyExc_RuntimeError, msg.as_ptr().cast());
        }
    }
    ImportError::Python
}
