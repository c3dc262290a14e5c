//! Loading through a communicator: worker 0 opens the weights, runs every parameter's plan for
//! all workers (`[num_workers, ...]`) and sends worker i its slice with a scatter from worker 0
//! (a replicated parameter with a broadcast), so the other workers never open the file.
//!
//! Worker 0 leads every step with a message the others receive by broadcast: the next
//! parameter's name, shape and dtype, its own failure, or the end. Every rank therefore makes
//! the same collective calls in the same order, and a failure on worker 0 reaches the others as
//! the same error instead of leaving them waiting. A failure on another worker (its tensor
//! cannot be allocated) reaches every rank through the collective itself. Tensors move as bytes:
//! a scatter or broadcast computes nothing, so every safetensors dtype goes through.

use super::{begin, check_world, shard_param, ShardInfo, Weights};
use crate::ccl::{self, with_comm, Kind};
use rffi_core::{DataType, Device, Error, Result, Tensor};
use serde_json::{json, Value};

const WHAT: &str = "rffi.shard.load_worker";

/// Runs a broadcast or scatter from worker 0 of `dst`'s bytes (`src` on worker 0 only).
fn move_bytes(kind: Kind, src: Option<&Tensor>, dst: Result<&Tensor>) -> Result<()> {
    let (rank, world) = rank_world()?;
    with_comm(WHAT, |c| {
        let plan = dst.and_then(|d| ccl::byte_plan(kind, src, d, rank, world, c.device()));
        c.run(kind.name(), plan)
    })
}

fn rank_world() -> Result<(usize, usize)> {
    crate::worker::current()
        .ok_or_else(|| Error::runtime_error(format!("`{WHAT}` runs on session workers only")))
}

/// Worker 0's message `msg` on every worker.
fn exchange(msg: Option<Value>) -> Result<Value> {
    let text = msg.map(|m| m.to_string());
    let len = Tensor::from_slice(&[text.as_ref().map_or(0, |t| t.len() as i64)], &[1])?;
    move_bytes(Kind::Broadcast, text.as_ref().map(|_| &len), Ok(&len))?;
    let n = len.to_vec::<i64>()?[0];
    let bytes = match &text {
        Some(t) => Tensor::from_slice(t.as_bytes(), &[n]),
        None => Tensor::empty(&[n], DataType::uint(8), Device::cpu()),
    };
    move_bytes(
        Kind::Broadcast,
        text.as_ref().and(bytes.as_ref().ok()),
        bytes.as_ref().map_err(Error::clone),
    )?;
    let bytes = bytes?.to_vec::<u8>()?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::runtime_error(format!("{WHAT}: a malformed message from worker 0: {e}"))
    })
}

/// Worker 0: sends `e` to the others and returns it.
fn fail(e: Error) -> Error {
    // A failing exchange means the others already fail through the communicator.
    let _ = exchange(Some(json!({"error": e.kind(), "message": e.message()})));
    e
}

/// Worker 0's side: loads and sends every parameter; keeps its own slices.
fn lead(
    weights: &str,
    info: &ShardInfo,
    world: usize,
    progress: bool,
) -> Result<Vec<(String, Tensor)>> {
    let weights = Weights::open(weights).map_err(fail)?;
    let (names, sizes, mut bar) = begin(&weights, info, progress).map_err(fail)?;
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let full = shard_param(&weights, info, name, 0..world, world).map_err(fail)?;
        let t = weights.get(name).expect("a name the weights listed");
        let sharded = info.params.get(*name).and_then(|s| s.last());
        let shape = sharded.map_or(t.shape.clone(), |s| s.out_shape[1..].to_vec());
        exchange(Some(json!({
            "param": name,
            "shape": shape,
            "dtype": full.dtype().to_string(),
            "sharded": sharded.is_some(),
        })))?;
        let mine = if sharded.is_some() {
            let dst = Tensor::empty(&shape, full.dtype(), Device::cpu());
            move_bytes(
                Kind::Scatter,
                Some(&full),
                dst.as_ref().map_err(Error::clone),
            )?;
            dst?
        } else {
            move_bytes(Kind::Broadcast, Some(&full), Ok(&full))?;
            full
        };
        out.push((name.to_string(), mine));
        bar.step(i + 1, names.len(), sizes[i]);
    }
    exchange(Some(json!({"done": out.len()})))?;
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
fn follow() -> Result<Vec<(String, Tensor)>> {
    let mut out = Vec::new();
    loop {
        let msg = exchange(None)?;
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
        // A failure here still joins the collective, which then fails on every worker.
        let dst = shape.and_then(|s| Tensor::empty(&s, dtype?, Device::cpu()));
        move_bytes(kind, None, dst.as_ref().map_err(Error::clone))?;
        out.push((name, dst?));
    }
}

/// This worker's parameters, read by worker 0 and sent through the worker's communicator.
pub(super) fn load(
    weights: &str,
    info: &ShardInfo,
    progress: bool,
) -> Result<Vec<(String, Tensor)>> {
    let (rank, world) = rank_world()?;
    check_world(rank, world)?;
    let device = with_comm(WHAT, |c| Ok(c.device()))?;
    if device != Device::cpu() {
        return Err(Error::runtime_error(format!(
            "{WHAT}: loading through the communicator needs one on CPU tensors \
             (init_ccl(\"shm\")); this one works on {}:{} (loads make CPU tensors)",
            device.type_name(),
            device.index()
        )));
    }
    if rank == 0 {
        lead(weights, info, world, progress)
    } else {
        follow()
    }
}

/// Whether this worker has a communicator on CPU tensors (`init_ccl("shm")`).
pub(super) fn cpu_comm_up() -> bool {
    with_comm(WHAT, |c| Ok(c.device() == Device::cpu())).unwrap_or(false)
}
