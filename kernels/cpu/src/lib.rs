//! The CPU backend of the rffi kernel layer: every op for host memory, any strides, on all
//! cores for large tensors. Always available, and the last backend tried.
//!
//! Dtypes: float32, float64, float16, bfloat16 for every op (half types compute in float32);
//! int32 and int64 for add, sub and mul (wrapping, as PyTorch and numpy do).

#![deny(unsafe_op_in_unsafe_fn)]
// DLPack constants keep their C names (`kDLCPU`).
#![allow(non_upper_case_globals)]

mod alloc;
mod elem;
mod ewise;
mod layout;
mod math;
mod matmul;
mod reduce;

pub use math::exp_f32;

use rffi_core::abi::{kDLCPU, kDLCUDAHost, kDLCUDAManaged, kDLROCMHost};
use rffi_core::{DataType, Result};
use rffi_kernels::{Availability, Backend, Implementation, Op, OpCall};

pub use rffi_kernels::{FLOATS, INTS};

/// Device types whose memory the CPU reads directly: host memory, pinned host memory, and CUDA
/// managed memory (a GPU backend, when there is one, is chosen first for the latter).
pub const DEVICE_TYPES: [i32; 4] = [kDLCPU, kDLCUDAHost, kDLROCMHost, kDLCUDAManaged];

/// Threading parameters, from the tuning files (`tune/cpu/*.json`) with built-in defaults.
pub(crate) struct Tuning {
    /// Below this many elements, one thread does the work (spawning costs more).
    pub min_parallel: usize,
    /// Elements per task.
    pub grain: usize,
}

impl Tuning {
    pub fn read(call: &OpCall<'_>, key: &str) -> Result<Tuning> {
        let n = call.out.numel().max(call.inputs[0].numel());
        let threads = rayon::current_num_threads() as i64;
        let vars = [("numel", n), ("threads", threads)];
        let Some(c) = call.tune.select(key, &vars)? else {
            return Ok(Tuning {
                min_parallel: 1 << 16,
                grain: 1 << 15,
            });
        };
        Ok(Tuning {
            min_parallel: c.get("min_parallel").unwrap_or(1 << 16).max(0) as usize,
            grain: c.get("grain").unwrap_or(1 << 15).max(1) as usize,
        })
    }
}

fn imp(
    op: Op,
    dtypes: &[DataType],
    k: impl Fn(&OpCall<'_>) -> Result<()> + Send + Sync + 'static,
) -> Vec<Implementation> {
    // One implementation per device type the CPU reads.
    let k = std::sync::Arc::new(k);
    DEVICE_TYPES
        .iter()
        .map(|&t| {
            let k = k.clone();
            Implementation::new(op, t, dtypes, move |c: &OpCall<'_>| k(c))
        })
        .collect()
}

/// The CPU backend, to pass to `rffi_kernels::install` or a `Registry`.
pub fn backend() -> Backend {
    let all: Vec<DataType> = FLOATS.iter().chain(&INTS).copied().collect();
    Backend::new("cpu", &DEVICE_TYPES)
        .fallback()
        .dtypes(&all)
        .tune_file("default.json", include_str!("../../tune/cpu/default.json"))
        .allocator(|shape, dtype, device, _stream| alloc::empty(shape, dtype, device))
        .probe(|| {
            Ok(Availability {
                detail: format!("{} threads", rayon::current_num_threads()),
                ..Availability::default()
            })
        })
        .implementations(move |_| {
            let mut v = Vec::new();
            for op in [Op::Add, Op::Sub, Op::Mul] {
                v.extend(imp(op, &all, ewise::binary_any));
            }
            v.extend(imp(Op::Div, &FLOATS, ewise::binary_any));
            for op in [Op::Relu, Op::Gelu, Op::Exp] {
                v.extend(imp(op, &FLOATS, ewise::unary_float));
            }
            v.extend(imp(Op::Sum, &FLOATS, reduce::sum));
            v.extend(imp(Op::Softmax, &FLOATS, reduce::softmax));
            v.extend(imp(Op::Matmul, &FLOATS, matmul::matmul));
            Ok(v)
        })
}
