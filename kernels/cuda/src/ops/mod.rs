//! Launching the NVRTC kernels. Each family plans first (a pure function of the shape class,
//! the SM count and the tuning configs, which `explain` reports and the tests check without a
//! GPU), then binds the arguments and launches on the call's stream.

pub mod elementwise;
mod grid;
mod layouts;
pub mod norm;
mod pipe;
pub mod reduce;
pub mod softmax;

use crate::driver;
use crate::source::{dt_of, Dt, Family, MAX_DIMS};
use cudarc::driver::sys;
use rffi_core::error::kind;
use rffi_core::{Error, Result, Tensor};
use rffi_kernels::{Config, Explanation, OpCall, TuneView};
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

/// The kernels the planners can choose from a module of `family` for `dt`, for the offline
/// check that each is an entry of the compiled module (`cargo run --example cuda_sources`,
/// `kernels/cuda/check/cuda_check.sh`).
pub fn planned_kernels(dt: &Dt, family: Family) -> Vec<&'static str> {
    match family {
        Family::Elementwise => elementwise::kernel_names(dt.is_float),
        Family::Softmax | Family::SoftmaxQuads => softmax::kernel_names(dt.size as i64)
            .into_iter()
            .filter(|&n| softmax::family(n) == family)
            .collect(),
        Family::Norm => norm::kernel_names(),
        Family::Reduce(i) => reduce::kernel_names(reduce::op_of_index(i)),
    }
}

/// A `static_assert` that the kernels' `struct NAME` has the host's size and alignment (NVRTC
/// has no constant `offsetof`). Appended to the modules' source, so that a field added or
/// removed on one side only fails the compile (NVRTC, or clang's offline check) instead of a
/// launch reading its arguments wrong.
pub(crate) fn layout_assert(name: &str, size: usize, align: usize) -> String {
    format!(
        "static_assert(sizeof({name}) == {size} && alignof({name}) == {align}, \
         \"struct {name}: not the host's layout\");\n"
    )
}

/// The layout assertions of the structs a module of `family` takes by value (`layout_assert`).
pub(crate) fn layout_asserts(family: crate::source::Family) -> String {
    use crate::source::Family;
    use std::mem::{align_of, size_of};
    let mut out = layout_assert("Lay", size_of::<Lay>(), align_of::<Lay>());
    out += &layout_assert("Lay32", size_of::<Lay32>(), align_of::<Lay32>());
    match family {
        Family::Elementwise => {
            out += &layout_assert(
                "Bc",
                size_of::<elementwise::Bc>(),
                align_of::<elementwise::Bc>(),
            );
            out += &layout_assert(
                "Tl",
                size_of::<elementwise::Tl>(),
                align_of::<elementwise::Tl>(),
            );
            out += &layout_assert(
                "Hv",
                size_of::<elementwise::Hv>(),
                align_of::<elementwise::Hv>(),
            );
        }
        Family::Reduce(_) => {
            out += &layout_assert(
                "RLay",
                size_of::<reduce::RLay>(),
                align_of::<reduce::RLay>(),
            )
        }
        _ => {}
    }
    out
}

/// The grid of `rows` rows over clusters of `cn` blocks: a cluster a row, a whole number of
/// clusters within a launch's limit (the kernels walk the rows grid-stride).
pub(crate) fn cluster_grid(rows: u64, cn: i64) -> u64 {
    let cn = cn as u64;
    (rows * cn).min(i32::MAX as u64 / cn * cn)
}

/// Collapses `shape` over the operands' strides: dims of size 1 dropped, dims merged where
/// every operand is contiguous across them.
pub fn collapse(shape: &[i64], strides: &[&[i64]]) -> Vec<(i64, [i64; 3])> {
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
    dims
}

fn too_many_dims(n: usize, shape: &[i64]) -> Error {
    Error::new(
        kind::NOT_IMPLEMENTED_ERROR,
        format!(
            "kernels (cuda): this layout needs {n} dimensions after merging contiguous ones; the \
             strided kernels take at most {MAX_DIMS} (shape {shape:?})"
        ),
    )
}

impl Lay {
    pub fn new(shape: &[i64], strides: &[&[i64]]) -> Result<Lay> {
        Lay::from_dims(&collapse(shape, strides), shape)
    }

    fn from_dims(dims: &[(i64, [i64; 3])], shape: &[i64]) -> Result<Lay> {
        if dims.len() > MAX_DIMS {
            return Err(too_many_dims(dims.len(), shape));
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

/// `struct Lay32`: the same for fewer than 2^31 elements with 32-bit offsets; dims carry the
/// multiply-high constants of their division.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct Lay32 {
    nd: i32,
    shape: [u32; MAX_DIMS],
    mul: [u32; MAX_DIMS],
    shr: [u32; MAX_DIMS],
    s: [[i32; MAX_DIMS]; 3],
    /// Elements a thread a round (1 or 4; the tuning's `strided_rounds`).
    pub rounds: i32,
    /// With 4 rounds: a block's four elements a thread from one tile of 4 x threads consecutive
    /// elements (1; the tuning's `strided_tile`), or a grid's width apart (0).
    pub tiled: i32,
}

/// The constants that make `(umulhi(i, mul) + i) >> shr` equal `i / d` for `i < 2^31`.
pub fn fast_div(d: u32) -> (u32, u32) {
    let l = 32 - (d.max(1) - 1).leading_zeros();
    let l = if d <= 1 { 0 } else { l };
    let mul = (((1u64 << 32) * ((1u64 << l) - d as u64)) / d as u64 + 1) as u32;
    (mul, l)
}

impl Lay32 {
    /// The 32-bit layout, when `n < 2^31` and every operand's offsets fit 32 bits.
    pub fn new(n: u64, shape: &[i64], strides: &[&[i64]]) -> Option<Lay32> {
        let dims = collapse(shape, strides);
        if n >= 1 << 31 || dims.len() > MAX_DIMS {
            return None;
        }
        for j in 0..3 {
            let reach: i64 = dims.iter().map(|(d, s)| (d - 1) * s[j].abs()).sum();
            if reach > i32::MAX as i64 {
                return None;
            }
        }
        let mut l = Lay32 {
            nd: dims.len() as i32,
            rounds: 1,
            ..Lay32::default()
        };
        for (i, (d, s)) in dims.iter().enumerate() {
            l.shape[i] = *d as u32;
            (l.mul[i], l.shr[i]) = fast_div(*d as u32);
            for (lane, v) in l.s.iter_mut().zip(s) {
                lane[i] = *v as i32;
            }
        }
        Some(l)
    }
}

/// Division rounding up, for the sizes of plans (`i64::div_ceil` is not stable).
pub trait CeilDiv {
    fn cdiv(self, d: Self) -> Self;
}

impl CeilDiv for i64 {
    fn cdiv(self, d: i64) -> i64 {
        (self + d - 1) / d
    }
}

impl CeilDiv for u64 {
    fn cdiv(self, d: u64) -> u64 {
        self.div_ceil(d)
    }
}

pub fn ptr(t: &Tensor) -> u64 {
    t.element_ptr() as usize as u64
}

pub fn stream(call: &OpCall<'_>) -> sys::CUstream {
    call.stream.cast()
}

pub fn dt(call: &OpCall<'_>) -> Result<Dt> {
    dt_of(call.dtype)
        .ok_or_else(|| Error::type_error(format!("kernels (cuda): no kernels for {}", call.dtype)))
}

pub fn aligned16(t: &Tensor) -> bool {
    ptr(t) % 16 == 0
}

pub fn arg<T>(v: &mut T) -> *mut c_void {
    (v as *mut T).cast()
}

/// What a plan needs from the device: its SM count (from the probe's device state).
pub fn sms(call: &OpCall<'_>) -> Result<i64> {
    Ok(driver::sm_count(call.device.index())? as i64)
}

/// The tuning entry for `key` over `vars`: a parameter getter with defaults, and where it came
/// from.
pub struct Tuned<'a> {
    config: Option<&'a Config>,
}

impl<'a> Tuned<'a> {
    pub fn select(tune: &TuneView<'a>, key: &str, vars: &[(&str, i64)]) -> Result<Tuned<'a>> {
        Ok(Tuned {
            config: tune.select(key, vars)?,
        })
    }

    pub fn get(&self, name: &str, default: i64) -> i64 {
        self.config.and_then(|c| c.get(name)).unwrap_or(default)
    }

    pub fn origin(&self) -> Option<String> {
        self.config.map(Config::describe)
    }
}

/// A chosen kernel and its launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub kernel: &'static str,
    pub grid: (u32, u32),
    pub block: u32,
}

impl Launch {
    pub fn new(kernel: &'static str, grid: u64, block: u64) -> Launch {
        Launch {
            kernel,
            grid: (grid.clamp(1, i32::MAX as u64) as u32, 1),
            block: block as u32,
        }
    }
}

/// An explanation of launches: the kernels, the reason, the tuning entry.
pub fn explanation(launches: &[&Launch], why: String, config: Option<String>) -> Explanation {
    let mut params = Vec::new();
    for (i, l) in launches.iter().enumerate() {
        let p = if i == 0 {
            String::new()
        } else {
            format!("{}.", i + 1)
        };
        params.push((format!("{p}grid"), l.grid.0 as i64 * l.grid.1 as i64));
        params.push((format!("{p}block"), l.block as i64));
    }
    Explanation {
        kernel: launches
            .iter()
            .map(|l| l.kernel)
            .collect::<Vec<_>>()
            .join(" + "),
        why,
        params,
        config,
    }
}

/// Copies `src` (any strides) into the compact buffer at `dst` on the call's stream.
pub fn copy_compact(call: &OpCall<'_>, src: &Tensor, dst: u64) -> Result<()> {
    copy_to(call, src, dst, &compact_strides(src.shape()))
}

/// Copies `src` into the elements at `dst` laid out with `dst_strides` (same shape).
pub fn copy_to(call: &OpCall<'_>, src: &Tensor, dst: u64, dst_strides: &[i64]) -> Result<()> {
    elementwise::copy(call, src, dst, dst_strides)
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

#[cfg(test)]
mod plan_tests;

#[cfg(test)]
mod norm_plan_tests;

#[cfg(test)]
mod variant_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_division_is_exact() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let divisors = [
            1u32,
            2,
            3,
            7,
            10,
            31,
            32,
            33,
            1000,
            50257,
            65535,
            1 << 20,
            (1 << 31) - 1,
        ];
        for &d in &divisors {
            let (mul, shr) = fast_div(d);
            for _ in 0..20_000 {
                let i = (next() % (1 << 31)) as u32;
                let q = ((((i as u64) * (mul as u64)) >> 32) + i as u64) >> shr;
                assert_eq!(q, (i / d) as u64, "{i} / {d}");
            }
            for i in [0u32, d - 1, d, (1 << 31) - 1] {
                let q = ((((i as u64) * (mul as u64)) >> 32) + i as u64) >> shr;
                assert_eq!(q, (i / d) as u64, "{i} / {d}");
            }
        }
    }

    #[test]
    fn layouts_collapse_and_fall_back_to_64_bits() {
        // A transposed operand against a compact one: two dims.
        let l = Lay32::new(12, &[3, 4], &[&[4, 1], &[1, 3]]).unwrap();
        assert_eq!((l.nd, l.shape[0], l.shape[1]), (2, 3, 4));
        // Broadcast (stride 0) and a size-1 dim.
        let l = Lay::new(&[2, 1, 5], &[&[0, 9, 1], &[5, 5, 1]]).unwrap();
        assert_eq!(l.nd, 2);
        // Offsets beyond 32 bits.
        assert!(Lay32::new(4, &[2, 2], &[&[1 << 31, 1], &[2, 1]]).is_none());
        assert!(Lay32::new(1 << 31, &[1 << 31], &[&[1]]).is_none());
    }
}
