//! The allocation-free path of a small op: `add(a, b, out)`, `relu(x, out)` on operands of one
//! shape, dtype and device, compact, written into a given output (the form a tiny op from a
//! framework takes). Checked and dispatched with no argument lists, no output shape, no error text
//! and the remembered resolution; anything else goes the general way (`Registry::call`), which
//! also words every error.

use crate::args;
use crate::backend::OpCall;
use crate::op::{Op, OpKind};
use crate::registry::{Entry, Registry};
use crate::settings;
use crate::tune::TuneView;
use rffi_core::{Any, AnyView, DataType, Device, Result, Tensor};

impl Registry {
    /// The common form of a small op, `add(a, b, out)` / `relu(x, out)`: tensors of one shape,
    /// dtype and device, compact, written into a given output. Checked and dispatched without
    /// allocating (no parse into lists, no output shape, the remembered resolution). `None`:
    /// anything else, for the general path (which also words every error).
    pub(crate) fn call_same_shape(&self, op: Op, args: &[AnyView<'_>]) -> Option<Result<Any>> {
        let inputs = match op.kind() {
            OpKind::Binary => 2,
            OpKind::Unary if op != Op::Gelu => 1,
            _ => return None,
        };
        if args.len() != inputs + 1 || settings::in_scope() {
            return None;
        }
        let out: Tensor = args[inputs].try_as().ok()?;
        let x: Tensor = args[0].try_as().ok()?;
        let (second, scalar) = if inputs == 1 {
            (None, None)
        } else if args::is_number(&args[1]) {
            let s = args::scalar_arg(&args[1]).ok()?;
            args::check_scalar(op, s, x.dtype(), 1).ok()?;
            (None, Some(s))
        } else {
            (Some(args[1].try_as::<Tensor>().ok()?), None)
        };
        let same = |t: &Tensor| {
            t.shape() == out.shape()
                && t.dtype() == out.dtype()
                && t.device() == out.device()
                && t.is_contiguous()
        };
        if !same(&x) || !second.as_ref().is_none_or(same) || !same(&out) || out.read_only() {
            return None;
        }
        let overlapping = [Some(&x), second.as_ref()]
            .into_iter()
            .flatten()
            .any(|t| args::overlaps_unsafely(t, &out, op.in_place_ok()));
        if overlapping {
            return None;
        }
        let (entry, imp) = match self.resolve_cached(op, out.device(), out.dtype()) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let ins = [x, second.unwrap_or_else(|| out.clone())];
        let r = self.with_call(
            &entry,
            CallParts {
                op,
                device: out.device(),
                dtype: out.dtype(),
                inputs: &ins[..inputs],
                scalar,
                scalar_first: false,
                axes: &[],
                keepdims: false,
                eps: 0.0,
                weight: None,
                bias: None,
                gelu: crate::op::Gelu::Erf,
            },
            &out,
            |call| (imp.kernel)(call),
        );
        Some(r.map(|()| Any::none()))
    }

    /// Runs `f` on the call a kernel sees, built from `parts` and the output `out`, under the
    /// backend's device guard.
    fn with_call<T>(
        &self,
        entry: &Entry,
        parts: CallParts<'_>,
        out: &Tensor,
        f: impl FnOnce(&OpCall<'_>) -> Result<T>,
    ) -> Result<T> {
        let device = parts.device;
        let stream = rffi_core::stream::current_stream(device);
        let _guard = entry.enter(device)?;
        let tune = entry.tune(self.env())?;
        let arch = entry.arch_of(device);
        f(&parts.into_call(arch, out, stream, TuneView::new(tune, arch)))
    }
}

/// What a call is made of before the backend's part (arch, stream, tuning) is added.
pub(crate) struct CallParts<'a> {
    pub op: Op,
    pub device: Device,
    pub dtype: DataType,
    pub inputs: &'a [Tensor],
    pub scalar: Option<crate::op::Scalar>,
    pub scalar_first: bool,
    pub axes: &'a [usize],
    pub keepdims: bool,
    pub eps: f64,
    pub weight: Option<&'a Tensor>,
    pub bias: Option<&'a Tensor>,
    pub gelu: crate::op::Gelu,
}

impl<'a> CallParts<'a> {
    pub(crate) fn into_call(
        self,
        arch: Option<&'a str>,
        out: &'a Tensor,
        stream: rffi_core::stream::StreamHandle,
        tune: TuneView<'a>,
    ) -> OpCall<'a> {
        OpCall {
            op: self.op,
            device: self.device,
            dtype: self.dtype,
            arch,
            inputs: self.inputs,
            scalar: self.scalar,
            scalar_first: self.scalar_first,
            axes: self.axes,
            keepdims: self.keepdims,
            eps: self.eps,
            weight: self.weight,
            bias: self.bias,
            gelu: self.gelu,
            out,
            stream,
            tune,
        }
    }
}
