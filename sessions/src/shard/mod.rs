//! Loading parameters with sharding at load time: safetensors weights (memory-mapped) and a shard
//! plan in TVM's `shard_info.json` shape. Each worker reads and shards its own slice:
//!
//! ```no_run
//! use rffi_session::shard::ShardInfo;
//! let sess = rffi_session::ProcessSession::new(2)?;
//! let info = ShardInfo::parse(r#"{"w": [["rffi.shard.split", [[2, 4, 8], "float32"], 2, 0]]}"#)?;
//! let params = sess.load_params("model.safetensors", &info, false)?; // name -> DRef
//! # Ok::<(), rffi_core::Error>(())
//! ```
//!
//! `load_local` does the same for one rank in this process. Global functions:
//! `rffi.shard.load_local(weights, shard_info, rank, world_size, progress)` (a Map name → Tensor;
//! `shard_info` is JSON text or a path), `rffi.shard.load_worker(weights, shard_info, progress)`
//! (the same on a session worker, for its own rank), `rffi.shard.names(map)` and
//! `rffi.shard.get(map, name)`, plus the built-in steps of `builtin`.

pub mod builtin;
pub mod plan;
pub mod safetensors;
mod via_ccl;

pub use plan::{ShardInfo, Step};
pub use safetensors::Weights;

use crate::dref::DRef;
use crate::session::Session;
use rffi_core::{
    register_global, register_global_packed, Any, AnyView, Array, DataType, Device, Error, Map,
    Result, Tensor,
};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};

fn context(e: Error, name: &str, step: Option<(usize, &str)>) -> Error {
    let at = match step {
        Some((k, f)) => format!("parameter `{name}`, step {k} (`{f}`)"),
        None => format!("parameter `{name}`"),
    };
    Error::new(&e.kind(), format!("{at}: {}", e.message()))
}

fn host_tensor(shape: &[i64], dtype: DataType, data: &[u8]) -> Result<Tensor> {
    let t = Tensor::empty(shape, dtype, Device::cpu())?;
    if t.nbytes() != data.len() {
        return Err(Error::value_error(format!(
            "{} bytes for shape {shape:?} of {dtype}, expected {}",
            data.len(),
            t.nbytes()
        )));
    }
    t.data_ptr_mut()?; // a fresh tensor is writable; this keeps the check explicit
                       // SAFETY: `t` is a fresh contiguous tensor of exactly `data.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), t.element_ptr().cast(), data.len()) };
    Ok(t)
}

/// Applies `steps` to parameter `name`: the last output, `[world, ...]` (the input itself when
/// there are no steps).
fn run_steps(name: &str, input: Tensor, steps: &[Step], world: usize) -> Result<Tensor> {
    let mut cur = input;
    for (k, step) in steps.iter().enumerate() {
        let at = Some((k, step.func.as_str()));
        let f = rffi_core::get_global_func(&step.func).ok_or_else(|| {
            context(
                Error::new("KeyError", format!("no registry function `{}`", step.func)),
                name,
                at,
            )
        })?;
        let out = Tensor::empty(&step.out_shape, step.out_dtype, cur.device())
            .map_err(|e| context(e, name, at))?;
        let mut args = vec![Any::from(cur.clone())];
        args.extend(step.extra_args());
        args.push(Any::from(out.clone()));
        f.call(&args).map_err(|e| context(e, name, at))?;
        cur = out;
    }
    if let Some(last) = steps.last() {
        if cur.shape().first() != Some(&(world as i64)) {
            let at = Some((steps.len() - 1, last.func.as_str()));
            return Err(context(leading_dim_error(cur.shape(), world), name, at));
        }
    }
    Ok(cur)
}

/// Applies `steps` to parameter `name` and keeps slice `rank` of the last output.
fn shard_one(
    name: &str,
    input: Tensor,
    steps: &[Step],
    rank: usize,
    world: usize,
) -> Result<Tensor> {
    let cur = run_steps(name, input, steps, world)?;
    let Some(last) = steps.last() else {
        return Ok(cur);
    };
    let at = Some((steps.len() - 1, last.func.as_str()));
    let per = cur.nbytes() / world;
    // SAFETY: `cur` is a compact tensor the loader allocated; slice `rank` is `per` bytes.
    let all = unsafe { std::slice::from_raw_parts(cur.element_ptr().cast::<u8>(), cur.nbytes()) };
    host_tensor(
        &cur.shape()[1..],
        cur.dtype(),
        &all[rank * per..(rank + 1) * per],
    )
    .map_err(|e| context(e, name, at))
}

fn leading_dim_error(shape: &[i64], world: usize) -> Error {
    Error::value_error(format!(
        "the last output's shape {shape:?} must lead with the worker count {world}"
    ))
}

/// A plan of one built-in step: copies shards `ranks` straight from the mapped weights, without
/// a copy of the whole parameter or the other shards. One rank gives its shard; several give
/// `[ranks.len(), ...]`.
fn shard_direct(
    name: &str,
    step: &Step,
    cut: Result<builtin::Cut>,
    t: &safetensors::TensorRef<'_>,
    ranks: std::ops::Range<usize>,
    world: usize,
) -> Result<Tensor> {
    let at = Some((0, step.func.as_str()));
    let cut = cut.map_err(|e| context(e, name, at))?;
    if step.out_shape.first() != Some(&(world as i64)) {
        return Err(context(leading_dim_error(&step.out_shape, world), name, at));
    }
    let mut shape = step.out_shape.clone();
    if ranks.len() == 1 {
        shape.remove(0);
    } else {
        shape[0] = ranks.len() as i64;
    }
    let out = Tensor::empty(&shape, t.dtype, Device::cpu()).map_err(|e| context(e, name, at))?;
    out.data_ptr_mut()?;
    // SAFETY: `out` is a fresh contiguous tensor of `nbytes` bytes that nothing else references.
    let dst =
        unsafe { std::slice::from_raw_parts_mut(out.element_ptr().cast::<u8>(), out.nbytes()) };
    let per = out.nbytes() / ranks.len().max(1);
    for (i, r) in ranks.enumerate() {
        cut.copy_shard(r, t.data, &mut dst[i * per..(i + 1) * per]);
    }
    Ok(out)
}

/// Draws `loading parameters: i/n (x/y MB)` on stderr when it is a terminal.
struct Progress {
    on: bool,
    total_bytes: usize,
    done_bytes: usize,
}

impl Progress {
    fn step(&mut self, i: usize, n: usize, bytes: usize) {
        self.done_bytes += bytes;
        if self.on {
            let mb = |b: usize| b as f64 / 1e6;
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\rloading parameters: {i}/{n} ({:.1}/{:.1} MB)",
                mb(self.done_bytes),
                mb(self.total_bytes)
            );
            if i == n {
                let _ = writeln!(err);
            }
        }
    }
}

/// Loads every parameter of `weights` for `rank` of `world_size`: sharded by `info`, or whole
/// where `info` has no entry. Any failure returns an error and keeps nothing.
pub fn load_local(
    weights: &Weights,
    info: &ShardInfo,
    rank: usize,
    world_size: usize,
    progress: bool,
) -> Result<Vec<(String, Tensor)>> {
    check_world(rank, world_size)?;
    let (names, sizes, mut bar) = begin(weights, info, progress)?;
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let param = shard_param(weights, info, name, rank..rank + 1, world_size)?;
        out.push((name.to_string(), param));
        bar.step(i + 1, names.len(), sizes[i]);
    }
    Ok(out)
}

fn check_world(rank: usize, world_size: usize) -> Result<()> {
    if world_size == 0 || rank >= world_size {
        return Err(Error::value_error(format!(
            "rank {rank} is not in a world of {world_size} workers"
        )));
    }
    Ok(())
}

/// Checks the plan against the weights; the parameter names, their sizes, and the progress bar.
fn begin<'w>(
    weights: &'w Weights,
    info: &ShardInfo,
    progress: bool,
) -> Result<(Vec<&'w str>, Vec<usize>, Progress)> {
    if let Some(name) = info.params.keys().find(|n| !weights.contains(n)) {
        return Err(Error::new(
            "KeyError",
            format!("parameter `{name}`: named in shard_info but not in the weights"),
        ));
    }
    let names: Vec<&str> = weights.names().collect();
    let sizes: Vec<usize> = names
        .iter()
        .map(|n| weights.get(n).map_or(0, |t| t.data.len()))
        .collect();
    let bar = Progress {
        on: progress && std::io::stderr().is_terminal(),
        total_bytes: sizes.iter().sum(),
        done_bytes: 0,
    };
    Ok((names, sizes, bar))
}

/// Parameter `name` for `ranks`: one rank's slice, or (several ranks, a sharded parameter) the
/// stacked slices `[ranks.len(), ...]`; a replicated parameter is the whole tensor either way.
fn shard_param(
    weights: &Weights,
    info: &ShardInfo,
    name: &str,
    ranks: std::ops::Range<usize>,
    world_size: usize,
) -> Result<Tensor> {
    let t = weights.get(name).expect("a name the weights listed");
    let steps = info.params.get(name).map_or(&[][..], Vec::as_slice);
    let direct = match steps {
        [step] => builtin::direct_cut(step, &t.shape, t.dtype).map(|cut| (step, cut)),
        _ => None,
    };
    if let Some((step, cut)) = direct {
        return shard_direct(name, step, cut, &t, ranks, world_size);
    }
    let input = host_tensor(&t.shape, t.dtype, t.data).map_err(|e| context(e, name, None))?;
    if ranks.len() == 1 {
        shard_one(name, input, steps, ranks.start, world_size)
    } else {
        run_steps(name, input, steps, world_size)
    }
}

/// Opens `weights` and loads rank `rank`'s parameters (see `load_local`).
pub fn load_local_path(
    weights: &str,
    info: &ShardInfo,
    rank: usize,
    world_size: usize,
    progress: bool,
) -> Result<Vec<(String, Tensor)>> {
    load_local(&Weights::open(weights)?, info, rank, world_size, progress)
}

fn to_map(params: Vec<(String, Tensor)>) -> Result<Map> {
    Map::new(
        params
            .into_iter()
            .map(|(n, t)| (Any::from(n), Any::from(t)))
            .collect(),
    )
}

/// How a session's workers get their parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// The fastest correct path: `Ccl` when the workers have an NCCL communicator (the slices
    /// reach the GPUs through it), else `Read`. With shared memory on one host every worker
    /// reading its own slice from the page cache is faster than a scatter through the
    /// communicator (docs/BENCHMARKS.md), so `Auto` reads there.
    Auto,
    /// Worker 0 reads and shards for every worker and sends each its slice through the
    /// communicator; the others never open the weights. With NCCL the parameters are GPU
    /// tensors on each worker's GPU (worker 0 copies its host shards to its GPU first).
    Ccl,
    /// Every worker reads its own slice.
    Read,
}

impl Via {
    /// The way named `s` (`"auto"`, `"ccl"`, `"read"`); a ValueError otherwise.
    pub fn parse(s: &str) -> Result<Via> {
        match s {
            "auto" => Ok(Via::Auto),
            "ccl" => Ok(Via::Ccl),
            "read" => Ok(Via::Read),
            _ => Err(Error::value_error(format!(
                "load_params: via must be \"auto\", \"ccl\" or \"read\", got {s:?}"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Via::Auto => "auto",
            Via::Ccl => "ccl",
            Via::Read => "read",
        }
    }
}

impl Session {
    /// Loads `weights` on every worker (`load_params_via` with `Via::Auto`).
    pub fn load_params(
        &self,
        weights: &str,
        info: &ShardInfo,
        progress: bool,
    ) -> Result<BTreeMap<String, DRef>> {
        self.load_params_via(weights, info, progress, Via::Auto)
    }

    /// Loads `weights` on every worker, each with its slice, read as `via` says; a name → DRef
    /// map. A failure on any worker is raised here, and nothing stays loaded.
    pub fn load_params_via(
        &self,
        weights: &str,
        info: &ShardInfo,
        progress: bool,
        via: Via,
    ) -> Result<BTreeMap<String, DRef>> {
        let load = self.get_global_func("rffi.shard.load_worker")?;
        let all = load.call(&[
            weights.into(),
            info.json().into(),
            progress.into(),
            via.name().into(),
        ])?;
        self.sync()?;
        let names = self
            .get_global_func("rffi.shard.names")?
            .call(&[Any::from(&all)])?
            .fetch(0)?;
        let names = names.try_as::<Array>()?;
        let get = self.get_global_func("rffi.shard.get")?;
        let mut out = BTreeMap::new();
        for n in names.iter() {
            let n: String = n.try_as()?;
            let r = get.call(&[Any::from(&all), Any::from(n.as_str())])?;
            out.insert(n, r);
        }
        Ok(out)
    }
}

register_global!("rffi.shard.load_local", |weights: String,
                                           info: String,
                                           rank: i64,
                                           world: i64,
                                           progress: bool|
 -> Result<Map> {
    let (Ok(r), Ok(w)) = (usize::try_from(rank), usize::try_from(world)) else {
        return Err(Error::value_error(format!(
            "rank {rank} is not in a world of {world} workers"
        )));
    };
    let info = ShardInfo::from_text_or_path(&info)?;
    to_map(load_local_path(&weights, &info, r, w, progress)?)
});

// `rffi.shard.load_worker(weights, shard_info, progress[, via])`: this worker's parameters;
// `via` is "auto" (the default), "ccl" or "read" (see `Via`).
register_global_packed!(
    "rffi.shard.load_worker",
    |a: &[AnyView<'_>]| -> Result<Any> {
        const F: &str = "rffi.shard.load_worker";
        if !(3..=4).contains(&a.len()) {
            return Err(Error::type_error(format!(
                "`{F}` expects (weights, shard_info, progress[, via]) but {} arguments were given",
                a.len()
            )));
        }
        let arg = |i: usize, name: &str, want: &str| {
            Error::type_error(format!(
                "`{F}` argument #{i} ({name}): expected {want} but got {}",
                a[i].type_name()
            ))
        };
        let weights: String = a[0].try_as().map_err(|_| arg(0, "weights", "a str"))?;
        let info: String = a[1].try_as().map_err(|_| arg(1, "shard_info", "a str"))?;
        let progress: bool = a[2].try_as().map_err(|_| arg(2, "progress", "a bool"))?;
        let via = match a.get(3) {
            Some(v) => Via::parse(&v.try_as::<String>().map_err(|_| arg(3, "via", "a str"))?)?,
            None => Via::Auto,
        };
        let (rank, world) = crate::worker::current()
            .ok_or_else(|| Error::runtime_error(format!("`{F}` runs on session workers only")))?;
        let info = ShardInfo::from_text_or_path(&info)?;
        let progress = progress && rank == 0;
        let params = match via {
            Via::Ccl => via_ccl::load(&weights, &info, progress)?,
            Via::Auto if via_ccl::gpu_comm_up() => via_ccl::load(&weights, &info, progress)?,
            _ => load_local_path(&weights, &info, rank, world, progress)?,
        };
        Ok(Any::from(to_map(params)?))
    }
);

/// Weight files this thread has opened (each file of a `Weights::open`): lets tests see which
/// workers read the weights.
pub fn files_opened() -> usize {
    safetensors::OPENED.with(|n| n.get())
}

register_global!("rffi.shard.files_opened", || -> Result<i64> {
    Ok(files_opened() as i64)
});

register_global!("rffi.shard.names", |m: Map| -> Result<Array> {
    Ok(Array::new(
        m.iter()
            .map(|(k, _)| k.to_owned())
            .collect::<Result<Vec<_>>>()?,
    ))
});

register_global_packed!("rffi.shard.get", |a: &[AnyView<'_>]| -> Result<Any> {
    let [m, name] = a else {
        return Err(Error::type_error("`rffi.shard.get` expects (map, name)"));
    };
    m.try_as::<Map>()?.get_item(name)
});

/// Referenced by the worker loop and `librffi` so that these registrations are linked.
#[inline(never)]
pub fn link() -> usize {
    builtin::link() + std::hint::black_box(1)
}
