//! The CUDA driver through cudarc, guarded: every entry checks that the library is present and
//! catches panics (cudarc panics when a library or a symbol is missing), turning both into
//! errors. Contexts are the devices' primary contexts (the ones PyTorch and the runtime API
//! use), so pointers from other frameworks are valid in them.

use crate::source::{dt_of, module_source, Dt, Family};
use cudarc::driver::{result, sys};
use rffi_core::error::catch_panic;
use rffi_core::{DataType, Device, Error, Result};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Mutex, OnceLock};

/// Runs `f`, turning a panic (a missing library or symbol in cudarc) into an error, quietly, the
/// way every rffi boundary does (`catch_panic`).
pub fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_panic(f).unwrap_or_else(|e| Err(e.context(&format!("kernels (cuda): {what}"))))
}

/// A driver error as an rffi error naming what failed.
pub fn err(what: &str, e: result::DriverError) -> Error {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Error::runtime_error(format!("kernels (cuda): {what} failed: {name} ({text})"))
}

/// Whether libcuda can be loaded (no driver call is made).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    catch_panic(|| unsafe { sys::is_culib_present() }).unwrap_or(false)
}

pub fn nvrtc_present() -> bool {
    // SAFETY: as above.
    catch_panic(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

pub fn cublas_present() -> bool {
    // SAFETY: as above.
    catch_panic(|| unsafe { cudarc::cublas::sys::is_culib_present() }).unwrap_or(false)
}

/// What the probe learns about one device.
#[derive(Clone, Debug)]
pub struct DevInfo {
    pub name: String,
    pub major: i32,
    pub minor: i32,
    pub sms: i32,
    /// Bytes of shared memory one block may use when it asks for more than the default 48 KiB.
    pub smem_block: i32,
}

impl DevInfo {
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }
}

pub fn device_info(ordinal: i32) -> Result<DevInfo> {
    let dev = result::device::get(ordinal).map_err(|e| err("cuDeviceGet", e))?;
    let attr = |a| {
        // SAFETY: a valid device handle and attribute.
        unsafe { result::device::get_attribute(dev, a) }.map_err(|e| err("cuDeviceGetAttribute", e))
    };
    use sys::CUdevice_attribute::*;
    Ok(DevInfo {
        name: result::device::get_name(dev).map_err(|e| err("cuDeviceGetName", e))?,
        major: attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        minor: attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        sms: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        smem_block: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
    })
}

/// Raw handles that may cross threads: contexts, modules and functions are process-wide.
#[derive(Copy, Clone)]
struct Handle<T>(T);
// SAFETY: CUDA driver handles are valid from any thread of the process, and the driver API is
// thread-safe for the calls made with them.
unsafe impl<T> Send for Handle<T> {}
// SAFETY: as above; the handles are only read after being stored.
unsafe impl<T> Sync for Handle<T> {}

/// Per device: the retained primary context and what was learnt about the device.
struct DeviceState {
    ctx: Handle<sys::CUcontext>,
    info: DevInfo,
}

/// Devices by ordinal: read without a lock once set (every call reads its device's state).
const MAX_DEVICES: usize = 64;
static DEVICES: [OnceLock<DeviceState>; MAX_DEVICES] = [const { OnceLock::new() }; MAX_DEVICES];

fn device_state(ordinal: i32) -> Result<&'static DeviceState> {
    let slot = usize::try_from(ordinal)
        .ok()
        .and_then(|i| DEVICES.get(i))
        .ok_or_else(|| {
            Error::value_error(format!(
                "kernels (cuda): device ordinal {ordinal} is outside 0..{MAX_DEVICES}"
            ))
        })?;
    if let Some(s) = slot.get() {
        return Ok(s);
    }
    // One thread retains the context; the others wait and read what it stored.
    static INIT: Mutex<()> = Mutex::new(());
    let _init = INIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = slot.get() {
        return Ok(s);
    }
    let dev = result::device::get(ordinal).map_err(|e| err("cuDeviceGet", e))?;
    // SAFETY: a valid device; the retained context is kept for the process's lifetime.
    let ctx = unsafe { result::primary_ctx::retain(dev) }
        .map_err(|e| err("cuDevicePrimaryCtxRetain", e))?;
    let info = device_info(ordinal)?;
    Ok(slot.get_or_init(|| DeviceState {
        ctx: Handle(ctx),
        info,
    }))
}

pub fn sm_count(ordinal: i32) -> Result<i32> {
    Ok(device_state(ordinal)?.info.sms)
}

/// Whether the device runs thread block clusters (compute capability 9.0 on).
pub fn has_clusters(ordinal: i32) -> Result<bool> {
    Ok(device_state(ordinal)?.info.major >= 9)
}

/// Bytes of dynamic shared memory one block may take on the device (`launch_shared`).
pub fn smem_per_block(ordinal: i32) -> Result<i32> {
    Ok(device_state(ordinal)?.info.smem_block)
}

/// Makes the device's primary context current on this thread until dropped, then restores the
/// previous one (the dispatcher's device guard).
pub struct ContextGuard {
    /// The context to make current again (possibly none), when entering switched.
    restore: Option<Handle<sys::CUcontext>>,
}

impl ContextGuard {
    /// Whether leaving restores anything (a guard that does not can be dropped at once).
    pub fn switched(&self) -> bool {
        self.restore.is_some()
    }
}

impl ContextGuard {
    pub fn enter(device: Device) -> Result<ContextGuard> {
        guarded("binding the device's context", || {
            let state = device_state(device.index())?;
            let current = result::ctx::get_current().map_err(|e| err("cuCtxGetCurrent", e))?;
            // The common case (a framework already made this device current on the thread)
            // costs one query: nothing to switch, nothing to restore.
            if current == Some(state.ctx.0) {
                return Ok(ContextGuard { restore: None });
            }
            // SAFETY: a retained primary context.
            unsafe { result::ctx::set_current(state.ctx.0) }
                .map_err(|e| err("cuCtxSetCurrent", e))?;
            Ok(ContextGuard {
                restore: Some(Handle(current.unwrap_or(std::ptr::null_mut()))),
            })
        })
    }
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        if let Some(prev) = self.restore {
            let _ = catch_panic(|| {
                // SAFETY: the context that was current before (or none).
                unsafe { result::ctx::set_current(prev.0) }
            });
        }
    }
}

/// A compiled module's functions, keyed by name.
struct Module {
    functions: Mutex<HashMap<&'static str, Handle<sys::CUfunction>>>,
    module: Handle<sys::CUmodule>,
}

type ModuleKey = (i32, &'static str, Family);

fn modules() -> &'static Mutex<HashMap<ModuleKey, &'static Module>> {
    static M: OnceLock<Mutex<HashMap<ModuleKey, &'static Module>>> = OnceLock::new();
    M.get_or_init(Default::default)
}

/// Compiles (once per device, dtype and family; NVRTC for the device's arch) and loads a module
/// in the current context.
fn module(ordinal: i32, dt: &Dt, family: Family) -> Result<&'static Module> {
    let key = (ordinal, dt.name, family);
    let mut map = modules().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = map.get(&key) {
        return Ok(m);
    }
    let info = &device_state(ordinal)?.info;
    let opts = cudarc::nvrtc::CompileOptions {
        options: vec![
            format!("--gpu-architecture=compute_{}{}", info.major, info.minor),
            "--std=c++17".into(),
        ],
        name: Some(format!("rffi_kernels_{}_{}.cu", dt.name, family.name())),
        ..Default::default()
    };
    let ptx =
        cudarc::nvrtc::compile_ptx_with_opts(module_source(dt, family), opts).map_err(|e| {
            let detail = match &e {
                cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                    log.to_string_lossy().into_owned()
                }
                other => format!("{other:?}"),
            };
            Error::runtime_error(format!(
                "kernels (cuda): NVRTC could not compile the {} {} kernels for {}: {detail}",
                dt.name,
                family.name(),
                info.arch()
            ))
        })?;
    let image = CString::new(ptx.to_src())
        .map_err(|_| Error::runtime_error("kernels (cuda): NVRTC returned PTX with a NUL byte"))?;
    // SAFETY: a NUL-terminated PTX image; the module stays loaded for the process's lifetime.
    let m = unsafe { result::module::load_data(image.as_ptr().cast()) }
        .map_err(|e| err("cuModuleLoadData", e))?;
    let module: &'static Module = Box::leak(Box::new(Module {
        functions: Mutex::default(),
        module: Handle(m),
    }));
    map.insert(key, module);
    Ok(module)
}

/// The kernel `name` of `dtype`'s `family` module on `device` (names are static, so a call
/// finds its kernel without building a string).
pub fn function(
    device: Device,
    dtype: DataType,
    family: Family,
    name: &'static str,
) -> Result<sys::CUfunction> {
    Ok(kernel(device, dtype, family, name, 0)?.0)
}

/// One remembered kernel: the key (device, dtype, family, the name's address and length), its
/// handle, and its resident blocks an SM at `block` threads.
#[derive(Copy, Clone)]
struct Slot {
    device: i32,
    dtype: DataType,
    family: Family,
    name: (usize, usize),
    f: Handle<sys::CUfunction>,
    block: u32,
    resident: u32,
}

const SLOTS: usize = 64;

thread_local! {
    /// Per thread, direct-mapped by the name's address: a call finds its kernel with a few
    /// comparisons, no lock and no hashing of the name.
    static KERNELS: [std::cell::Cell<Option<Slot>>; SLOTS] =
        const { [const { std::cell::Cell::new(None) }; SLOTS] };
}

/// `function`, and how many blocks of `block` threads an SM holds at once (0 when `block` is
/// 0): a grid-stride kernel launched with that many blocks an SM runs in one wave.
pub fn kernel(
    device: Device,
    dtype: DataType,
    family: Family,
    name: &'static str,
    block: u32,
) -> Result<(sys::CUfunction, u32)> {
    let key = (name.as_ptr() as usize, name.len());
    let at = (key.0 >> 3 ^ key.0 >> 9 ^ device.index() as usize) % SLOTS;
    let hit = KERNELS
        .try_with(|k| k[at].get())
        .ok()
        .flatten()
        .filter(|s| {
            s.name == key && s.device == device.index() && s.dtype == dtype && s.family == family
        });
    if let Some(s) = hit.filter(|s| s.block == block) {
        return Ok((s.f.0, s.resident));
    }
    let f = match hit {
        Some(s) => s.f.0,
        None => load_function(device, dtype, family, name)?,
    };
    let resident = if block == 0 {
        0
    } else {
        // SAFETY: a loaded function; no dynamic shared memory.
        unsafe { result::occupancy::max_active_block_per_multiprocessor(f, block as i32, 0) }
            .map_err(|e| err("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?
            .max(1) as u32
    };
    let slot = Slot {
        device: device.index(),
        dtype,
        family,
        name: key,
        f: Handle(f),
        block,
        resident,
    };
    let _ = KERNELS.try_with(|k| k[at].set(Some(slot)));
    Ok((f, resident))
}

fn load_function(
    device: Device,
    dtype: DataType,
    family: Family,
    name: &'static str,
) -> Result<sys::CUfunction> {
    let dt = dt_of(dtype)
        .ok_or_else(|| Error::type_error(format!("kernels (cuda): no kernels for {dtype}")))?;
    let m = module(device.index(), &dt, family)?;
    let mut f = m.functions.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = f.get(name) {
        return Ok(h.0);
    }
    let cname = CString::new(name).expect("kernel names have no NUL");
    // SAFETY: a loaded module.
    let func = unsafe { result::module::get_function(m.module.0, cname) }
        .map_err(|e| err(&format!("cuModuleGetFunction({name})"), e))?;
    f.insert(name, Handle(func));
    Ok(func)
}

/// Launches `f` on `stream` with `args` (pointers to each argument's value).
///
/// # Safety
/// `args` must match the kernel's parameters, and the memory they point to must be valid for the
/// kernel's accesses until it completes.
pub unsafe fn launch(
    f: sys::CUfunction,
    grid: (u32, u32),
    block: u32,
    stream: sys::CUstream,
    args: &mut [*mut c_void],
) -> Result<()> {
    // SAFETY: forwarded contract.
    unsafe { launch_shared(f, grid, block, 0, stream, args) }
}

/// `launch` with `shared` bytes of dynamic shared memory (at most `smem_per_block`). Without
/// asking, a launch gets 48 KiB less the kernel's static shared memory: from 40 KiB on (the
/// kernels that take dynamic memory keep under 8 KiB static) the function is first allowed
/// `shared` bytes (`allow_shared`).
///
/// # Safety
/// As `launch`.
pub unsafe fn launch_shared(
    f: sys::CUfunction,
    grid: (u32, u32),
    block: u32,
    shared: u32,
    stream: sys::CUstream,
    args: &mut [*mut c_void],
) -> Result<()> {
    if shared > 40 * 1024 {
        allow_shared(f, shared)?;
    }
    let grid = (grid.0.max(1), grid.1.max(1), 1);
    // SAFETY: forwarded contract.
    unsafe { result::launch_kernel(f, grid, (block, 1, 1), shared, stream, args) }
        .map_err(|e| err("cuLaunchKernel", e))
}

/// Allows `f` at least `shared` bytes of dynamic shared memory. The limit is the function's, for
/// every thread: it only ever grows (a thread lowering it could fail another's launch in flight),
/// and a launch within what was allowed before makes no driver call.
fn allow_shared(f: sys::CUfunction, shared: u32) -> Result<()> {
    static ALLOWED: Mutex<Vec<(usize, u32)>> = Mutex::new(Vec::new());
    let mut allowed = ALLOWED.lock().unwrap_or_else(|e| e.into_inner());
    let at = allowed.iter().position(|&(g, _)| g == f as usize);
    if at.is_some_and(|i| allowed[i].1 >= shared) {
        return Ok(());
    }
    use sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX;
    // SAFETY: a loaded function; a per-function setting, not a launch.
    unsafe { result::function::set_function_attribute(f, MAX, shared as i32) }
        .map_err(|e| err("cuFuncSetAttribute", e))?;
    match at {
        Some(i) => allowed[i].1 = shared,
        None => allowed.push((f as usize, shared)),
    }
    Ok(())
}

/// How many clusters of `cn` blocks (`cn` 1: blocks) of `f` at `block` threads and `shared` bytes
/// of dynamic shared memory the device runs at once: a persistent grid of that many takes the
/// device in one wave (a larger one would leave its last clusters waiting for the first to
/// finish their every row). Remembered per (function, block, shared), as it costs a driver call.
pub fn resident_clusters(
    ordinal: i32,
    f: sys::CUfunction,
    block: u32,
    shared: u32,
    cn: u32,
) -> Result<u32> {
    type Key = (usize, u32, u32);
    static KNOWN: Mutex<Vec<(Key, u32)>> = Mutex::new(Vec::new());
    let key = (f as usize, block, shared);
    let known = |k: &Vec<(Key, u32)>| k.iter().find(|e| e.0 == key).map(|e| e.1);
    if let Some(n) = known(&KNOWN.lock().unwrap_or_else(|e| e.into_inner())) {
        return Ok(n);
    }
    if shared > 40 * 1024 {
        allow_shared(f, shared)?;
    }
    let n = if cn <= 1 {
        // SAFETY: a loaded function allowed `shared` bytes.
        let per_sm = unsafe {
            result::occupancy::max_active_block_per_multiprocessor(f, block as i32, shared as usize)
        }
        .map_err(|e| err("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        per_sm.max(0) as u32 * sm_count(ordinal)?.max(1) as u32
    } else {
        // The cluster size is the kernel's own (`__cluster_dims__`), so the configuration names
        // none; the grid is a multiple of it.
        let config = sys::CUlaunchConfig {
            gridDimX: cn * sm_count(ordinal)?.max(1) as u32,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: block,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: shared,
            hStream: std::ptr::null_mut(),
            attrs: std::ptr::null_mut(),
            numAttrs: 0,
        };
        let mut clusters = 0;
        // SAFETY: a loaded function allowed `shared` bytes; `config` outlives the call, which
        // only reads it and writes the count.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, f, &config) }
            .result()
            .map_err(|e| err("cuOccupancyMaxActiveClusters", e))?;
        clusters.max(0) as u32
    };
    let n = n.max(1);
    let mut k = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if k.len() >= 64 {
        k.clear();
    }
    k.push((key, n));
    Ok(n)
}

/// Zeroes `bytes` bytes at `ptr` in stream order.
///
/// # Safety
/// `ptr` .. `ptr + bytes` is device memory that the work on `stream` may write.
pub unsafe fn zero_async(ptr: u64, bytes: usize, stream: sys::CUstream) -> Result<()> {
    // SAFETY: forwarded contract.
    unsafe { result::memset_d8_async(ptr, 0, bytes, stream) }.map_err(|e| err("cuMemsetD8Async", e))
}

/// Device memory for temporaries, allocated and freed in stream order.
pub struct Scratch {
    pub ptr: u64,
    bytes: usize,
    stream: sys::CUstream,
}

impl Scratch {
    pub fn new(bytes: usize, stream: sys::CUstream) -> Result<Scratch> {
        // SAFETY: a stream-ordered allocation used only on `stream`.
        let ptr = unsafe { result::malloc_async(stream, bytes.max(1)) }
            .map_err(|e| err("cuMemAllocAsync", e))?;
        Ok(Scratch { ptr, bytes, stream })
    }

    /// Zeroes `bytes` bytes from offset `at`, in stream order.
    pub fn zero(&self, at: usize, bytes: usize) -> Result<()> {
        assert!(at + bytes <= self.bytes, "zeroing past the scratch");
        // SAFETY: within this allocation, which only `stream`'s work uses.
        unsafe { zero_async(self.ptr + at as u64, bytes, self.stream) }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let (ptr, stream) = (self.ptr, self.stream);
        let _ = catch_panic(move || {
            // SAFETY: allocated on this stream; freed after the work queued on it.
            unsafe { result::free_async(ptr, stream) }
        });
    }
}

/// Device memory kept per (device, stream) for one-pass reductions: a region of u32 counters that
/// is zero between kernels (the kernel that counts sets each counter back to 0), then room for
/// partials. A call reuses it with no allocation and no memset; one that needs more frees it and
/// allocates a larger one in stream order, zeroing its counters once. The lock is held while `f`
/// enqueues its work, so a growth on another thread cannot free memory that a launch not yet
/// enqueued would use; every use is ordered on its stream.
///
/// `f` gets the partials' address; counter `o` (o < counters / 4) is at that address - 4 (o + 1).
pub fn with_kept_scratch<R>(
    ordinal: i32,
    stream: sys::CUstream,
    counters: usize,
    partials: usize,
    f: impl FnOnce(u64) -> Result<R>,
) -> Result<R> {
    struct Kept {
        ordinal: i32,
        stream: usize,
        ptr: u64,
        counters: usize,
        partials: usize,
    }
    static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let at = kept
        .iter()
        .position(|k| k.ordinal == ordinal && k.stream == stream as usize);
    let fits = at.is_some_and(|i| kept[i].counters >= counters && kept[i].partials >= partials);
    let i = match at {
        Some(i) if fits => i,
        _ => {
            let (old_c, old_p, old_ptr) = at.map_or((0, 0, 0), |i| {
                (kept[i].counters, kept[i].partials, kept[i].ptr)
            });
            let c = counters.max(old_c).max(256).next_power_of_two();
            let p = partials.max(old_p).max(4096).next_power_of_two();
            // SAFETY: a stream-ordered allocation used only on `stream`.
            let ptr = unsafe { result::malloc_async(stream, c + p) }
                .map_err(|e| err("cuMemAllocAsync", e))?;
            // SAFETY: the counters lie within the allocation just made, used only on `stream`.
            if let Err(e) = unsafe { zero_async(ptr, c, stream) } {
                // SAFETY: allocated above on this stream, never used.
                let _ = unsafe { result::free_async(ptr, stream) };
                return Err(e);
            }
            if old_ptr != 0 {
                // SAFETY: allocated on this stream; freed after the work queued on it.
                let _ = unsafe { result::free_async(old_ptr, stream) };
            }
            let k = Kept {
                ordinal,
                stream: stream as usize,
                ptr,
                counters: c,
                partials: p,
            };
            match at {
                Some(i) => {
                    kept[i] = k;
                    i
                }
                None => {
                    kept.push(k);
                    kept.len() - 1
                }
            }
        }
    };
    let k = &kept[i];
    f(k.ptr + k.counters as u64)
}

/// Allocates a device buffer for an output when the host has no environment allocator; freed
/// (synchronously, in the device's context) when the tensor dies.
pub fn alloc_output(bytes: usize, device: Device) -> Result<(u64, Box<dyn FnOnce() + Send>)> {
    guarded("allocating an output", || {
        let state = device_state(device.index())?;
        // SAFETY: the device's context is current (the dispatcher's guard).
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }.map_err(|e| err("cuMemAlloc", e))?;
        let ctx = state.ctx;
        let release = Box::new(move || {
            let ctx = ctx;
            let _ = catch_panic(move || {
                // SAFETY: free the buffer in its own context (the deleter may run on any thread).
                unsafe {
                    let prev = result::ctx::get_current().ok().flatten();
                    let _ = result::ctx::set_current(ctx.0);
                    let _ = result::free_sync(ptr);
                    let _ = result::ctx::set_current(prev.unwrap_or(std::ptr::null_mut()));
                }
            });
        });
        Ok((ptr, release as Box<dyn FnOnce() + Send>))
    })
}
