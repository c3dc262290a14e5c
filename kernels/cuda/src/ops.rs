//! Launching the NVRTC kernels: elementwise ops (16-byte vector loads for contiguous aligned
//! operands, a strided kernel otherwise), row reductions, softmax.

use crate::driver::{self, function, launch, Scratch};
use crate::source::{dt_of, Compute, Dt, MAX_DIMS, SOFTMAX_PACKS};
use cudarc::driver::{result, sys};
use rffi_core::error::kind;
use rffi_core::{Error, Result, Tensor};
use rffi_kernels::{Axis, OpCall, Scalar};
use std::ffi::c_void;

/// `struct Lay` of the kernels: a collapsed shape and up to three operands' element strides.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct Lay {
    nd: i32,
    pad: i32,
    shape: [i64; MAX_DIMS],
    s: [[i64; MAX_DIMS]; 3],
}

impl Lay {
    /// Collapses `shape` over the operands' strides (dims of size 1 dropped, dims merged where
    /// every operand is contiguous across them), as the CPU backend does.
    pub fn new(shape: &[i64], strides: &[&[i64]]) -> Result<Lay> {
        let k = strides.len();
        let mut dims: Vec<(i64, [i64; 3])> = Vec::new();
        for (i, &d) in shape.iter().enumerate() {
            if d == 1 {
                continue;
            }
            let mut s = [0i64; 3];
            for (j, st) in strides.iter().enumerate() {
                s[j] = st[i];
            }
            if let Some(last) = dims.last_mut() {
                if (0..k).all(|j| last.1[j] == s[j] * d) {
                    *last = (last.0 * d, s);
                    continue;
                }
            }
            dims.push((d, s));
        }
        if dims.len() > MAX_DIMS {
            return Err(Error::new(
                kind::NOT_IMPLEMENTED_ERROR,
                format!(
                    "kernels (cuda): this layout needs {} dimensions after merging contiguous \
                     ones; the strided kernels take at most {MAX_DIMS} (shape {shape:?})",
                    dims.len()
                ),
            ));
        }
        let mut l = Lay {
            nd: dims.len() as i32,
            ..Lay::default()
        };
        for (i, (d, s)) in dims.iter().enumerate() {
            l.shape[i] = *d;
            for (lane, v) in l.s.iter_mut().zip(s) {
                lane[i] = *v;
            }
        }
        Ok(l)
    }
}

pub fn ptr(t: &Tensor) -> u64 {
    t.element_ptr() as usize as u64
}

fn stream(call: &OpCall<'_>) -> sys::CUstream {
    call.stream.cast()
}

fn dt(call: &OpCall<'_>) -> Result<Dt> {
    dt_of(call.dtype)
        .ok_or_else(|| Error::type_error(format!("kernels (cuda): no kernels for {}", call.dtype)))
}

/// Threads per block and a cap on blocks, from the tuning files (`key`), with defaults.
fn launch_shape(
    call: &OpCall<'_>,
    key: &str,
    vars: &[(&str, i64)],
    work: u64,
) -> Result<(u32, u32)> {
    let sms = driver::sm_count(call.device.index())? as i64;
    let mut v: Vec<(&str, i64)> = vars.to_vec();
    v.push(("sms", sms));
    let c = call.tune.select(key, &v)?;
    let threads = c
        .and_then(|c| c.get("threads"))
        .unwrap_or(256)
        .clamp(32, 1024) as u64;
    let waves = c.and_then(|c| c.get("blocks_per_sm")).unwrap_or(32).max(1) as u64;
    let blocks = work
        .div_ceil(threads)
        .clamp(1, (sms as u64 * waves).min(i32::MAX as u64));
    Ok((threads as u32, blocks as u32))
}

fn aligned16(t: &Tensor) -> bool {
    ptr(t) % 16 == 0
}

/// A scalar operand as the kernel's compute type, and a pointer to it for the launch.
enum ScalarArg {
    F32(f32),
    F64(f64),
    I32(i32),
    I64(i64),
}

impl ScalarArg {
    fn new(s: Scalar, dt: &Dt) -> ScalarArg {
        match (dt.compute, s) {
            (Compute::F32, s) => ScalarArg::F32(s.as_f64() as f32),
            (Compute::F64, s) => ScalarArg::F64(s.as_f64()),
            (Compute::I32, Scalar::Int(i)) => ScalarArg::I32(i as i32),
            (Compute::I64, Scalar::Int(i)) => ScalarArg::I64(i),
            (Compute::I32, Scalar::Float(f)) => ScalarArg::I32(f as i32),
            (Compute::I64, Scalar::Float(f)) => ScalarArg::I64(f as i64),
        }
    }

    fn as_arg(&mut self) -> *mut c_void {
        match self {
            ScalarArg::F32(v) => (v as *mut f32).cast(),
            ScalarArg::F64(v) => (v as *mut f64).cast(),
            ScalarArg::I32(v) => (v as *mut i32).cast(),
            ScalarArg::I64(v) => (v as *mut i64).cast(),
        }
    }
}

fn arg<T>(v: &mut T) -> *mut c_void {
    (v as *mut T).cast()
}

/// add, sub, mul, div (tensor or number operand), relu, gelu, exp, and `copy`.
pub fn elementwise(call: &OpCall<'_>, name: &'static str) -> Result<()> {
    let o = call.out;
    let n = o.numel() as u64;
    if n == 0 {
        return Ok(());
    }
    let dt = dt(call)?;
    let mut operands: Vec<&Tensor> = call.inputs.iter().collect();
    operands.push(o);
    let vec = operands.iter().all(|t| t.is_contiguous() && aligned16(t));
    let scalar = call.scalar.map(|s| ScalarArg::new(s, &dt));
    let suffix = match (scalar.is_some(), vec) {
        (false, true) => "_vec",
        (false, false) => "_strided",
        (true, true) => "_scalar_vec",
        (true, false) => "_scalar_strided",
    };
    let f = function(call.device, call.dtype, name, suffix)?;
    let work = if vec { n.div_ceil(dt.vec as u64) } else { n };
    let (threads, blocks) = launch_shape(call, "elementwise", &[("numel", n as i64)], work)?;
    let mut ptrs: Vec<u64> = operands.iter().map(|t| ptr(t)).collect();
    let mut lay = if vec {
        Lay::default()
    } else {
        let strides: Vec<&[i64]> = operands.iter().map(|t| t.strides()).collect();
        Lay::new(o.shape(), &strides)?
    };
    let mut n_arg = n;
    let mut scalar = scalar;
    let mut args: Vec<*mut c_void> = Vec::with_capacity(6);
    // Parameter order: inputs (a number in place of b), out, n, then the layout if strided.
    let (first, rest) = ptrs.split_at_mut(1);
    args.push(arg(&mut first[0]));
    if let Some(s) = scalar.as_mut() {
        args.push(s.as_arg());
    }
    for p in rest.iter_mut() {
        args.push(arg(p));
    }
    args.push(arg(&mut n_arg));
    if !vec {
        args.push(arg(&mut lay));
    }
    // SAFETY: the arguments match the kernel's parameters (see `source.rs`); the pointers are the
    // tensors' elements, which the caller keeps alive for the call and which the stream orders.
    unsafe { launch(f, blocks, threads, stream(call), &mut args) }
}

/// Leading-dims layout of a row op: x's strides in s0, out's in s1.
fn rows_layout(x: &Tensor, out_lead_strides: &[i64]) -> Result<(Lay, i64, i64, i64)> {
    let nd = x.ndim();
    if nd == 0 {
        return Ok((Lay::new(&[], &[&[], &[]])?, 1, 1, 1));
    }
    let lead = &x.shape()[..nd - 1];
    let lay = Lay::new(lead, &[&x.strides()[..nd - 1], out_lead_strides])?;
    let rows = lead.iter().product::<i64>();
    Ok((lay, rows, x.shape()[nd - 1], x.strides()[nd - 1]))
}

pub fn softmax(call: &OpCall<'_>) -> Result<()> {
    let (x, o) = (&call.inputs[0], call.out);
    if x.numel() == 0 {
        return Ok(());
    }
    let dt = dt(call)?;
    let nd = x.ndim();
    let lead_o = if nd == 0 {
        &[][..]
    } else {
        &o.strides()[..nd - 1]
    };
    let (mut lay, mut rows, mut len, mut sx) = rows_layout(x, lead_o)?;
    let mut so: i64 = if nd == 0 { 1 } else { o.strides()[nd - 1] };
    let v = dt.vec as i64;
    let lead_ok = |t: &Tensor| nd == 0 || t.strides()[..nd - 1].iter().all(|s| s % v == 0);
    let mut vec: i32 =
        (sx == 1 && so == 1 && aligned16(x) && aligned16(o) && lead_ok(x) && lead_ok(o)) as i32;
    let blocks = rows.clamp(1, i32::MAX as i64) as u32;
    let vars = [("cols", len), ("rows", rows), ("itemsize", dt.size as i64)];
    // Rows of whole packs that fit in registers: the one-read kernel, with the tuned number of
    // 16-byte packs per thread (`packs`, default 4), or the fewest that fit in 1024 threads.
    let nv = (len / v) as u64;
    let most = SOFTMAX_PACKS[SOFTMAX_PACKS.len() - 1].0 as u64;
    if vec != 0 && len % v == 0 && nv <= most * 1024 {
        let wanted = call.tune.param("softmax", "packs", &vars, 4)?.max(1) as u64;
        let &(packs, suffix) = SOFTMAX_PACKS
            .iter()
            .find(|&&(p, _)| p as u64 >= wanted.min(most) && nv.div_ceil(p as u64) <= 1024)
            .expect("the largest variant fits: checked above");
        let threads = (nv.div_ceil(packs as u64).div_ceil(32) * 32).clamp(32, 1024) as u32;
        let f = function(call.device, call.dtype, "softmax_rows_reg", suffix)?;
        let (mut px, mut po) = (ptr(x), ptr(o));
        let mut args = [
            arg(&mut px),
            arg(&mut po),
            arg(&mut rows),
            arg(&mut len),
            arg(&mut lay),
        ];
        // SAFETY: as in `elementwise`; every row is `nv` whole, aligned packs (checked above),
        // and `threads * packs >= nv`.
        return unsafe { launch(f, blocks, threads, stream(call), &mut args) };
    }
    let f = function(call.device, call.dtype, "softmax_rows", "")?;
    let (threads, _) = launch_shape(call, "softmax", &vars, len as u64)?;
    let (mut px, mut po) = (ptr(x), ptr(o));
    let mut args = [
        arg(&mut px),
        arg(&mut po),
        arg(&mut rows),
        arg(&mut len),
        arg(&mut sx),
        arg(&mut so),
        arg(&mut lay),
        arg(&mut vec),
    ];
    // SAFETY: as in `elementwise`.
    unsafe { launch(f, blocks, threads, stream(call), &mut args) }
}

pub fn sum(call: &OpCall<'_>) -> Result<()> {
    let (x, o) = (&call.inputs[0], call.out);
    let st = stream(call);
    match call.axis {
        Axis::Last => {
            let (mut lay, mut rows, mut len, mut sx) = rows_layout(x, o.strides())?;
            if rows == 0 {
                return Ok(());
            }
            let f = function(call.device, call.dtype, "sum_rows", "")?;
            let (threads, _) =
                launch_shape(call, "reduce", &[("cols", len), ("rows", rows)], len as u64)?;
            let blocks = rows.clamp(1, i32::MAX as i64) as u32;
            let (mut px, mut po) = (ptr(x), ptr(o));
            let mut args = [
                arg(&mut px),
                arg(&mut po),
                arg(&mut rows),
                arg(&mut len),
                arg(&mut sx),
                arg(&mut lay),
            ];
            // SAFETY: as in `elementwise`.
            unsafe { launch(f, blocks, threads, st, &mut args) }
        }
        Axis::All => {
            let acc = Scratch::new(8, st)?;
            // SAFETY: an 8-byte scratch buffer on this stream.
            unsafe { result::memset_d8_async(acc.ptr, 0, 8, st) }
                .map_err(|e| driver::err("cuMemsetD8Async", e))?;
            let mut n = x.numel() as u64;
            let mut pacc = acc.ptr;
            if n > 0 {
                let mut lay = Lay::new(x.shape(), &[x.strides()])?;
                let mut contiguous = x.is_contiguous() as i32;
                let f = function(call.device, call.dtype, "sum_all", "")?;
                let (threads, blocks) =
                    launch_shape(call, "reduce", &[("cols", n as i64), ("rows", 1)], n)?;
                let mut px = ptr(x);
                let mut args = [
                    arg(&mut px),
                    arg(&mut n),
                    arg(&mut lay),
                    arg(&mut contiguous),
                    arg(&mut pacc),
                ];
                // SAFETY: as in `elementwise`.
                unsafe { launch(f, blocks, threads, st, &mut args) }?;
            }
            let f = function(call.device, call.dtype, "store_acc", "")?;
            let mut po = ptr(o);
            let mut args = [arg(&mut pacc), arg(&mut po)];
            // SAFETY: as in `elementwise`; `acc` is freed after this launch in stream order.
            unsafe { launch(f, 1, 1, st, &mut args) }
        }
    }
}

/// Copies `src` (any strides) into the compact buffer at `dst` on the call's stream.
pub fn copy_compact(call: &OpCall<'_>, src: &Tensor, dst: u64) -> Result<()> {
    copy_to(call, src, dst, &compact_strides(src.shape()))
}

/// Copies `src` into the elements at `dst` laid out with `dst_strides` (same shape).
pub fn copy_to(call: &OpCall<'_>, src: &Tensor, dst: u64, dst_strides: &[i64]) -> Result<()> {
    let mut n = src.numel() as u64;
    if n == 0 {
        return Ok(());
    }
    let f = function(call.device, src.dtype(), "copy", "_strided")?;
    let mut lay = Lay::new(src.shape(), &[src.strides(), dst_strides])?;
    let (threads, blocks) = launch_shape(call, "elementwise", &[("numel", n as i64)], n)?;
    let (mut ps, mut pd) = (ptr(src), dst);
    let mut args = [arg(&mut ps), arg(&mut pd), arg(&mut n), arg(&mut lay)];
    // SAFETY: as in `elementwise`; `dst` holds the compact elements.
    unsafe { launch(f, blocks, threads, stream(call), &mut args) }
}

pub fn compact_strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![0; shape.len()];
    let mut acc = 1i64;
    for i in (0..shape.len()).rev() {
        s[i] = acc;
        acc *= shape[i].max(1);
    }
    s
}
