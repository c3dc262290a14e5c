//! Launch parameters and grids of the elementwise kernels: the tuning entry's parameters (read
//! once per thread while the configs do not depend on the shape), the grid of a form, and the
//! reason for `explain` (formatted only there).

use super::elementwise::{kernel, kernel_packs, kernel_tiled_prefetch, Form};
use super::{CeilDiv, Launch, Tuned};
use rffi_core::Result;
use rffi_kernels::OpCall;

/// Why a form was chosen: formatted only when explained, never on the call path.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Why {
    form: Form,
    vec: u64,
    /// Packs a thread per step of the packed forms; elements a thread a round of `strided32`.
    packs: u64,
    /// `strided32` rounds from tiles of consecutive elements; the tiles prefetching the next.
    tiled: bool,
    /// Blocks an SM and waves (0: no cap).
    caps: (u64, u64),
    sms: i64,
}

impl Why {
    pub fn text(&self) -> String {
        let Why {
            form,
            vec,
            packs,
            tiled,
            caps: (per_sm, waves),
            sms,
        } = *self;
        let what = match form {
            Form::Vec => format!(
                "contiguous 16-byte aligned operands: {vec}-element packs, {packs} a thread per step"
            ),
            Form::Bcast => format!(
                "a broadcast operand (a row, a column or one value) over rows of whole \
                 {vec}-element packs: 16-byte loads, the pack's row by multiply-high division"
            ),
            Form::Strided32 if packs > 1 => format!(
                "strided, transposed or broadcast operands: 32-bit offsets, {packs} elements a \
                 thread a round, loaded before any is stored, {}",
                if tiled {
                    "a block's from a tile of consecutive elements"
                } else {
                    "a grid's width apart"
                }
            ),
            Form::Strided32 => {
                "strided, transposed or broadcast operands: 32-bit offsets".to_owned()
            }
            Form::Strided => "strided operands with offsets beyond 32 bits".to_owned(),
            Form::Tiled => format!(
                "a transposed operand over two dims: 32 x 32 tiles, read through shared memory \
                 along its contiguous rows, 256 threads{}",
                if tiled {
                    ", the next tile's loads issued before this tile's stores"
                } else {
                    ""
                }
            ),
            Form::Halves => format!(
                "rows read every element or every second one (x[..., ::2], x[..., 1::2]), the \
                 output compact: units of {} outputs, 8-byte stores; inputs read every second \
                 element load the aligned 16-byte pack that holds a unit's, the others 8 bytes; \
                 {packs} units a thread per step",
                (vec / 2).max(1)
            ),
        };
        let per_sm = match per_sm {
            0 => "a block per tile of work".to_owned(),
            b => format!(
                "grid at most {} blocks ({sms} SMs x {b})",
                sms.max(1) as u64 * b
            ),
        };
        let waves = match waves {
            0 => String::new(),
            w => format!(", and at most {w} wave(s) of the blocks the SMs hold at once"),
        };
        format!("{what}; {per_sm}{waves}")
    }
}

/// The launch parameters of the elementwise kernels: threads a block; for the strided forms at
/// most `blocks_per_sm` blocks an SM and at most `waves` times the blocks the SMs hold at once;
/// the same for the packed forms (`vec_*`). 0 is no cap.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Params {
    pub threads: u64,
    pub blocks_per_sm: u64,
    pub waves: u64,
    pub vec_blocks_per_sm: u64,
    pub vec_waves: u64,
    /// Packs a thread per step of the packed unary kernels (`NAME_vec`: 4, `NAME_vec8`: 8,
    /// `NAME_vec1`: 1).
    pub unary_packs: u64,
    /// Elements a thread a round of the 32-bit strided kernels (1 or 4).
    pub strided_rounds: u64,
    /// With 4 rounds, a block's elements a round from one tile of consecutive elements (1) or
    /// a grid's width apart (0).
    pub strided_tile: u64,
    /// Rows read every element or every second one in halves of packs (`NAME_halves`), where
    /// they would take a strided kernel (1), or not (0).
    pub halves: u64,
    /// The tiles with the next tile's loads issued before this tile's stores (`NAME_tiledp`:
    /// 1), or each tile loaded after the last is stored (0).
    pub tiled_prefetch: u64,
}

impl Params {
    /// The parameters of a tuning entry (defaults where it has none).
    pub fn of(tuned: &Tuned<'_>) -> Params {
        let cap = |name, default| tuned.get(name, default).max(0) as u64;
        Params {
            threads: tuned.get("threads", 256).clamp(32, 1024) as u64,
            blocks_per_sm: cap("blocks_per_sm", 8),
            waves: cap("waves", 1),
            vec_blocks_per_sm: cap("vec_blocks_per_sm", 0),
            vec_waves: cap("vec_waves", 0),
            unary_packs: match tuned.get("unary_packs", 4) {
                p if p >= 8 => 8,
                1 => 1,
                _ => 4,
            },
            strided_rounds: if tuned.get("strided_rounds", 1) >= 4 {
                4
            } else {
                1
            },
            strided_tile: (tuned.get("strided_tile", 0) != 0) as u64,
            halves: (tuned.get("halves", 0) != 0) as u64,
            tiled_prefetch: (tuned.get("tiled_prefetch", 0) != 0) as u64,
        }
    }

    /// (blocks an SM, waves) for `form`.
    pub(super) fn caps(&self, form: Form) -> (u64, u64) {
        match form {
            Form::Vec | Form::Bcast | Form::Halves => (self.vec_blocks_per_sm, self.vec_waves),
            Form::Strided32 | Form::Strided | Form::Tiled => (self.blocks_per_sm, self.waves),
        }
    }
}

/// The launch of an elementwise kernel over `n` elements in `form` (`vec`: elements a pack)
/// with `params` (the waves are applied at launch, from the kernel's occupancy).
pub fn plan(
    name: &str,
    scalar: bool,
    n: u64,
    form: Form,
    vec: u64,
    sms: i64,
    params: Params,
) -> (Launch, Why) {
    let caps = params.caps(form);
    let cap = match caps.0 {
        0 => u64::MAX,
        b => sms.max(1) as u64 * b,
    };
    // The tiles are 32 x 32 elements over 256 threads (32 x 8, four rows a thread).
    let threads = if form == Form::Tiled {
        256
    } else {
        params.threads
    };
    // A form's other kernel where the tuning asks for it: packed unary kernels with 8 or 1 packs
    // a thread per step, the tiles prefetching the next.
    let other = match form {
        Form::Vec if !scalar && params.unary_packs != 4 => kernel_packs(name, params.unary_packs),
        Form::Tiled if params.tiled_prefetch != 0 => Some(kernel_tiled_prefetch(name)),
        _ => None,
    };
    let work = match form {
        Form::Vec if other.is_some() => n.cdiv(vec).cdiv(params.unary_packs),
        Form::Vec | Form::Bcast => n.cdiv(vec).cdiv(4),
        Form::Halves => n.cdiv((vec / 2).max(1)).cdiv(4),
        Form::Strided32 => n.cdiv(params.strided_rounds),
        Form::Strided => n,
        Form::Tiled => n.cdiv(4),
    };
    let blocks = work.cdiv(threads).clamp(1, cap);
    (
        Launch::new(
            other.unwrap_or_else(|| kernel(name, scalar, form)),
            blocks,
            threads,
        ),
        Why {
            form,
            packs: match form {
                Form::Strided32 => params.strided_rounds,
                Form::Vec if other.is_some() => params.unary_packs,
                _ => 4,
            },
            tiled: match form {
                Form::Strided32 => params.strided_rounds == 4 && params.strided_tile == 1,
                Form::Tiled => params.tiled_prefetch == 1,
                _ => false,
            },
            vec,
            caps,
            sms,
        },
    )
}

/// The ops' arithmetic an element, roughly in instructions (the tuning variable `arith`), so
/// that a config can launch ops bound by arithmetic (the erf form of gelu in 16-bit types on an
/// H200) otherwise than ops bound by memory. Ops not named: 1.
const ARITH: [(&str, i64); 6] = [
    ("", 1),
    ("exp", 2),
    ("div", 4),
    ("rdiv", 4),
    ("gelu_tanh", 8),
    ("gelu", 16),
];

/// Op `name`'s slot in `ARITH`.
fn arith_slot(name: &str) -> usize {
    ARITH.iter().position(|&(n, _)| n == name).unwrap_or(0)
}

/// A tuning read: the configs' identity and the parameters they gave.
type Seen = Option<((u64, usize), Params)>;

thread_local! {
    /// The last tuning read on this thread for each `ARITH` slot: (the configs' identity,
    /// the parameters), kept when the configs choose without looking at the size (no `when`
    /// reads `numel` or `sms`), so that calls read no config by name.
    static TUNED: std::cell::Cell<[Seen; ARITH.len()]> =
        const { std::cell::Cell::new([None; ARITH.len()]) };
}

/// The variables the elementwise configs choose by: the size, the SM count and the op's
/// arithmetic (`ARITH`).
pub(super) fn tune_vars(name: &str, n: u64, sms: i64) -> [(&'static str, i64); 3] {
    [
        ("numel", n as i64),
        ("sms", sms),
        ("arith", ARITH[arith_slot(name)].1),
    ]
}

/// The launch parameters for a call of op `name` over `n` elements.
pub(super) fn launch_params(call: &OpCall<'_>, name: &str, n: u64, sms: i64) -> Result<Params> {
    let id = call.tune.id();
    let slot = arith_slot(name);
    if id.0 != 0 {
        if let Ok(Some((seen, p))) = TUNED.try_with(|c| c.get()[slot]) {
            if seen == id {
                return Ok(p);
            }
        }
    }
    let tuned = Tuned::select(&call.tune, "elementwise", &tune_vars(name, n, sms))?;
    let p = Params::of(&tuned);
    let sized = |w: &rffi_kernels::expr::Expr| w.uses("numel") || w.uses("sms");
    if id.0 != 0
        && !call
            .tune
            .configs("elementwise")
            .iter()
            .any(|c| c.when.as_ref().is_some_and(sized))
    {
        let _ = TUNED.try_with(|c| {
            let mut seen = c.get();
            seen[slot] = Some((id, p));
            c.set(seen);
        });
    }
    Ok(p)
}
