//! The CPU backend of the rffi kernel layer: every op for host memory, any strides, on all
//! cores for large tensors. Always available, and the last backend tried.
//!
//! Dtypes: float32, float64, float16, bfloat16 for every op (half types compute in float32);
//! int32 and int64 for add, sub and mul (wrapping, as PyTorch and numpy do).

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
// DLPack constants keep their C names (`kDLCPU`).
#![allow(non_upper_case_globals)]

mod alloc;
mod elem;
mod ewise;
mod layout;
mod math;
mod matmul;
mod norm;
mod reduce;
mod softmax;

pub use math::exp_f32;

use rffi_core::abi::{kDLCPU, kDLCUDAHost, kDLCUDAManaged, kDLROCMHost};
use rffi_core::{DataType, Result};
use rffi_kernels::{Availability, Backend, Explanation, Implementation, Op, OpCall};

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
    /// The tuning entry the values came from (`explain`); `None`: built-in defaults.
    pub origin: Option<String>,
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
                origin: None,
            });
        };
        Ok(Tuning {
            min_parallel: c.get("min_parallel").unwrap_or(1 << 16).max(0) as usize,
            grain: c.get("grain").unwrap_or(1 << 15).max(1) as usize,
            origin: Some(c.describe()),
        })
    }
}

type ExplainFn = fn(&OpCall<'_>) -> Result<Explanation>;

fn imp(
    op: Op,
    dtypes: &[DataType],
    k: impl Fn(&OpCall<'_>) -> Result<()> + Send + Sync + 'static,
    explain: Option<ExplainFn>,
) -> Vec<Implementation> {
    // One implementation per device type the CPU reads.
    let k = std::sync::Arc::new(k);
    DEVICE_TYPES
        .iter()
        .map(|&t| {
            let k = k.clone();
            let i = Implementation::new(op, t, dtypes, move |c: &OpCall<'_>| k(c));
            match explain {
                Some(e) => i.with_explain(e),
                None => i,
            }
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
                v.extend(imp(op, &all, ewise::binary_any, None));
            }
            v.extend(imp(Op::Div, &FLOATS, ewise::binary_any, None));
            for op in [Op::Relu, Op::Gelu, Op::Exp] {
                v.extend(imp(op, &FLOATS, ewise::unary_float, None));
            }
            for op in [Op::Sum, Op::Mean, Op::Max, Op::Min, Op::Argmax] {
                v.extend(imp(op, &FLOATS, reduce::reduce, Some(reduce::explain)));
            }
            v.extend(imp(Op::Softmax, &FLOATS, softmax::softmax, None));
            for op in [Op::LayerNorm, Op::RmsNorm] {
                v.extend(imp(op, &FLOATS, norm::norm, None));
            }
            v.extend(imp(Op::Matmul, &FLOATS, matmul::matmul, None));
            Ok(v)
        })
}
