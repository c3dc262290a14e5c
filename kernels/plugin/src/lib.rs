//! The rffi kernels as a plugin: `librffi_kernels_plugin.so`. A C or Python host loads it with
//! `RFFIModuleLoadFromFile` / `rffi.load_module`, a Rust host with `Module::load`; its init
//! registers the CPU and CUDA backends and the global functions `kernels.*` in the host's
//! function registry. Nothing is probed at load time: backends are probed at the first call that needs
//! them.
#![deny(missing_docs)]

fn init() -> rffi_core::Result<()> {
    rffi_kernels::install([rffi_kernels_cpu::backend(), rffi_kernels_cuda::backend()])
}

rffi_core::export_plugin!(init = init);
