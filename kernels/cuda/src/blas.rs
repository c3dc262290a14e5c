//! `matmul` through cuBLAS (`cublasGemmStridedBatchedEx`), the library PyTorch uses.
//!
//! Row-major `C = A B` is computed as the column-major `C^T = B^T A^T`, so no operand is copied
//! when each matrix has a unit stride in one of its last two dims and the batch dims collapse to
//! one stride (or the operand is 2-D, shared by every batch entry). Other layouts are first
//! copied into compact scratch buffers.

use crate::driver::{self, guarded, Scratch};
use crate::ops::{compact_strides, copy_compact, copy_to, ptr};
use cudarc::cublas::sys as cb;
use rffi_core::{DataType, Error, Result, Tensor};
use rffi_kernels::{matmul_shape, Explanation, OpCall};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

struct BlasHandle(cb::cublasHandle_t);
// SAFETY: a cuBLAS handle may be used from any thread, one at a time (the mutex below).
unsafe impl Send for BlasHandle {}

fn handles() -> &'static Mutex<HashMap<i32, BlasHandle>> {
    static H: OnceLock<Mutex<HashMap<i32, BlasHandle>>> = OnceLock::new();
    H.get_or_init(Default::default)
}

fn check(what: &str, s: cb::cublasStatus_t) -> Result<()> {
    if s == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::runtime_error(format!(
            "kernels (cuda): {what} failed: {s:?}"
        )))
    }
}

/// One operand as cuBLAS sees it (column-major view of a row-major matrix).
#[derive(Debug)]
struct Operand {
    ptr: u64,
    ld: i64,
    /// The stored matrix is the transpose of the column-major view we need.
    trans: bool,
    batch_stride: i64,
}

/// `t` (`[..., rows, cols]`) without copying, if its layout allows.
fn view(t: &Tensor, rows: i64, cols: i64) -> Option<Operand> {
    let nd = t.ndim();
    let s = t.strides();
    let (sr, sc) = (s[nd - 2], s[nd - 1]);
    let (ld, trans) = if (cols == 1 || sc == 1) && (rows == 1 || sr >= cols.max(1)) {
        (if rows == 1 { cols.max(1) } else { sr }, false)
    } else if (rows == 1 || sr == 1) && (cols == 1 || sc >= rows.max(1)) {
        (if cols == 1 { rows.max(1) } else { sc }, true)
    } else {
        return None;
    };
    let batch_stride = if nd == 2 {
        0
    } else {
        // The batch dims must collapse to one stride.
        let dims: Vec<(i64, i64)> = t.shape()[..nd - 2]
            .iter()
            .zip(&s[..nd - 2])
            .filter(|(&d, _)| d != 1)
            .map(|(&d, &st)| (d, st))
            .collect();
        for w in dims.windows(2) {
            if w[0].1 != w[1].1 * w[1].0 {
                return None;
            }
        }
        dims.last().map_or(0, |d| d.1)
    };
    Some(Operand {
        ptr: ptr(t),
        ld,
        trans,
        batch_stride,
    })
}

fn types(d: DataType) -> (cb::cudaDataType, cb::cublasComputeType_t) {
    use cb::cublasComputeType_t::*;
    use cb::cudaDataType_t::*;
    if d == DataType::float(64) {
        (CUDA_R_64F, CUBLAS_COMPUTE_64F)
    } else if d == DataType::float(16) {
        (CUDA_R_16F, CUBLAS_COMPUTE_32F)
    } else if d == DataType::bfloat16() {
        (CUDA_R_16BF, CUBLAS_COMPUTE_32F)
    } else {
        // float32 in full precision (no TF32), as PyTorch's default.
        (CUDA_R_32F, CUBLAS_COMPUTE_32F)
    }
}

pub fn matmul(call: &OpCall<'_>) -> Result<()> {
    guarded("cuBLAS matmul", || matmul_inner(call))
}

/// Which operands cuBLAS reads in place and which are copied first.
pub fn explain(call: &OpCall<'_>) -> Result<Explanation> {
    let (a, b, o) = (&call.inputs[0], &call.inputs[1], call.out);
    let ms = matmul_shape(a, b)?;
    let how = |t: &Tensor, r, c| match view(t, r, c) {
        Some(v) if v.trans => "read in place (transposed)",
        Some(_) => "read in place",
        None => "copied to a compact buffer first",
    };
    let out = match view(o, ms.m, ms.n) {
        Some(v) if !v.trans => "written in place",
        _ => "written through a compact buffer",
    };
    Ok(Explanation {
        kernel: "cublasGemmStridedBatchedEx".into(),
        why: format!(
            "{} batch(es) of [{}x{}] @ [{}x{}]: a {}, b {}, out {out}",
            ms.batch.iter().product::<i64>(),
            ms.m,
            ms.k,
            ms.k,
            ms.n,
            how(a, ms.m, ms.k),
            how(b, ms.k, ms.n)
        ),
        params: Vec::new(),
        config: None,
    })
}

fn matmul_inner(call: &OpCall<'_>) -> Result<()> {
    let (a, b, o) = (&call.inputs[0], &call.inputs[1], call.out);
    let ms = matmul_shape(a, b)?;
    let (m, k, n) = (ms.m, ms.k, ms.n);
    let batch: i64 = ms.batch.iter().product();
    if o.numel() == 0 {
        return Ok(());
    }
    let esize = call.dtype.bytes_per_element();
    let stream: cudarc::driver::sys::CUstream = call.stream.cast();
    // Operands cuBLAS cannot read in place are copied into compact scratch buffers.
    let mut scratch: Vec<Scratch> = Vec::new();
    let mut operand = |t: &Tensor, rows: i64, cols: i64| -> Result<Operand> {
        if let Some(op) = view(t, rows, cols) {
            return Ok(op);
        }
        let s = Scratch::new(t.numel() as usize * esize, stream)?;
        copy_compact(call, t, s.ptr)?;
        let op = Operand {
            ptr: s.ptr,
            ld: cols.max(1),
            trans: false,
            batch_stride: if t.ndim() == 2 { 0 } else { rows * cols },
        };
        scratch.push(s);
        Ok(op)
    };
    let opa = operand(a, m, k)?;
    let opb = operand(b, k, n)?;
    // The output must be row-major with one batch stride, and written whole when K = 0.
    let direct = view(o, m, n).filter(|v| !v.trans && (k > 0 || o.is_contiguous()));
    let out_scratch;
    let opc = match direct {
        Some(v) => v,
        None => {
            out_scratch = Scratch::new(o.numel() as usize * esize, stream)?;
            Operand {
                ptr: out_scratch.ptr,
                ld: n.max(1),
                trans: false,
                batch_stride: m * n,
            }
        }
    };
    if k == 0 {
        // Nothing to sum: zeros (all-zero bits are 0 in every float type).
        let bytes = (o.numel() as usize) * esize;
        // SAFETY: the target is compact here (checked above) and `bytes` long.
        unsafe { driver::zero_async(opc.ptr, bytes, stream) }?;
    } else {
        gemm(call, &opa, &opb, &opc, m, n, k, batch)?;
    }
    if opc.ptr != ptr(o) {
        // Copy the compact result into the caller's layout.
        let compact = compact_strides(o.shape());
        let tmp = scratch_view(o, opc.ptr, &compact)?;
        copy_to(call, &tmp, ptr(o), o.strides())?;
    }
    drop(scratch);
    Ok(())
}

/// A borrowed tensor over the scratch result, for the copy kernel.
fn scratch_view(like: &Tensor, data: u64, strides: &[i64]) -> Result<Tensor> {
    let mut shape = like.shape().to_vec();
    let mut strides = strides.to_vec();
    let dl = rffi_core::abi::DLTensor {
        data: data as usize as *mut c_void,
        device: like.device().raw(),
        ndim: shape.len() as i32,
        dtype: like.dtype().raw(),
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: a valid DLTensor over the scratch buffer, which outlives the copy.
    unsafe { Tensor::from_dltensor_borrowed(std::ptr::NonNull::from(&dl)) }
}

#[allow(clippy::too_many_arguments)]
fn gemm(
    call: &OpCall<'_>,
    a: &Operand,
    b: &Operand,
    c: &Operand,
    m: i64,
    n: i64,
    k: i64,
    batch: i64,
) -> Result<()> {
    let big = |v: i64| i32::try_from(v).is_err();
    if [m, n, k, batch, a.ld, b.ld, c.ld].into_iter().any(big) {
        return Err(Error::value_error(format!(
            "kernels.matmul (cuda): dimensions (batch {batch}, M {m}, N {n}, K {k}) exceed cuBLAS's \
             32-bit limits"
        )));
    }
    let (dtype, compute) = types(call.dtype);
    let (one32, zero32, one64, zero64) = (1f32, 0f32, 1f64, 0f64);
    let (alpha, beta): (*const c_void, *const c_void) = if call.dtype == DataType::float(64) {
        (
            (&one64 as *const f64).cast(),
            (&zero64 as *const f64).cast(),
        )
    } else {
        (
            (&one32 as *const f32).cast(),
            (&zero32 as *const f32).cast(),
        )
    };
    let op = |t: bool| {
        if t {
            cb::cublasOperation_t::CUBLAS_OP_T
        } else {
            cb::cublasOperation_t::CUBLAS_OP_N
        }
    };
    let mut map = handles().lock().unwrap_or_else(|e| e.into_inner());
    let index = call.device.index();
    let h = match map.entry(index) {
        std::collections::hash_map::Entry::Occupied(e) => e.get().0,
        std::collections::hash_map::Entry::Vacant(v) => {
            let mut h: cb::cublasHandle_t = std::ptr::null_mut();
            // SAFETY: the device's context is current (the dispatcher's guard).
            check("cublasCreate", unsafe { cb::cublasCreate_v2(&mut h) })?;
            v.insert(BlasHandle(h)).0
        }
    };
    // SAFETY: a live handle, used under the lock; the stream is the caller's current stream.
    check("cublasSetStream", unsafe {
        cb::cublasSetStream_v2(h, call.stream.cast())
    })?;
    // Column-major C^T (N x M) = op(B)^T-view (N x K) * op(A)^T-view (K x M).
    // SAFETY: pointers, leading dims and batch strides describe the operands (see `view`);
    // the scalars live until the call returns (cuBLAS reads host scalars synchronously).
    check("cublasGemmStridedBatchedEx", unsafe {
        cb::cublasGemmStridedBatchedEx(
            h,
            op(b.trans),
            op(a.trans),
            n as i32,
            m as i32,
            k as i32,
            alpha,
            b.ptr as usize as *const c_void,
            dtype,
            b.ld as i32,
            b.batch_stride,
            a.ptr as usize as *const c_void,
            dtype,
            a.ld as i32,
            a.batch_stride,
            beta,
            c.ptr as usize as *mut c_void,
            dtype,
            c.ld as i32,
            c.batch_stride,
            batch as i32,
            compute,
            cb::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    })
}
