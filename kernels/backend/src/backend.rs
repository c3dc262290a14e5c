//! What a backend is: a name, the DLPack device types it serves, a priority, a probe, the ops it
//! declares unsupported, and the implementations it installs once its probe succeeds.

use crate::op::{Gelu, Op, Scalar};
use crate::tune::TuneView;
use rffi_core::stream::StreamHandle;
use rffi_core::{DataType, Device, Result, Tensor};
use std::sync::Arc;

/// One device a backend found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The DLPack device type (`kDLCUDA`, ...).
    pub device_type: i32,
    /// The device index.
    pub index: i32,
    /// The architecture (`"sm_90"`), if the backend distinguishes them.
    pub arch: Option<String>,
    /// A human-readable name (`"NVIDIA H200"`).
    pub name: String,
}

/// What a successful probe found.
#[derive(Clone, Debug, Default)]
pub struct Availability {
    /// The devices found; empty for backends that do not enumerate (the CPU).
    pub devices: Vec<DeviceInfo>,
    /// What was found, for `describe()` (library versions, device count).
    pub detail: String,
    /// Ops this backend cannot run on what it found, with the reason; enforced by the dispatcher
    /// like the static declarations of [`Backend::unsupported`].
    pub unsupported: Vec<(Op, String)>,
}

/// Everything a kernel receives: validated, on one device, with one dtype.
pub struct OpCall<'a> {
    /// The op called.
    pub op: Op,
    /// The device every tensor of the call is on.
    pub device: Device,
    /// The dtype of the inputs.
    pub dtype: DataType,
    /// The arch of `device`, from the backend's probe.
    pub arch: Option<&'a str>,
    /// The input tensors in argument order: `x`, or `a` and `b` (of the output's shape: an
    /// operand that broadcasts is a view with stride 0 along the broadcast axes).
    pub inputs: &'a [Tensor],
    /// The number operand of binary ops (`kernels.add(x, 2)`), instead of a second tensor.
    pub scalar: Option<Scalar>,
    /// The number is the first operand: `out = scalar - x` (`kernels.sub(1, x)`), `scalar / x`.
    /// Only for sub and div (a number before a tensor in add or mul is passed as `scalar` after
    /// it), so a kernel for add and mul need not look.
    pub scalar_first: bool,
    /// The reduced axes of a reduction (sorted, distinct; every axis for `axis=None`), or the
    /// axis of softmax (empty for a 0-d tensor).
    pub axes: &'a [usize],
    /// Reductions: whether `out` keeps the reduced axes (as size 1).
    pub keepdims: bool,
    /// Normalizations: the epsilon added to the variance / mean square.
    pub eps: f64,
    /// Normalizations: `weight` and `bias` (shape `[x.shape[-1]]`), when given.
    pub weight: Option<&'a Tensor>,
    /// Normalizations: the bias added after scaling (layer_norm), when given.
    pub bias: Option<&'a Tensor>,
    /// The form of `gelu`.
    pub gelu: Gelu,
    /// The destination: writable, of the result's shape, not unsafely aliased with an input.
    pub out: &'a Tensor,
    /// rffi's current stream for `device` (NULL: the default stream).
    pub stream: StreamHandle,
    /// This backend's tuning configs for `arch`.
    pub tune: TuneView<'a>,
}

impl OpCall<'_> {
    /// The axes of `x` that are not reduced (reductions), in order.
    pub fn kept_axes(&self) -> Vec<usize> {
        (0..self.inputs[0].ndim())
            .filter(|i| !self.axes.contains(i))
            .collect()
    }

    /// `out`'s stride along each kept axis of `x` (reductions: `out` drops the reduced axes, or
    /// keeps them as size 1 with `keepdims`).
    pub fn out_strides_of_kept(&self) -> Vec<i64> {
        let kept = self.kept_axes();
        if self.keepdims {
            kept.iter().map(|&i| self.out.strides()[i]).collect()
        } else {
            self.out.strides().to_vec()
        }
    }
}

/// What a backend says about how it would run a call (`kernels.explain`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Explanation {
    /// The kernel or code path (`softmax_warp<G=8,N=4>`, `rows (threaded)`).
    pub kernel: String,
    /// Why that one: the shape class and the rule that chose it.
    pub why: String,
    /// Launch or threading parameters (`threads`, `blocks`, `grain`, ...).
    pub params: Vec<(String, i64)>,
    /// The tuning entry that supplied the parameters (`sm_90.json softmax[2]`), if any.
    pub config: Option<String>,
}

/// Describes how a kernel would run a call, without running it.
pub type ExplainFn = Arc<dyn Fn(&OpCall<'_>) -> Result<Explanation> + Send + Sync>;

/// A kernel: computes `call.out` from the inputs.
pub type KernelFn = Arc<dyn Fn(&OpCall<'_>) -> Result<()> + Send + Sync>;

/// One implementation of an op.
#[derive(Clone)]
pub struct Implementation {
    /// The op it implements.
    pub op: Op,
    /// The DLPack device type it runs on.
    pub device_type: i32,
    /// Only for this arch (`"sm_90"`); `None` serves every arch. An arch-specific implementation
    /// outranks a generic one of the same backend.
    pub arch: Option<String>,
    /// The dtypes it accepts; others fall through to the next implementation.
    pub dtypes: Vec<DataType>,
    /// Higher runs first among implementations of one backend and arch class.
    pub priority: i32,
    /// Runs a validated call.
    pub kernel: KernelFn,
    /// How the kernel would run a call (`kernels.explain`); `None`: the kernel names no variants.
    pub explain: Option<ExplainFn>,
}

impl Implementation {
    /// An implementation of `op` on `device_type` for `dtypes`, running `kernel`.
    pub fn new(
        op: Op,
        device_type: i32,
        dtypes: &[DataType],
        kernel: impl Fn(&OpCall<'_>) -> Result<()> + Send + Sync + 'static,
    ) -> Implementation {
        Implementation {
            op,
            device_type,
            arch: None,
            dtypes: dtypes.to_vec(),
            priority: 0,
            kernel: Arc::new(kernel),
            explain: None,
        }
    }

    /// Serves only the arch `arch` (`"sm_90"`), outranking the backend's generic implementation.
    pub fn for_arch(mut self, arch: &str) -> Implementation {
        self.arch = Some(arch.to_owned());
        self
    }

    /// Sets the priority among the backend's implementations of the op (higher runs first).
    pub fn with_priority(mut self, priority: i32) -> Implementation {
        self.priority = priority;
        self
    }

    /// Adds how the kernel would run a call, for `kernels.explain`.
    pub fn with_explain(
        mut self,
        explain: impl Fn(&OpCall<'_>) -> Result<Explanation> + Send + Sync + 'static,
    ) -> Implementation {
        self.explain = Some(Arc::new(explain));
        self
    }
}

/// Restores what a device guard changed when dropped.
pub type GuardToken = Box<dyn std::any::Any>;

type ProbeFn = dyn Fn() -> std::result::Result<Availability, String> + Send + Sync;
type InstallFn = dyn Fn(&Availability) -> Result<Vec<Implementation>> + Send + Sync;
type GuardFn = dyn Fn(Device) -> Result<GuardToken> + Send + Sync;
type AllocFn = dyn Fn(&[i64], DataType, Device, StreamHandle) -> Result<Tensor> + Send + Sync;

/// A backend. Build one with [`Backend::new`] and hand it to a [`crate::Registry`].
pub struct Backend {
    pub(crate) name: String,
    pub(crate) device_types: Vec<i32>,
    pub(crate) priority: i32,
    pub(crate) fallback: bool,
    pub(crate) dtypes: Vec<DataType>,
    pub(crate) unsupported: Vec<(Op, String)>,
    pub(crate) probe: Box<ProbeFn>,
    pub(crate) install: Box<InstallFn>,
    pub(crate) guard: Option<Box<GuardFn>>,
    pub(crate) alloc: Option<Box<AllocFn>>,
    pub(crate) tune_files: Vec<(String, &'static str)>,
}

impl Backend {
    /// A backend serving `device_types`, available by default (override with `probe`), with no
    /// implementations (add them with `implementations`).
    pub fn new(name: &str, device_types: &[i32]) -> Backend {
        Backend {
            name: name.to_owned(),
            device_types: device_types.to_vec(),
            priority: 0,
            fallback: false,
            dtypes: Vec::new(),
            unsupported: Vec::new(),
            probe: Box::new(|| Ok(Availability::default())),
            install: Box::new(|_| Ok(Vec::new())),
            guard: None,
            alloc: None,
            tune_files: Vec::new(),
        }
    }

    /// Higher priorities are probed and chosen first.
    pub fn priority(mut self, priority: i32) -> Backend {
        self.priority = priority;
        self
    }

    /// The last resort, always kept after the selected backends (the CPU backend).
    pub fn fallback(mut self) -> Backend {
        self.fallback = true;
        self
    }

    /// The dtypes the backend handles at all (capabilities, shown by `describe()`).
    pub fn dtypes(mut self, dtypes: &[DataType]) -> Backend {
        self.dtypes = dtypes.to_vec();
        self
    }

    /// Declares `op` unsupported, with the reason; the dispatcher never runs this backend's
    /// implementations of it.
    pub fn unsupported(mut self, op: Op, reason: &str) -> Backend {
        self.unsupported.push((op, reason.to_owned()));
        self
    }

    /// How to find out whether the backend can run here. Runs at most once, at first use (never
    /// when the backend is registered); `Err` carries the reason.
    pub fn probe(
        mut self,
        probe: impl Fn() -> std::result::Result<Availability, String> + Send + Sync + 'static,
    ) -> Backend {
        self.probe = Box::new(probe);
        self
    }

    /// Makes the implementations; runs once, after a successful probe, so a backend whose
    /// libraries are missing never registers any.
    pub fn implementations(
        mut self,
        install: impl Fn(&Availability) -> Result<Vec<Implementation>> + Send + Sync + 'static,
    ) -> Backend {
        self.install = Box::new(install);
        self
    }

    /// Makes `device` current for the duration of a kernel; the returned token restores the
    /// previous state when dropped. Applied by the dispatcher, so kernels cannot forget it.
    pub fn device_guard(
        mut self,
        guard: impl Fn(Device) -> Result<GuardToken> + Send + Sync + 'static,
    ) -> Backend {
        self.guard = Some(Box::new(guard));
        self
    }

    /// Allocates outputs on the backend's devices when the host installed no environment
    /// allocator (which takes precedence, so outputs come from the caller's framework).
    pub fn allocator(
        mut self,
        alloc: impl Fn(&[i64], DataType, Device, StreamHandle) -> Result<Tensor> + Send + Sync + 'static,
    ) -> Backend {
        self.alloc = Some(Box::new(alloc));
        self
    }

    /// The built-in tuning files (`"default.json"`, `"sm_90.json"`, ...), usually the crate's
    /// copies of `kernels/tune/<backend>/`; `RFFI_KERNELS_TUNE_DIR` replaces them.
    pub fn tune_file(mut self, file_name: &str, contents: &'static str) -> Backend {
        self.tune_files.push((file_name.to_owned(), contents));
        self
    }

    /// The backend's name (`"cpu"`, `"cuda"`).
    pub fn name(&self) -> &str {
        &self.name
    }
}
