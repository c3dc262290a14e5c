//! Kernel launches: with or without dynamic shared memory, and the size of a persistent grid.

use super::{err, sm_count};
use cudarc::driver::{result, sys};
use rffi_core::Result;
use std::ffi::c_void;
use std::sync::Mutex;

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
