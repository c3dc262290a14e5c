//! Sessions as global functions (`session.*`) and objects (`session.Session`, `session.DRef`):
//! how C, Python and plugins reach them without C entry points of their own.

use crate::dref::{DFunction, DModule, DRef};
use crate::process::WorkerProgram;
use crate::protocol::PROTOCOL_VERSION;
use crate::session::{ProcessSession, Session, SocketSession, ThreadSession};
use crate::transport::SocketLink;
use rffi_core::abi::*;
use rffi_core::{
    register_global, register_global_packed, Any, AnyView, Array, DataType, Device, Error,
    ObjectRef, Result, Shape, Tensor,
};
use std::ffi::c_void;
use std::sync::OnceLock;
use std::time::Duration;

fn session_type_index() -> i32 {
    static INDEX: OnceLock<i32> = OnceLock::new();
    *INDEX.get_or_init(|| {
        rffi_core::type_registry::get_or_alloc_type_index("session.Session")
            .expect("registering the session.Session type")
    })
}

unsafe extern "C" fn drop_session(p: *mut c_void) {
    // SAFETY: `p` came from `Box::into_raw` in `session_object`; the deleter runs once.
    drop(unsafe { Box::from_raw(p.cast::<Session>()) });
}

fn session_object(s: Session) -> ObjectRef {
    let raw = Box::into_raw(Box::new(s)).cast::<c_void>();
    // SAFETY: `drop_session` frees exactly this box; a Session may be dropped on any thread.
    unsafe { ObjectRef::new_opaque(session_type_index(), raw, Some(drop_session)) }
}

/// Runs `f` on the session an argument holds.
pub(crate) fn with_session<T>(
    v: &AnyView<'_>,
    what: &str,
    f: impl FnOnce(&Session) -> T,
) -> Result<T> {
    let obj = v
        .as_object()
        .filter(|o| o.type_index() == session_type_index())
        .ok_or_else(|| {
            Error::type_error(format!(
                "{what} argument #0: expected a session.Session but got {}",
                v.type_name()
            ))
        })?;
    // SAFETY: objects of this type are made by `session_object`, whose handle is a Session that
    // lives as long as the object we borrow.
    let s = unsafe { &*obj.opaque_handle().cast::<Session>() };
    Ok(f(s))
}

fn args<'a, const N: usize>(args: &'a [AnyView<'a>], what: &str) -> Result<&'a [AnyView<'a>; N]> {
    args.try_into().map_err(|_| {
        Error::type_error(format!(
            "`{what}` expects {N} arguments but {} were given",
            args.len()
        ))
    })
}

fn timeout(secs: f64) -> Option<Duration> {
    (secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)))
}

fn count(n: i64) -> Result<usize> {
    usize::try_from(n)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| Error::value_error(format!("num_workers must be at least 1, got {n}")))
}

register_global!("session.ThreadSession", |n: i64| -> Result<ObjectRef> {
    Ok(session_object(ThreadSession::new(count(n)?)?))
});

// `program`: the command that starts a worker process (empty: the native rffi-worker).
register_global!("session.ProcessSession", |n: i64,
                                            program: Array|
 -> Result<ObjectRef> {
    let n = count(n)?;
    let words = program
        .iter()
        .map(|w| w.try_as::<String>())
        .collect::<Result<Vec<_>>>()?;
    let program = match words.split_first() {
        None => WorkerProgram::native()?,
        Some((p, rest)) => WorkerProgram {
            program: p.into(),
            args: rest.to_vec(),
        },
    };
    Ok(session_object(ProcessSession::with_program(n, &program)?))
});

// `session.SocketSession(fds, descriptions)`: workers already serving on connected stream
// sockets (a RaySession's actors); the session owns the descriptors from here on, also when this
// fails.
register_global!("session.SocketSession", |fds: Array,
                                           descriptions: Array|
 -> Result<ObjectRef> {
    let fds = fds
        .iter()
        .map(|f| f.try_as::<i64>())
        .collect::<Result<Vec<_>>>()?;
    let words = descriptions
        .iter()
        .map(|w| w.try_as::<String>())
        .collect::<Result<Vec<_>>>()?;
    if words.len() != fds.len() {
        return Err(Error::value_error(format!(
            "session.SocketSession: {} descriptions for {} sockets",
            words.len(),
            fds.len()
        )));
    }
    // Every descriptor is taken (and closed on an error) before any is judged.
    let owned: Vec<Result<std::os::fd::OwnedFd>> = fds.into_iter().map(socket_fd).collect();
    let workers = owned
        .into_iter()
        .zip(words)
        .map(|(fd, what)| Ok((fd?, what)))
        .collect::<Result<Vec<_>>>()?;
    Ok(session_object(SocketSession::new(workers)?))
});

register_global!("session.ProtocolVersion", || -> i64 {
    PROTOCOL_VERSION as i64
});

register_global_packed!("session.NumWorkers", |a: &[AnyView<'_>]| {
    let [s] = args(a, "session.NumWorkers")?;
    with_session(s, "session.NumWorkers", |s| {
        Any::from(s.num_workers() as i64)
    })
});

register_global_packed!("session.GetGlobalFunc", |a: &[AnyView<'_>]| {
    let [s, name] = args(a, "session.GetGlobalFunc")?;
    let name: String = name.try_as()?;
    with_session(s, "session.GetGlobalFunc", |s| {
        Ok::<_, Error>(Any::from(&s.get_global_func(&name)?))
    })?
});

register_global_packed!("session.LoadModule", |a: &[AnyView<'_>]| {
    let [s, path] = args(a, "session.LoadModule")?;
    let path: String = path.try_as()?;
    with_session(s, "session.LoadModule", |s| {
        Ok::<_, Error>(Any::from(&s.load_module(&path)?))
    })?
});

register_global!("session.ModuleGetFunction", |m: ObjectRef,
                                               name: String|
 -> Result<Any> {
    let d = DRef::from_object(&m).ok_or_else(|| {
        Error::type_error("session.ModuleGetFunction argument #0: expected a DModule")
    })?;
    Ok(Any::from(&DModule(d).get_function(&name)?))
});

// `session.Call(dfunction, *args)`: the session is the function's own.
register_global_packed!("session.Call", |a: &[AnyView<'_>]| {
    let Some((f, rest)) = a.split_first() else {
        return Err(Error::type_error(
            "`session.Call` expects a DFunction and its arguments",
        ));
    };
    let f = DRef::from_arg(f, "session.Call argument #0")?;
    let ctl = f.controller().clone();
    Ok(Any::from(&crate::session::call(
        &ctl,
        &DFunction(f).0,
        rest,
    )?))
});

fn dims(v: &AnyView<'_>) -> Result<Vec<i64>> {
    if let Ok(s) = v.try_as::<Shape>() {
        return Ok(s.as_slice().to_vec());
    }
    let a: Array = v.try_as().map_err(|_| {
        Error::type_error(format!(
            "session.Empty argument #1: expected a shape but got {}",
            v.type_name()
        ))
    })?;
    a.iter().map(|d| d.try_as::<i64>()).collect()
}

register_global_packed!("session.Empty", |a: &[AnyView<'_>]| {
    let [s, shape, dtype, device] = args(a, "session.Empty")?;
    let shape = dims(shape)?;
    let dtype: DataType = dtype.try_as()?;
    let device: Device = device.try_as()?;
    with_session(s, "session.Empty", |s| {
        Ok::<_, Error>(Any::from(&s.empty(&shape, dtype, device)?))
    })?
});

/// Argument #1 of the worker-0 copies: a host array, which reaches here as a tensor.
fn host_array(v: &AnyView<'_>, what: &str) -> Result<Tensor> {
    v.try_as().map_err(|_| {
        Error::type_error(format!(
            "{what} argument #1: expected a host array (a DLPack CPU tensor) but got {}",
            v.type_name()
        ))
    })
}

register_global_packed!("session.CopyToWorker0", |a: &[AnyView<'_>]| {
    let [s, host, dst] = args(a, "session.CopyToWorker0")?;
    let host = host_array(host, "session.CopyToWorker0")?;
    let dst = DRef::from_arg(dst, "session.CopyToWorker0 argument #2")?;
    with_session(s, "session.CopyToWorker0", |s| {
        s.copy_to_worker_0(&host, &dst)
    })??;
    Ok(Any::none())
});

register_global_packed!("session.CopyFromWorker0", |a: &[AnyView<'_>]| {
    let [s, host, src] = args(a, "session.CopyFromWorker0")?;
    let host = host_array(host, "session.CopyFromWorker0")?;
    let src = DRef::from_arg(src, "session.CopyFromWorker0 argument #2")?;
    with_session(s, "session.CopyFromWorker0", |s| {
        s.copy_from_worker_0(&host, &src)
    })??;
    Ok(Any::none())
});

// `session.Sync(sess, timeout_s, worker_0_only)`: True when done; False after `timeout_s`
// (negative: no limit) with the sync still in progress, so a binding can wait in slices and stay
// interruptible.
register_global_packed!("session.Sync", |a: &[AnyView<'_>]| {
    let [s, t, only0] = args(a, "session.Sync")?;
    let t: f64 = t.try_as()?;
    let only0: bool = only0.try_as()?;
    let done = with_session(s, "session.Sync", |s| {
        s.controller().sync(only0, timeout(t))
    })??;
    Ok(Any::from(done))
});

// `session.Fetch(dref, rank, timeout_s)`: `[True, value]`, or `[False]` when the value has not
// come within `timeout_s` (negative: no limit); calling again goes on waiting for the same fetch.
register_global!("session.Fetch", |d: ObjectRef,
                                   rank: i64,
                                   t: f64|
 -> Result<Array> {
    let d = DRef::from_object(&d)
        .ok_or_else(|| Error::type_error("session.Fetch argument #0: expected a DRef"))?;
    let rank = usize::try_from(rank)
        .map_err(|_| Error::index_error(format!("worker rank {rank} is negative")))?;
    let got = match timeout(t) {
        None => Some(d.fetch(rank)?),
        Some(t) => d.fetch_timeout(rank, t)?,
    };
    Ok(Array::new(match got {
        Some(v) => vec![true.into(), v],
        None => vec![false.into()],
    }))
});

register_global_packed!("session.Shutdown", |a: &[AnyView<'_>]| {
    let [s] = args(a, "session.Shutdown")?;
    with_session(s, "session.Shutdown", Session::shutdown)?;
    Ok(Any::none())
});

register_global_packed!("session.FailedRank", |a: &[AnyView<'_>]| {
    let [s] = args(a, "session.FailedRank")?;
    with_session(s, "session.FailedRank", |s| {
        Any::from(s.failed_rank().map_or(-1, |r| r as i64))
    })
});

register_global_packed!("session.WorkerPids", |a: &[AnyView<'_>]| {
    let [s] = args(a, "session.WorkerPids")?;
    with_session(s, "session.WorkerPids", |s| {
        Any::from(Array::new(
            s.worker_pids()
                .into_iter()
                .map(|p| Any::from(p as i64))
                .collect(),
        ))
    })
});

register_global!("session.DRefRegister", |d: ObjectRef| -> Result<i64> {
    let d = DRef::from_object(&d)
        .ok_or_else(|| Error::type_error("session.DRefRegister argument #0: expected a DRef"))?;
    Ok(d.register() as i64)
});

// The loop of a worker process whose program is not `rffi-worker` (a Python interpreter running
// `rffi.worker`, a Ray actor): serves commands on socket `fd` until shutdown or EOF.
// `[rank, world, fd, protocol, controller pid]`, the worker program's arguments; controller pid 0:
// a worker that is not the controller's child (a Ray actor), which stops at the socket's end.
register_global!("session.ServeWorker", |args: Array| -> Result<()> {
    let n = args
        .iter()
        .map(|a| a.try_as::<i64>())
        .collect::<Result<Vec<_>>>()?;
    let [rank, world, fd, protocol, parent] = n[..] else {
        return Err(Error::type_error(format!(
            "`session.ServeWorker` expects [rank, world, fd, protocol, controller pid], got {} items",
            n.len()
        )));
    };
    let link = worker_link(fd, protocol)?;
    if parent > 0 {
        crate::process::adopt_worker_process(parent, link.raw_fd());
    }
    crate::worker::serve(rank as usize, world as usize, &link).map_err(Error::runtime_error)
});

/// The socket a worker process was started with, checked before use.
pub fn worker_link(fd: i64, protocol: i64) -> Result<SocketLink> {
    if protocol != PROTOCOL_VERSION as i64 {
        return Err(Error::runtime_error(format!(
            "the controller speaks session protocol {protocol} but this worker speaks \
             {PROTOCOL_VERSION}: start workers from the same rffi build"
        )));
    }
    Ok(SocketLink::new(socket_fd(fd)?))
}

/// Takes ownership of `fd` if it is an open socket (anything else is left alone).
fn socket_fd(fd: i64) -> Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let fd = i32::try_from(fd).map_err(|_| Error::value_error(format!("bad fd {fd}")))?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes the struct for a valid fd and fails otherwise.
    let ok = unsafe { libc::fstat(fd, st.as_mut_ptr()) } == 0;
    // SAFETY: initialized when fstat succeeded.
    if !ok || unsafe { st.assume_init() }.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(Error::value_error(format!(
            "fd {fd} is not the socket of a session worker"
        )));
    }
    // SAFETY: the fd is an open socket handed over for the session's sole use.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Referenced by `librffi` so that the registrations above are linked into it (a linker keeps
/// only the parts of a library that something uses).
#[inline(never)]
pub fn link() -> i32 {
    crate::shard::link();
    crate::ccl::link();
    kRFFINone
}
