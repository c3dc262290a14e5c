//! add, sub, mul, div (tensor, broadcast tensor or number operand), relu, gelu (both forms),
//! exp, and the internal `copy`.
//!
//! Forms: `vec` (every operand contiguous and 16-byte aligned: packs, four in flight per thread),
//! `strided32` (any layout of fewer than 2^31 elements: 32-bit offsets, multiply-high division),
//! `strided` (64-bit offsets). Broadcast operands arrive as stride-0 views and are read in
//! place. The grid is the SM count times `blocks_per_sm` at most (the loops are grid-stride).

use super::{arg, dt, explanation, ptr, sms, stream, CeilDiv, Launch, Lay, Lay32, Tuned};
use crate::driver::{function, launch};
use crate::source::{Compute, Family};
use rffi_core::{Result, Tensor};
use rffi_kernels::{Explanation, Gelu, Op, OpCall, Scalar};
use std::ffi::c_void;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Form {
    Vec,
    /// Broadcasting over rows of whole packs (`Bc`).
    Bcast,
    Strided32,
    Strided,
}

/// The kernel of op `name` in `form` (static names: no string work per call).
fn kernel(name: &str, scalar: bool, form: Form) -> &'static str {
    macro_rules! table {
        ($($n:literal),*) => {
            match (name, scalar, form) {
                $(
                    ($n, false, Form::Vec) => concat!($n, "_vec"),
                    ($n, _, Form::Bcast) => concat!($n, "_bcast"),
                    ($n, false, Form::Strided32) => concat!($n, "_strided32"),
                    ($n, false, Form::Strided) => concat!($n, "_strided"),
                    ($n, true, Form::Vec) => concat!($n, "_scalar_vec"),
                    ($n, true, Form::Strided32) => concat!($n, "_scalar_strided32"),
                    ($n, true, Form::Strided) => concat!($n, "_scalar_strided"),
                )*
                _ => unreachable!("no elementwise kernel {name}"),
            }
        };
    }
    table!(
        "add",
        "sub",
        "mul",
        "div",
        "relu",
        "exp",
        "gelu",
        "gelu_tanh",
        "copy"
    )
}

fn op_name(call: &OpCall<'_>) -> &'static str {
    match call.op {
        Op::Add => "add",
        Op::Sub => "sub",
        Op::Mul => "mul",
        Op::Div => "div",
        Op::Relu => "relu",
        Op::Exp => "exp",
        Op::Gelu if call.gelu == Gelu::Tanh => "gelu_tanh",
        Op::Gelu => "gelu",
        op => unreachable!("{op} is not elementwise"),
    }
}

/// The launch of an elementwise kernel over `n` elements in `form` (`vec`: elements a pack).
pub fn plan(
    name: &str,
    scalar: bool,
    n: u64,
    form: Form,
    vec: u64,
    sms: i64,
    tuned: &Tuned<'_>,
) -> (Launch, String) {
    let threads = tuned.get("threads", 256).clamp(32, 1024) as u64;
    let cap = (sms * tuned.get("blocks_per_sm", 8).max(1)) as u64;
    let (work, why) = match form {
        Form::Vec => (
            n.cdiv(vec).cdiv(4),
            format!(
                "contiguous 16-byte aligned operands: {vec}-element packs, 4 a thread per step"
            ),
        ),
        Form::Bcast => (
            n.cdiv(vec).cdiv(4),
            format!(
                "a broadcast operand (a row, a column or one value) over rows of whole \
                 {vec}-element packs: 16-byte loads, the pack's row by multiply-high division"
            ),
        ),
        Form::Strided32 => (
            n,
            "strided, transposed or broadcast operands: 32-bit offsets".to_owned(),
        ),
        Form::Strided => (n, "strided operands with offsets beyond 32 bits".to_owned()),
    };
    let blocks = work.cdiv(threads).clamp(1, cap.max(1));
    let why = format!("{why}; grid at most {cap} blocks ({sms} SMs x blocks_per_sm)");
    (
        Launch::new(kernel(name, scalar, form), blocks, threads),
        why,
    )
}

/// `struct Bc` of the kernels: rows of `cv` packs, each operand's mode and stride.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Bc {
    rows: u64,
    cv: u64,
    mul: u32,
    shr: u32,
    fast: i32,
    ma: i32,
    mb: i32,
    sa: i64,
    sb: i64,
}

/// The broadcast form of a binary op, when it applies: the output compact and aligned, the
/// layout (in the output's order) at most two dims [R, C] with C a multiple of the pack, and
/// each input full (strides (C, 1)), a row ((0, 1)), a column ((s, 0)) or one value; full and
/// row operands aligned.
pub fn broadcast_form(shape: &[i64], strides: &[&[i64]], ptrs: &[u64], vec: i64) -> Option<Bc> {
    if strides.len() != 3 {
        return None;
    }
    let dims = super::collapse(shape, strides);
    let (rows, c, so, si) = match dims.as_slice() {
        [] => return None,
        [(c, s)] => (1, *c, [0, s[2]], [[0, s[0]], [0, s[1]]]),
        [(r, s0), (c, s1)] => (*r, *c, [s0[2], s1[2]], [[s0[0], s1[0]], [s0[1], s1[1]]]),
        _ => return None,
    };
    if c % vec != 0 || so[1] != 1 || (rows > 1 && so[0] != c) || ptrs[2] % 16 != 0 {
        return None;
    }
    let mut modes = [0i32; 2];
    let mut col = [0i64; 2];
    for j in 0..2 {
        let [sr, sc] = si[j];
        modes[j] = match (sr, sc) {
            (sr, 1) if (sr == c || rows == 1) && ptrs[j] % 16 == 0 => 0,
            (0, 1) if ptrs[j] % 16 == 0 => 1,
            (0, 0) => 3,
            (sr, 0) => {
                col[j] = sr;
                2
            }
            _ => return None,
        };
    }
    if modes == [0, 0] {
        return None; // plain vec handles it
    }
    let cv = (c / vec) as u64;
    let npk = rows as u64 * cv;
    let (mul, shr) = super::fast_div(cv.min(u32::MAX as u64) as u32);
    Some(Bc {
        rows: rows as u64,
        cv,
        mul,
        shr,
        fast: (npk < 1 << 31 && cv < 1 << 31) as i32,
        ma: modes[0],
        mb: modes[1],
        sa: col[0],
        sb: col[1],
    })
}

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
    form: Form,
    why: String,
    config: Option<String>,
    lay: Lay,
    lay32: Lay32,
    bc: Bc,
}

/// Operands of an elementwise kernel: pointers (inputs, then the output) and their strides over
/// one shape.
struct Operands<'a> {
    shape: &'a [i64],
    strides: Vec<&'a [i64]>,
    ptrs: Vec<u64>,
}

impl Operands<'_> {
    fn numel(&self) -> u64 {
        self.shape.iter().product::<i64>().max(0) as u64
    }

    /// Every operand compact (row-major) and 16-byte aligned.
    fn vectorizable(&self) -> bool {
        let compact = super::compact_strides(self.shape);
        let n = self.shape.len();
        self.ptrs.iter().all(|p| p % 16 == 0)
            && self
                .strides
                .iter()
                .all(|s| (0..n).all(|i| self.shape[i] == 1 || s[i] == compact[i]))
    }
}

/// The dims in the output's memory order (largest stride first): an elementwise op may visit
/// elements in any order, so operands that share a permutation (a transposed input written into
/// a transposed output) collapse to one contiguous run.
fn in_output_order(ops: &Operands<'_>) -> (Vec<i64>, Vec<Vec<i64>>) {
    let out = ops.strides[ops.strides.len() - 1];
    let mut order: Vec<usize> = (0..ops.shape.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(out[i].unsigned_abs()));
    let shape = order.iter().map(|&i| ops.shape[i]).collect();
    let strides = ops
        .strides
        .iter()
        .map(|s| order.iter().map(|&i| s[i]).collect())
        .collect();
    (shape, strides)
}

fn prepare(call: &OpCall<'_>, name: &str, ops: &Operands<'_>) -> Result<Prepared> {
    let dt = dt(call)?;
    let n = ops.numel();
    let vec = ops.vectorizable();
    let (shape, strides) = in_output_order(ops);
    let strides: Vec<&[i64]> = strides.iter().map(Vec::as_slice).collect();
    let scalar = call.scalar.is_some() && name != "copy";
    let bc = if vec || scalar {
        None
    } else {
        broadcast_form(&shape, &strides, &ops.ptrs, dt.vec as i64)
    };
    let lay32 = if vec || bc.is_some() {
        None
    } else {
        Lay32::new(n, &shape, &strides)
    };
    let form = if vec {
        Form::Vec
    } else if bc.is_some() {
        Form::Bcast
    } else if lay32.is_some() {
        Form::Strided32
    } else {
        Form::Strided
    };
    let lay = if form == Form::Strided {
        Lay::new(&shape, &strides)?
    } else {
        Lay::default()
    };
    let sms = sms(call)?;
    let vars = [("numel", n as i64), ("sms", sms)];
    let tuned = Tuned::select(&call.tune, "elementwise", &vars)?;
    let (launch, why) = plan(name, scalar, n, form, dt.vec as u64, sms, &tuned);
    Ok(Prepared {
        launch,
        form,
        why,
        config: tuned.origin(),
        lay,
        lay32: lay32.unwrap_or_default(),
        bc: bc.unwrap_or_default(),
    })
}

fn run(call: &OpCall<'_>, name: &str, ops: Operands<'_>) -> Result<()> {
    let n = ops.numel();
    if n == 0 {
        return Ok(());
    }
    let mut p = prepare(call, name, &ops)?;
    let f = function(
        call.device,
        call.dtype,
        Family::Elementwise,
        p.launch.kernel,
    )?;
    let mut ptrs = ops.ptrs;
    let mut scalar = match call.scalar {
        Some(s) if name != "copy" => Some(ScalarArg::new(s, dt(call)?.compute)),
        _ => None,
    };
    let mut n64 = n;
    let mut n32 = n as u32;
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
    match p.form {
        Form::Vec => args.push(arg(&mut n64)),
        Form::Bcast => args.push(arg(&mut p.bc)),
        Form::Strided32 => {
            args.push(arg(&mut n32));
            args.push(arg(&mut p.lay32));
        }
        Form::Strided => {
            args.push(arg(&mut n64));
            args.push(arg(&mut p.lay));
        }
    }
    // SAFETY: the arguments match the kernel's parameters (`cu/elementwise.cuh`); the pointers
    // are the tensors' elements, which the caller keeps alive for the call and which the stream
    // orders.
    unsafe { launch(f, p.launch.grid, p.launch.block, stream(call), &mut args) }
}

fn operands<'a>(call: &'a OpCall<'a>) -> Operands<'a> {
    let tensors: Vec<&Tensor> = call.inputs.iter().chain([call.out]).collect();
    Operands {
        shape: call.out.shape(),
        strides: tensors.iter().map(|t| t.strides()).collect(),
        ptrs: tensors.iter().map(|t| ptr(t)).collect(),
    }
}

/// add, sub, mul, div, relu, gelu, exp.
pub fn elementwise(call: &OpCall<'_>) -> Result<()> {
    run(call, op_name(call), operands(call))
}

pub fn explain(call: &OpCall<'_>) -> Result<Explanation> {
    let p = prepare(call, op_name(call), &operands(call))?;
    Ok(explanation(&[&p.launch], p.why, p.config))
}

/// Copies `src` (any strides) into the elements at `dst` laid out with `dst_strides` (same
/// shape), on the call's stream; `src` has the call's dtype.
pub fn copy(call: &OpCall<'_>, src: &Tensor, dst: u64, dst_strides: &[i64]) -> Result<()> {
    let ops = Operands {
        shape: src.shape(),
        strides: vec![src.strides(), dst_strides],
        ptrs: vec![ptr(src), dst],
    };
    run(call, "copy", ops)
}
