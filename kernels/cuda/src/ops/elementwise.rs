//! add, sub, mul, div (tensor, broadcast tensor or number operand), relu, gelu (both forms),
//! exp, and the internal `copy`.
//!
//! Forms: `vec` (every operand contiguous and 16-byte aligned: packs, four in flight per thread,
//! for a unary op the tuning's `unary_packs`, 1, 4 or 8, which may depend on the op's `arith`),
//! `strided32` (any layout of fewer than 2^31 elements: 32-bit offsets, multiply-high division;
//! `strided_rounds` 4: four elements a thread a round, all loaded before any is stored, a grid's
//! width apart or, with `strided_tile`, a block's width apart in a tile of consecutive elements),
//! `strided` (64-bit offsets); and the layouts of `layouts.rs`: `bcast`, `tiled` and, where the
//! tuning's `halves` is set, `halves` (rows read every element or every second one). Broadcast
//! operands arrive as stride-0 views and are read in place. The loops are grid-stride: the
//! packed forms (`vec`, `bcast`, `halves`) launch a block per tile
//! of work by default (`vec_blocks_per_sm`, `vec_waves`: 0, no cap), the strided forms at most
//! `blocks_per_sm` blocks an SM and one wave of the blocks the SMs hold at once (`waves`).

use super::{arg, dt, explanation, ptr, sms, stream, Launch, Lay, Lay32, Tuned};
use crate::driver::{self, launch};
use crate::source::{Compute, Family};
use cudarc::driver::sys;
use rffi_core::{Result, Tensor};
use rffi_kernels::{Explanation, Gelu, Op, OpCall, Scalar};
use std::ffi::c_void;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Form {
    #[default]
    Vec,
    /// Broadcasting over rows of whole packs (`Bc`).
    Bcast,
    Strided32,
    Strided,
    /// Two dims with a transposed operand: 32 x 32 tiles through shared memory (`Tl`).
    Tiled,
    /// Rows read every element or every second one, in halves of packs (`Hv`).
    Halves,
}

/// `kernel` and the ops it names, from one list.
macro_rules! kernel_table {
    (binary: $($b:literal),*; unary: $($u:literal),*; numbers: $($s:literal),*) => {
        /// The ops of two tensors (every form) and of one (no `bcast`).
        const BINARY_OPS: &[&str] = &[$($b),*];
        const UNARY_OPS: &[&str] = &[$($u),*];
        /// The ops with a number operand (`NAME_scalar_vec`, ...).
        const NUMBER_OPS: &[&str] = &[$($s),*];

        /// The kernel of op `name` in `form` (static names: no string work per call): the
        /// tensor forms of every op, the number forms of the binary ops (`rsub` and `rdiv`: a
        /// number before the tensor).
        pub(super) fn kernel(name: &str, scalar: bool, form: Form) -> &'static str {
            match (name, scalar, form) {
                $(
                    ($b, false, Form::Vec) => concat!($b, "_vec"),
                    ($b, false, Form::Bcast) => concat!($b, "_bcast"),
                    ($b, false, Form::Strided32) => concat!($b, "_strided32"),
                    ($b, false, Form::Strided) => concat!($b, "_strided"),
                    ($b, false, Form::Tiled) => concat!($b, "_tiled"),
                    ($b, false, Form::Halves) => concat!($b, "_halves"),
                )*
                $(
                    ($u, false, Form::Vec) => concat!($u, "_vec"),
                    ($u, false, Form::Strided32) => concat!($u, "_strided32"),
                    ($u, false, Form::Strided) => concat!($u, "_strided"),
                    ($u, false, Form::Tiled) => concat!($u, "_tiled"),
                    ($u, false, Form::Halves) => concat!($u, "_halves"),
                )*
                $(
                    ($s, true, Form::Vec) => concat!($s, "_scalar_vec"),
                    ($s, true, Form::Strided32) => concat!($s, "_scalar_strided32"),
                    ($s, true, Form::Strided) => concat!($s, "_scalar_strided"),
                    ($s, true, Form::Halves) => concat!($s, "_scalar_halves"),
                )*
                _ => unreachable!("no elementwise kernel {name} in {form:?} (number: {scalar})"),
            }
        }

        /// The tiles of op `name` with the next tile's loads issued before this tile's stores
        /// (`NAME_tiledp`, where a config sets `tiled_prefetch`).
        pub(super) fn kernel_tiled_prefetch(name: &str) -> &'static str {
            match name {
                $($b => concat!($b, "_tiledp"),)*
                $($u => concat!($u, "_tiledp"),)*
                _ => unreachable!("no elementwise kernel {name}"),
            }
        }
    };
}

kernel_table!(
    binary: "add", "sub", "mul", "div";
    unary: "relu", "exp", "gelu", "gelu_tanh", "softmax1", "copy";
    numbers: "add", "sub", "mul", "div", "rsub", "rdiv"
);

/// The ops an integer module has (`cu/elementwise.cuh` outside `IS_FLOAT`).
const INT_OPS: [&str; 5] = ["add", "sub", "mul", "copy", "rsub"];

/// Every kernel the planner can choose in a module of a float (or an integer) dtype, for the
/// offline check that each is in the compiled module (`kernels/cuda/check/cuda_check.sh`).
pub fn kernel_names(is_float: bool) -> Vec<&'static str> {
    use Form::{Bcast, Halves, Strided, Strided32, Tiled, Vec as Packed};
    let has = |n: &&&str| is_float || INT_OPS.contains(*n);
    let mut v = std::vec::Vec::new();
    for &n in BINARY_OPS.iter().filter(has) {
        v.extend([Packed, Bcast, Strided32, Strided, Tiled, Halves].map(|f| kernel(n, false, f)));
        v.push(kernel_tiled_prefetch(n));
    }
    for &n in UNARY_OPS.iter().filter(has) {
        v.extend([Packed, Strided32, Strided, Tiled, Halves].map(|f| kernel(n, false, f)));
        v.push(kernel_tiled_prefetch(n));
        v.extend([1, 8].into_iter().filter_map(|p| kernel_packs(n, p)));
    }
    for &n in NUMBER_OPS.iter().filter(has) {
        v.extend([Packed, Strided32, Strided, Halves].map(|f| kernel(n, true, f)));
    }
    v
}

/// The packed unary kernel of op `name` with 8 packs (`NAME_vec8`) or 1 pack (`NAME_vec1`) a
/// thread per step, if any.
pub(super) fn kernel_packs(name: &str, packs: u64) -> Option<&'static str> {
    macro_rules! table {
        ($($n:literal),*) => {
            match (name, packs) {
                $(($n, 8) => Some(concat!($n, "_vec8")), ($n, 1) => Some(concat!($n, "_vec1")),)*
                _ => None,
            }
        };
    }
    table!("relu", "exp", "gelu", "gelu_tanh", "softmax1", "copy")
}

fn op_name(call: &OpCall<'_>) -> &'static str {
    match call.op {
        Op::Add => "add",
        Op::Sub if call.scalar_first => "rsub",
        Op::Sub => "sub",
        Op::Mul => "mul",
        Op::Div if call.scalar_first => "rdiv",
        Op::Div => "div",
        Op::Relu => "relu",
        Op::Exp => "exp",
        Op::Gelu if call.gelu == Gelu::Tanh => "gelu_tanh",
        Op::Gelu => "gelu",
        op => unreachable!("{op} is not elementwise"),
    }
}

use super::grid::{launch_params, tune_vars};
pub use super::grid::{plan, Params, Why};
pub use super::layouts::{broadcast_form, halves_form, tiled_form, Bc, Hv, Layout, Tl};

/// A scalar operand as the kernel's compute type.
enum ScalarArg {
    F32(f32),
    F64(f64),
    I32(i32),
    I64(i64),
}

impl ScalarArg {
    fn new(s: Scalar, compute: Compute) -> ScalarArg {
        match (compute, s) {
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
            ScalarArg::F32(v) => arg(v),
            ScalarArg::F64(v) => arg(v),
            ScalarArg::I32(v) => arg(v),
            ScalarArg::I64(v) => arg(v),
        }
    }
}

/// The launch of `call` and what the kernel needs besides the pointers.
struct Prepared {
    launch: Launch,
    params: Params,
    why: Why,
    layout: Layout,
}

/// Operands of an elementwise kernel: pointers (inputs, then the output) and their strides over
/// one shape; at most three, kept inline (a call allocates nothing).
struct Operands<'a> {
    shape: &'a [i64],
    count: usize,
    strides: [&'a [i64]; 3],
    ptrs: [u64; 3],
}

impl<'a> Operands<'a> {
    fn new(shape: &'a [i64], tensors: &[(&'a [i64], u64)]) -> Operands<'a> {
        let mut o = Operands {
            shape,
            count: tensors.len(),
            strides: [&[]; 3],
            ptrs: [0; 3],
        };
        for (i, &(s, p)) in tensors.iter().enumerate() {
            o.strides[i] = s;
            o.ptrs[i] = p;
        }
        o
    }

    fn numel(&self) -> u64 {
        self.shape.iter().product::<i64>().max(0) as u64
    }

    fn strides(&self) -> &[&'a [i64]] {
        &self.strides[..self.count]
    }

    fn ptrs(&self) -> &[u64] {
        &self.ptrs[..self.count]
    }

    /// Every operand compact (row-major) and 16-byte aligned.
    fn vectorizable(&self) -> bool {
        if self.ptrs().iter().any(|p| p % 16 != 0) {
            return false;
        }
        let mut compact = 1i64;
        for i in (0..self.shape.len()).rev() {
            let d = self.shape[i];
            if d != 1 && self.strides().iter().any(|s| s[i] != compact) {
                return false;
            }
            compact *= d.max(1);
        }
        true
    }
}

/// The dims in the output's memory order (largest stride first): an elementwise op may visit
/// elements in any order, so operands that share a permutation (a transposed input written into
/// a transposed output) collapse to one contiguous run.
fn in_output_order(ops: &Operands<'_>) -> (Vec<i64>, Vec<Vec<i64>>) {
    let out = ops.strides()[ops.count - 1];
    let mut order: Vec<usize> = (0..ops.shape.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(out[i].unsigned_abs()));
    let shape = order.iter().map(|&i| ops.shape[i]).collect();
    let strides = ops
        .strides()
        .iter()
        .map(|s| order.iter().map(|&i| s[i]).collect())
        .collect();
    (shape, strides)
}

/// The form and layout of a call whose operands are not all contiguous and aligned.
fn layout(call: &OpCall<'_>, name: &str, ops: &Operands<'_>, params: Params) -> Result<Layout> {
    let dt = dt(call)?;
    let (shape, strides) = in_output_order(ops);
    let strides: Vec<&[i64]> = strides.iter().map(Vec::as_slice).collect();
    let scalar = call.scalar.is_some() && name != "copy";
    let vec = dt.vec as i64;
    if !scalar {
        if let Some(bc) = broadcast_form(&shape, &strides, ops.ptrs(), vec) {
            return Ok(Layout {
                form: Form::Bcast,
                bc,
                ..Layout::default()
            });
        }
        if let Some(tl) = tiled_form(&shape, &strides) {
            return Ok(Layout {
                form: Form::Tiled,
                tl,
                ..Layout::default()
            });
        }
    }
    if params.halves != 0 {
        if let Some(hv) = halves_form(&shape, &strides, ops.ptrs(), vec) {
            return Ok(Layout {
                form: Form::Halves,
                hv,
                ..Layout::default()
            });
        }
    }
    if let Some(l) = Lay32::new(ops.numel(), &shape, &strides) {
        let lay32 = Lay32 {
            rounds: params.strided_rounds as i32,
            tiled: params.strided_tile as i32,
            ..l
        };
        return Ok(Layout {
            form: Form::Strided32,
            lay32,
            ..Layout::default()
        });
    }
    let lay = Lay::new(&shape, &strides)?;
    Ok(Layout {
        form: Form::Strided,
        lay,
        ..Layout::default()
    })
}

fn prepare(call: &OpCall<'_>, name: &str, ops: &Operands<'_>) -> Result<Prepared> {
    let n = ops.numel();
    let sms = sms(call)?;
    let params = launch_params(call, name, n, sms)?;
    let layout = if ops.vectorizable() {
        Layout::default()
    } else {
        layout(call, name, ops, params)?
    };
    let scalar = call.scalar.is_some() && name != "copy";
    let (launch, why) = plan(
        name,
        scalar,
        n,
        layout.form,
        dt(call)?.vec as u64,
        sms,
        params,
    );
    Ok(Prepared {
        launch,
        params,
        why,
        layout,
    })
}

/// The kernel's handle, its grid capped to `waves` times the blocks the SMs hold at once (one
/// wave: a grid-stride kernel has no second, partly idle wave of the same work per block; 0: no
/// cap).
fn resident_launch(call: &OpCall<'_>, l: &mut Launch, waves: u64) -> Result<sys::CUfunction> {
    let block = if waves == 0 { 0 } else { l.block };
    let (f, resident) = driver::kernel(
        call.device,
        call.dtype,
        Family::Elementwise,
        l.kernel,
        block,
    )?;
    if waves == 0 {
        return Ok(f);
    }
    let most = (sms(call)? as u64 * resident as u64)
        .saturating_mul(waves)
        .clamp(1, u32::MAX as u64) as u32;
    l.grid.0 = l.grid.0.min(most);
    Ok(f)
}

fn run(call: &OpCall<'_>, name: &str, ops: Operands<'_>) -> Result<()> {
    let n = ops.numel();
    if n == 0 {
        return Ok(());
    }
    let mut p = prepare(call, name, &ops)?;
    let f = resident_launch(call, &mut p.launch, p.params.caps(p.layout.form).1)?;
    let mut ptrs = ops.ptrs;
    let count = ops.count;
    let mut scalar = match call.scalar {
        Some(s) if name != "copy" => Some(ScalarArg::new(s, dt(call)?.compute)),
        _ => None,
    };
    let mut n64 = n;
    let mut n32 = n as u32;
    let mut args: [*mut c_void; 6] = [std::ptr::null_mut(); 6];
    let mut used = 0;
    let mut push = |a: *mut c_void| {
        args[used] = a;
        used += 1;
    };
    // Parameter order: inputs (a number in place of b), out, n, then the layout if strided.
    let (first, rest) = ptrs[..count].split_at_mut(1);
    push(arg(&mut first[0]));
    if let Some(s) = scalar.as_mut() {
        push(s.as_arg());
    }
    for p in rest.iter_mut() {
        push(arg(p));
    }
    let l = &mut p.layout;
    match l.form {
        Form::Vec => push(arg(&mut n64)),
        Form::Bcast => push(arg(&mut l.bc)),
        Form::Strided32 => {
            push(arg(&mut n32));
            push(arg(&mut l.lay32));
        }
        Form::Strided => {
            push(arg(&mut n64));
            push(arg(&mut l.lay));
        }
        Form::Tiled => push(arg(&mut l.tl)),
        Form::Halves => push(arg(&mut l.hv)),
    }
    // SAFETY: the arguments match the kernel's parameters (`cu/elementwise.cuh`); the pointers
    // are the tensors' elements, which the caller keeps alive for the call and which the stream
    // orders.
    unsafe {
        launch(
            f,
            p.launch.grid,
            p.launch.block,
            stream(call),
            &mut args[..used],
        )
    }
}

fn operands<'a>(call: &'a OpCall<'a>) -> Operands<'a> {
    let mut t: [(&[i64], u64); 3] = [(&[], 0); 3];
    let mut k = 0;
    for x in call.inputs.iter().chain([call.out]) {
        t[k] = (x.strides(), ptr(x));
        k += 1;
    }
    Operands::new(call.out.shape(), &t[..k])
}

/// add, sub, mul, div, relu, gelu, exp.
pub fn elementwise(call: &OpCall<'_>) -> Result<()> {
    run(call, op_name(call), operands(call))
}

pub fn explain(call: &OpCall<'_>) -> Result<Explanation> {
    let name = op_name(call);
    let mut p = prepare(call, name, &operands(call))?;
    resident_launch(call, &mut p.launch, p.params.caps(p.layout.form).1)?;
    let vars = tune_vars(name, operands(call).numel(), sms(call)?);
    let config = Tuned::select(&call.tune, "elementwise", &vars)?.origin();
    Ok(explanation(&[&p.launch], p.why.text(), config))
}

/// softmax along an axis of length 1, elementwise over x (any layout): 1 where x is finite,
/// NaN where it is not (exp(x - x) / exp(x - x), as PyTorch computes it).
pub fn softmax_of_one(call: &OpCall<'_>) -> Result<()> {
    run(call, "softmax1", operands(call))
}

pub fn explain_softmax_of_one(call: &OpCall<'_>) -> Result<Explanation> {
    let p = prepare(call, "softmax1", &operands(call))?;
    Ok(explanation(
        &[&p.launch],
        format!(
            "rows of 1 element: elementwise (1 or NaN); {}",
            p.why.text()
        ),
        None,
    ))
}

/// Copies `src` (any strides) into the elements at `dst` laid out with `dst_strides` (same
/// shape), on the call's stream; `src` has the call's dtype.
pub fn copy(call: &OpCall<'_>, src: &Tensor, dst: u64, dst_strides: &[i64]) -> Result<()> {
    let ops = Operands::new(
        src.shape(),
        &[(src.strides(), ptr(src)), (dst_strides, dst)],
    );
    run(call, "copy", ops)
}
