//! The `ccl.*` global functions every worker offers, and `ccl.InitSession` for a controller.
//!
//! Collectives: `ccl.allreduce(src, dst, op)`, `ccl.allgather(src, dst)`,
//! `ccl.reduce_scatter(src, dst, op)`, `ccl.broadcast_from_worker_0(src, dst)`,
//! `ccl.scatter_from_worker_0(src, dst)`, `ccl.gather_to_worker_0(src, dst)` (`src` or `dst` may
//! be None on the workers that do not read or write it). Point to point: `ccl.send(src, peer)` and
//! `ccl.recv(dst, peer)`, where `peer` is a rank, or a list giving each worker's peer (a negative
//! entry: that worker does nothing), so one broadcast call can pair the workers up.

use super::{check_p2p, plan, set_comm, with_comm, Comm, Kind, Op};
use crate::ccl::{nccl::NcclComm, shm::ShmComm};
use rffi_core::{register_global_packed, Any, AnyView, Array, Error, Result, Tensor};

fn rank_world(what: &str) -> Result<(usize, usize)> {
    crate::worker::current().ok_or_else(|| {
        Error::runtime_error(format!(
            "`{what}` runs on session workers (this thread is not one)"
        ))
    })
}

fn nargs(a: &[AnyView<'_>], n: usize, what: &str) -> Result<()> {
    if a.len() != n {
        return Err(Error::type_error(format!(
            "`{what}` expects {n} arguments but {} were given",
            a.len()
        )));
    }
    Ok(())
}

/// A tensor argument, or None.
fn tensor_arg(a: &[AnyView<'_>], i: usize, name: &str, what: &str) -> Result<Option<Tensor>> {
    let v = &a[i];
    if v.is_none() {
        return Ok(None);
    }
    v.try_as::<Tensor>().map(Some).map_err(|_| {
        Error::type_error(format!(
            "{what} argument #{i} ({name}): expected a tensor or None but got {}",
            v.type_name()
        ))
    })
}

fn collective(what: &str, a: &[AnyView<'_>], with_op: bool) -> Result<Any> {
    let (rank, world) = rank_world(what)?;
    with_comm(what, |c| {
        let args = (|| -> Result<(Kind, Option<Tensor>, Option<Tensor>)> {
            nargs(a, if with_op { 3 } else { 2 }, what)?;
            let op = if with_op {
                let s: String = a[2].try_as().map_err(|_| {
                    Error::type_error(format!(
                        "{what} argument #2 (op): expected a str but got {}",
                        a[2].type_name()
                    ))
                })?;
                Op::parse(&s, &format!("{what} argument #2 (op)"))?
            } else {
                Op::Sum
            };
            let kind = match what {
                "ccl.allreduce" => Kind::AllReduce(op),
                "ccl.allgather" => Kind::AllGather,
                "ccl.reduce_scatter" => Kind::ReduceScatter(op),
                "ccl.broadcast_from_worker_0" => Kind::Broadcast,
                "ccl.scatter_from_worker_0" => Kind::Scatter,
                _ => Kind::Gather,
            };
            Ok((
                kind,
                tensor_arg(a, 0, "src", what)?,
                tensor_arg(a, 1, "dst", what)?,
            ))
        })();
        let plan = match &args {
            Ok((kind, s, d)) => plan(*kind, s.as_ref(), d.as_ref(), rank, world, c.device()),
            Err(e) => Err(e.clone()),
        };
        c.run(what, plan)
    })?;
    Ok(Any::none())
}

register_global_packed!("ccl.allreduce", |a: &[AnyView<'_>]| collective(
    "ccl.allreduce",
    a,
    true
));
register_global_packed!("ccl.allgather", |a: &[AnyView<'_>]| collective(
    "ccl.allgather",
    a,
    false
));
register_global_packed!("ccl.reduce_scatter", |a: &[AnyView<'_>]| collective(
    "ccl.reduce_scatter",
    a,
    true
));
register_global_packed!("ccl.broadcast_from_worker_0", |a: &[AnyView<'_>]| {
    collective("ccl.broadcast_from_worker_0", a, false)
});
register_global_packed!("ccl.scatter_from_worker_0", |a: &[AnyView<'_>]| {
    collective("ccl.scatter_from_worker_0", a, false)
});
register_global_packed!("ccl.gather_to_worker_0", |a: &[AnyView<'_>]| {
    collective("ccl.gather_to_worker_0", a, false)
});

/// The peer argument: one int for every worker, or a list with one entry per worker. Its faults
/// are the same on every worker.
enum Peers {
    One(i64),
    PerWorker(Array),
}

fn peers_arg(v: &AnyView<'_>, world: usize, what: &str) -> Result<Peers> {
    if let Ok(p) = v.try_as::<i64>() {
        return Ok(Peers::One(p));
    }
    let Ok(list) = v.try_as::<Array>() else {
        return Err(Error::type_error(format!(
            "{what} argument #1 (peer): expected an int or a list of ints but got {}",
            v.type_name()
        )));
    };
    check_peer_count(what, list.len(), world)?;
    Ok(Peers::PerWorker(list))
}

/// A ValueError unless a peer list has one entry per worker.
pub(super) fn check_peer_count(what: &str, n: usize, world: usize) -> Result<()> {
    if n != world {
        return Err(Error::value_error(format!(
            "{what} argument #1 (peer): a list of peers needs one entry per worker ({world}), \
             got {n}"
        )));
    }
    Ok(())
}

/// Entry `i` of a peer list, an int (else a TypeError naming the entry).
fn peer_entry(list: &Array, i: usize, what: &str) -> Result<i64> {
    list.get(i)
        .ok_or_else(|| Error::index_error("peer list"))?
        .try_as::<i64>()
        .map_err(|e| {
            Error::type_error(format!(
                "{what} argument #1 (peer): entry {i}: {}",
                e.message()
            ))
        })
}

/// Worker `rank`'s peer `p`: `None` when negative (nothing to do), else another worker of the
/// session (a ValueError otherwise).
pub(super) fn check_peer(what: &str, rank: usize, p: i64, world: usize) -> Result<Option<usize>> {
    if p < 0 {
        return Ok(None);
    }
    if p as usize >= world || p as usize == rank {
        return Err(Error::value_error(format!(
            "{what} argument #1 (peer): worker {rank} cannot exchange with worker {p} \
             (the session has {world} workers)"
        )));
    }
    Ok(Some(p as usize))
}

/// This worker's peer (`None`: nothing to do). Its faults may be this worker's alone.
fn peer_of(peers: &Peers, rank: usize, world: usize, what: &str) -> Result<Option<usize>> {
    let p = match peers {
        Peers::One(p) => *p,
        Peers::PerWorker(list) => peer_entry(list, rank, what)?,
    };
    check_peer(what, rank, p, world)
}

fn p2p(what: &str, a: &[AnyView<'_>], send: bool) -> Result<Any> {
    let (rank, world) = rank_world(what)?;
    nargs(a, 2, what)?;
    let peers = peers_arg(&a[1], world, what)?;
    let peer = match peer_of(&peers, rank, world, what) {
        Ok(Some(peer)) => peer,
        Ok(None) => return Ok(Any::none()),
        Err(e) => {
            // Other workers may be waiting in a transfer with this one, and it cannot tell
            // which: the communicator is given up, so they fail at once (not at
            // RFFI_CCL_TIMEOUT_S).
            let _ = with_comm(what, |c: &mut Comm| {
                c.give_up(&format!("worker {rank} refused {what}: {}", e.message()));
                Ok(())
            });
            return Err(e);
        }
    };
    with_comm(what, |c: &mut Comm| {
        let t = tensor_arg(a, 0, if send { "src" } else { "dst" }, what).and_then(|t| {
            let t = t.ok_or_else(|| {
                Error::type_error(format!("{what} argument #0: expected a tensor, got None"))
            })?;
            check_p2p(&t, what, c.device(), !send)?;
            Ok(t)
        });
        if send {
            c.send(t.as_ref().map_err(Error::clone), peer)
        } else {
            c.recv(t.as_ref().map_err(Error::clone), peer)
        }
    })?;
    Ok(Any::none())
}

register_global_packed!("ccl.send", |a: &[AnyView<'_>]| p2p("ccl.send", a, true));
register_global_packed!("ccl.recv", |a: &[AnyView<'_>]| p2p("ccl.recv", a, false));

// `ccl.init_shm(file)`: joins the shared-memory communicator the controller made.
register_global_packed!("ccl.init_shm", |a: &[AnyView<'_>]| {
    let (rank, world) = rank_world("ccl.init_shm")?;
    nargs(a, 1, "ccl.init_shm")?;
    let name: String = a[0].try_as()?;
    set_comm(None);
    set_comm(Some(Comm::Shm(ShmComm::join(&name, rank, world)?)));
    Ok(Any::none())
});

// `ccl.init_nccl(unique_id, device_ids)`: joins the NCCL communicator of `unique_id` on GPU
// `device_ids[rank]` (empty: the GPU the session put this worker on, else GPU `rank`).
register_global_packed!("ccl.init_nccl", |a: &[AnyView<'_>]| {
    let what = "ccl.init_nccl";
    let (rank, world) = rank_world(what)?;
    nargs(a, 2, what)?;
    let id: Vec<u8> = a[0].try_as()?;
    let ids: Array = a[1].try_as()?;
    let device = if ids.is_empty() {
        super::worker_device().map_or(rank as i32, |d| d.index())
    } else {
        if ids.len() != world {
            return Err(Error::value_error(format!(
                "{what} argument #1 (device_ids): {} ids for {world} workers",
                ids.len()
            )));
        }
        ids.get(rank).expect("checked").try_as::<i64>()? as i32
    };
    set_comm(None);
    set_comm(Some(Comm::Nccl(NcclComm::join(&id, rank, world, device)?)));
    Ok(Any::none())
});

// `ccl.place_worker(device_type, device_ids)`: the device this worker works on (worker i on
// `device_ids[i]`); for CUDA, binds the GPU's primary context to the worker's thread.
register_global_packed!("ccl.place_worker", |a: &[AnyView<'_>]| {
    let what = "ccl.place_worker";
    let (rank, world) = rank_world(what)?;
    nargs(a, 2, what)?;
    let ty: String = a[0].try_as()?;
    let ids: Array = a[1].try_as()?;
    if ids.len() != world {
        return Err(Error::value_error(format!(
            "{what}: {} device ids for {world} workers",
            ids.len()
        )));
    }
    let index = ids.get(rank).expect("checked").try_as::<i64>()? as i32;
    let device = rffi_core::Device::parse(&format!("{ty}:{index}"))
        .map_err(|e| Error::value_error(format!("{what}: {e}")))?;
    super::place_worker(device)?;
    Ok(Any::none())
});

register_global_packed!("ccl.unique_id", |a: &[AnyView<'_>]| {
    nargs(a, 0, "ccl.unique_id")?;
    Ok(Any::from(super::nccl::unique_id()?.as_slice()))
});

// `ccl.InitSession(session, backend, device_ids)`: `Session::init_ccl` for bindings.
register_global_packed!("ccl.InitSession", |a: &[AnyView<'_>]| {
    nargs(a, 3, "ccl.InitSession")?;
    let backend: String = a[1].try_as()?;
    let ids: Array = a[2].try_as()?;
    let ids = ids
        .iter()
        .map(|v| v.try_as::<i64>().map(|i| i as i32))
        .collect::<Result<Vec<_>>>()?;
    crate::ffi::with_session(&a[0], "ccl.InitSession", |s| s.init_ccl(&backend, &ids))??;
    Ok(Any::none())
});

// `ccl.SessionSend(session, src, peers)` / `ccl.SessionRecv(session, dst, peers)`:
// `Session::send` / `Session::recv` for bindings, the peers checked before any worker sees them;
// one int stands for that peer on every worker.
fn session_p2p(what: &str, a: &[AnyView<'_>], send: bool) -> Result<Any> {
    nargs(a, 3, what)?;
    // Named as the user's call (`sess.send(src, peers)`) names them.
    let name = if send { "ccl.send" } else { "ccl.recv" };
    let t = crate::dref::DRef::from_arg(&a[1], &format!("{name} argument #0"))?;
    crate::ffi::with_session(&a[0], what, |s| {
        let world = s.num_workers();
        let peers = match peers_arg(&a[2], world, name)? {
            Peers::One(p) => vec![p; world],
            Peers::PerWorker(list) => (0..world)
                .map(|i| peer_entry(&list, i, name))
                .collect::<Result<Vec<_>>>()?,
        };
        if send {
            s.send(&t, &peers)
        } else {
            s.recv(&t, &peers)
        }
    })??;
    Ok(Any::none())
}

register_global_packed!("ccl.SessionSend", |a: &[AnyView<'_>]| session_p2p(
    "ccl.SessionSend",
    a,
    true
));
register_global_packed!("ccl.SessionRecv", |a: &[AnyView<'_>]| session_p2p(
    "ccl.SessionRecv",
    a,
    false
));

/// Referenced from code every worker and `librffi` run, so these registrations are linked in.
#[inline(never)]
pub fn link() -> usize {
    std::hint::black_box(0)
}
