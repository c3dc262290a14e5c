//! The kernels' modules, compiled by NVRTC once per device, dtype and family and loaded in the
//! device's primary context, and their functions, remembered per thread by the name's address.

use super::{device_state, err, Handle};
use crate::source::{dt_of, module_source, Dt, Family};
use cudarc::driver::{result, sys};
use rffi_core::{DataType, Device, Error, Result};
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Mutex, OnceLock};

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
