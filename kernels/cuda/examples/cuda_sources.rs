//! Writes the CUDA source of every module the backend compiles (each dtype and family, exactly
//! as `source::module_source` assembles it for NVRTC) into a folder, one
//! `rffi_kernels_<dtype>_<family>.cu` a module, for the offline compile check
//! (`kernels/cuda/check/cuda_check.sh`, `make cuda-check`), and beside it `<module>.names`, the
//! kernels the planners can choose from it (one a line), which the check finds in the PTX.
//!
//! Usage: `cargo run -p rffi-kernels-cuda --example cuda_sources -- OUT_DIR`

use rffi_kernels_cuda::ops::planned_kernels;
use rffi_kernels_cuda::source::{dt_of, module_source, Family, DTYPES};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: cuda_sources OUT_DIR");
        return ExitCode::from(2);
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cuda_sources: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let mut written = 0;
    for d in DTYPES {
        let dt = dt_of(d).expect("every listed dtype has a CUDA module");
        for family in Family::ALL.into_iter().filter(|f| f.serves(&dt)) {
            let module = format!("rffi_kernels_{}_{}", dt.name, family.name());
            let mut files = vec![(format!("{module}.cu"), module_source(&dt, family))];
            let names = planned_kernels(&dt, family);
            if !names.is_empty() {
                files.push((format!("{module}.names"), names.join("\n") + "\n"));
            }
            for (name, text) in files {
                let path = dir.join(name);
                if let Err(e) = std::fs::write(&path, text) {
                    eprintln!("cuda_sources: cannot write {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            }
            written += 1;
        }
    }
    println!("{written} modules in {}", dir.display());
    ExitCode::SUCCESS
}
