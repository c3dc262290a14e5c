//! Loading through a communicator: worker 0 opens the weights, runs every parameter's plan for
//! all workers (`[num_workers, ...]`) and sends worker i its slice with a scatter from worker 0
//! (a replicated parameter with a broadcast), so the other workers never open the file. With
//! NCCL worker 0 first copies each parameter's shards to its GPU, and every worker's parameters
//! are tensors on its GPU.
//!
//! Worker 0 leads every step with a message the others receive by broadcast: the next
//! parameter's name, shape and dtype, its own failure, or the end. Every rank therefore makes
//! the same collective calls in the same order, and a failure on worker 0 reaches the others as
//! the same error instead of leaving them waiting. A failure on another worker (its tensor
//! cannot be allocated) reaches every rank through the collective itself. Tensors move as bytes:
//! a scatter or broadcast computes nothing, so every safetensors dtype goes through.

use super::{begin, check_world, shard_param, ShardInfo, Weights};
use crate::ccl::{self, with_comm, Comm, Kind};
use rffi_core::{DataType, Error, Result, Tensor};
use serde_json::{json, Value};

const WHAT: &str = "rffi.shard.load_worker";

/// Runs a broadcast or scatter from worker 0 of `dst`'s bytes (`src` on worker 0 only).
fn move_bytes(c: &mut Comm, kind: Kind, src: Option<&Tensor>, dst: Result<&Tensor>) -> Result<()> {
    let (rank, world) = rank_world()?;
    let plan = dst.and_then(|d| ccl::byte_plan(kind, src, d, rank, world, c.device()));
    c.run(kind.name(), plan)
}

fn rank_world() -> Result<(usize, usize)> {
    crate::worker::current()
        .ok_or_else(|| Error::runtime_error(format!("`{WHAT}` runs on session workers only")))
}

/// Worker 0's host tensor on every worker, as a host tensor: worker 0 passes its `host` (`lead`),
/// the others a host tensor of the same shape and dtype. It travels through the communicator's
/// device (for NCCL: copied to the GPU, broadcast, copied back).
fn relay(c: &mut Comm, lead: bool, host: Result<Tensor>) -> Result<Tensor> {
    let dev = host.and_then(|h| {
        if lead {
            c.upload(&h)
        } else {
            c.empty(h.shape(), h.dtype())
        }
    });
    let src = dev.as_ref().ok().filter(|_| lead);
    move_bytes(c, Kind::Broadcast, src, dev.as_ref().map_err(Error::clone))?;
    c.download(&dev?)
}

/// Worker 0's message `msg` on every worker.
fn exchange(c: &mut Comm, msg: Option<Value>) -> Result<Value> {
    let text = msg.map(|m| m.to_string());
    let lead = text.is_some();
    let len = Tensor::from_slice(&[text.as_ref().map_or(0, |t| t.len() as i64)], &[1]);
    let n = relay(c, lead, len)?.to_vec::<i64>()?[0];
    let bytes = match &text {
        Some(t) => Tensor::from_slice(t.as_bytes(), &[n]),
        None => Tensor::alloc_cpu(&[n], DataType::uint(8)),
    };
    let bytes = relay(c, lead, bytes)?.to_vec::<u8>()?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::runtime_error(format!("{WHAT}: a malformed message from worker 0: {e}"))
    })
}

/// Worker 0: sends `e` to the others and returns it.
fn fail(c: &mut Comm, e: Error) -> Error {
    // A failing exchange means the others already fail through the communicator.
    let _ = exchange(c, Some(json!({"error": e.kind(), "message": e.message()})));
    e
}

/// Worker 0's `full` parameter on the communicator's device, and where its own part goes: a
/// new tensor of `shape` for a sharded parameter, the same tensor for a replicated one.
fn stage(c: &Comm, full: &Tensor, sharded: bool, shape: &[i64]) -> Result<(Tensor, Tensor)> {
    let src = c.upload(full)?;
    let dst = if sharded {
        c.empty(shape, full.dtype())?
    } else {
        src.clone()
    };
    Ok((src, dst))
}

/// Worker 0's side: loads and sends every parameter; keeps its own slices.
fn lead(
    c: &mut Comm,
    weights: &str,
    info: &ShardInfo,
    world: usize,
    progress: bool,
) -> Result<Vec<(String, Tensor)>> {
    let weights = Weights::open(weights).map_err(|e| fail(c, e))?;
    let (names, sizes, mut bar) = begin(&weights, info, progress).map_err(|e| fail(c, e))?;
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let full = shard_param(&weights, info, name, 0..world, world).map_err(|e| fail(c, e))?;
        let t = weights.get(name).expect("a name the weights listed");
        let sharded = info.params.get(*name).and_then(|s| s.last());
        let shape = sharded.map_or(t.shape.clone(), |s| s.out_shape[1..].to_vec());
        // Staged before the others are told, so a failure (no GPU memory) reaches them.
        let (src, mine) = stage(c, &full, sharded.is_some(), &shape).map_err(|e| fail(c, e))?;
        drop(full);
        exchange(
            c,
            Some(json!({
                "param": name,
                "shape": shape,
                "dtype": mine.dtype().to_string(),
                "sharded": sharded.is_some(),
            })),
        )?;
        let kind = if sharded.is_some() {
            Kind::Scatter
        } else {
            Kind::Broadcast
        };
        move_bytes(c, kind, Some(&src), Ok(&mine))?;
        if !src.same_as(&mine) {
            // The staging copy is freed next: the scatter reading it must be done.
            c.synchronize()?;
        }
        out.push((name.to_string(), mine));
        bar.step(i + 1, names.len(), sizes[i]);
    }
    exchange(c, Some(json!({"done": out.len()})))?;
    Ok(out)
}

fn field<'a>(msg: &'a Value, key: &str) -> Result<&'a Value> {
    msg.get(key).ok_or_else(|| {
        Error::runtime_error(format!(
            "{WHAT}: a message from worker 0 without `{key}`: {msg}"
        ))
    })
}

/// The other workers' side: receives every parameter worker 0 sends.
fn follow(c: &mut Comm) -> Result<Vec<(String, Tensor)>> {
    let mut out = Vec::new();
    loop {
        let msg = exchange(c, None)?;
        if msg.get("done").is_some() {
            return Ok(out);
        }
        if let Some(kind) = msg.get("error") {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            return Err(Error::new(&text(kind), text(field(&msg, "message")?)));
        }
        let name = field(&msg, "param")?
            .as_str()
            .unwrap_or_default()
            .to_string();
        let shape: Result<Vec<i64>> = serde_json::from_value(field(&msg, "shape")?.clone())
            .map_err(|e| Error::runtime_error(format!("{WHAT}: shape from worker 0: {e}")));
        let dtype = DataType::parse(field(&msg, "dtype")?.as_str().unwrap_or_default())
            .map_err(|e| Error::runtime_error(format!("{WHAT}: dtype from worker 0: {e}")));
        let kind = match field(&msg, "sharded")?.as_bool() {
            Some(true) => Kind::Scatter,
            _ => Kind::Broadcast,
        };
        // A failure here still joins the collective, which then fails on every worker (shared
        // memory; NCCL cannot tell the others).
        let dst = shape.and_then(|s| c.empty(&s, dtype?));
        move_bytes(c, kind, None, dst.as_ref().map_err(Error::clone))?;
        out.push((name, dst?));
    }
}

/// This worker's parameters, read by worker 0 and sent through the worker's communicator: CPU
/// tensors with shared memory, tensors on the worker's GPU with NCCL (returned once there).
pub(super) fn load(
    weights: &str,
    info: &ShardInfo,
    progress: bool,
) -> Result<Vec<(String, Tensor)>> {
    let (rank, world) = rank_world()?;
    check_world(rank, world)?;
    with_comm(WHAT, |c| {
        let params = if rank == 0 {
            lead(c, weights, info, world, progress)?
        } else {
            follow(c)?
        };
        c.synchronize()?;
        Ok(params)
    })
}

/// Whether this worker has an NCCL communicator (then `Via::Auto` loads through it).
pub(super) fn gpu_comm_up() -> bool {
    with_comm(WHAT, |c| Ok(matches!(c, Comm::Nccl(_)))).unwrap_or(false)
}
