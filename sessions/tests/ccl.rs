//! Collectives through the shared-memory backend, with 2 and 4 workers of both session kinds (3
//! for allreduce):
//! every collective, every dtype and reduction, chunked transfers, and failures (bad arguments on
//! some ranks, a dead worker, no communicator, NCCL without its library) that must be errors,
//! never hangs.

use rffi_core::{Any, Array, DataType, Device, Error};
use rffi_session::ccl::testing::fill_value;
use rffi_session::{DRef, ProcessSession, Session, ThreadSession, WorkerProgram};
use std::time::{Duration, Instant};

fn worker_program() -> WorkerProgram {
    WorkerProgram {
        program: env!("CARGO_BIN_EXE_rffi-worker").into(),
        args: vec![],
    }
}

/// Both kinds with `n` workers, joined by a shared-memory communicator whose tiny slots make
/// every transfer below take several chunks.
fn sessions(n: usize) -> Vec<(String, Session)> {
    let mut v = vec![
        (format!("thread x{n}"), ThreadSession::new(n).unwrap()),
        (
            format!("process x{n}"),
            ProcessSession::with_program(n, &worker_program()).unwrap(),
        ),
    ];
    for (_, s) in &mut v {
        s.init_ccl_shm(64).unwrap();
    }
    v
}

fn tensor(s: &Session, n: usize, dt: DataType) -> DRef {
    s.empty(&[n as i64], dt, Device::cpu()).unwrap()
}

fn fill(s: &Session, t: &DRef, seed: i64) {
    s.get_global_func("testing.ccl_fill")
        .unwrap()
        .call(&[t.into(), seed.into()])
        .unwrap();
}

fn values(s: &Session, t: &DRef, rank: usize) -> Vec<f64> {
    let v = s.get_global_func("testing.ccl_values").unwrap();
    let a: Array = v
        .call(&[t.into()])
        .unwrap()
        .fetch(rank)
        .unwrap()
        .try_as()
        .unwrap();
    a.iter().map(|x| x.try_as::<f64>().unwrap()).collect()
}

/// Rank `r`'s source values.
fn src(r: usize, n: usize, seed: i64) -> Vec<f64> {
    (0..n).map(|i| fill_value(r, i, seed)).collect()
}

fn reduce(op: &str, xs: &[f64], dt: DataType) -> f64 {
    let int = dt.code() != 2 && dt.code() != 4;
    let wrap = |x: f64| {
        if dt.bits() == 8 {
            x.rem_euclid(256.0)
        } else {
            x
        }
    };
    match op {
        "sum" => wrap(xs.iter().sum()),
        "prod" => wrap(xs.iter().product()),
        "min" => xs.iter().cloned().fold(f64::INFINITY, f64::min),
        "max" => xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        _ if int => (xs.iter().sum::<f64>() / xs.len() as f64).floor(),
        _ => xs.iter().sum::<f64>() / xs.len() as f64,
    }
}

/// `x` as a float tensor of `dt` stores it (an average over 3 ranks is not exact); floats of 16
/// bits are computed in float32 and rounded once.
fn stored(x: f64, dt: DataType) -> f64 {
    match (dt.code(), dt.bits()) {
        (2, 32) => x as f32 as f64,
        (2, 16) => half::f16::from_f32(x as f32).to_f64(),
        (4, 16) => half::bf16::from_f32(x as f32).to_f64(),
        _ => x,
    }
}

fn expected_reduce(w: usize, n: usize, seed: i64, op: &str, dt: DataType) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let xs: Vec<f64> = (0..w).map(|r| fill_value(r, i, seed)).collect();
            stored(reduce(op, &xs, dt), dt)
        })
        .collect()
}

const DTYPES: [DataType; 6] = [
    DataType::float(32),
    DataType::float(16),
    DataType::bfloat16(),
    DataType::int(32),
    DataType::int(64),
    DataType::uint(8),
];
const OPS: [&str; 5] = ["sum", "prod", "min", "max", "avg"];

#[test]
fn allreduce_every_dtype_and_op() {
    // 3 and 4 ranks reduce by parts (each rank one part of every chunk); 37 elements split
    // unevenly among them.
    for w in [2, 3, 4] {
        for (kind, s) in sessions(w) {
            let n = 37; // several chunks of a 64-byte slot, and a ragged last one
            for (k, dt) in DTYPES.into_iter().enumerate() {
                let (a, b) = (tensor(&s, n, dt), tensor(&s, n, dt));
                fill(&s, &a, k as i64);
                for op in OPS {
                    s.allreduce(&a, &b, op).unwrap();
                    let want = expected_reduce(w, n, k as i64, op, dt);
                    for r in 0..w {
                        assert_eq!(values(&s, &b, r), want, "{kind} {dt} {op} rank {r}");
                    }
                }
                // In place: src and dst the same tensor.
                s.allreduce(&a, &a, "max").unwrap();
                assert_eq!(
                    values(&s, &a, w - 1),
                    expected_reduce(w, n, k as i64, "max", dt)
                );
            }
            s.sync().unwrap();
        }
    }
}

#[test]
fn gathers_scatters_and_broadcasts() {
    let f32_ = DataType::float(32);
    for w in [2, 4] {
        for (kind, s) in sessions(w) {
            let n = 21;
            let a = tensor(&s, n, f32_);
            let big = tensor(&s, n * w, f32_);
            let out = tensor(&s, n, f32_);
            fill(&s, &a, 1);
            fill(&s, &big, 2);
            let concat: Vec<f64> = (0..w).flat_map(|r| src(r, n, 1)).collect();

            s.allgather(&a, &big).unwrap();
            for r in 0..w {
                assert_eq!(values(&s, &big, r), concat, "{kind} allgather rank {r}");
            }

            fill(&s, &big, 2);
            s.reduce_scatter(&big, &out, "sum").unwrap();
            let full = expected_reduce(w, n * w, 2, "sum", f32_);
            for r in 0..w {
                assert_eq!(
                    values(&s, &out, r),
                    full[r * n..(r + 1) * n],
                    "{kind} reduce_scatter {r}"
                );
            }

            s.broadcast_from_worker_0(&a, &out).unwrap();
            for r in 0..w {
                assert_eq!(
                    values(&s, &out, r),
                    src(0, n, 1),
                    "{kind} broadcast rank {r}"
                );
            }

            fill(&s, &big, 3);
            s.scatter_from_worker_0(&big, &out).unwrap();
            let root = src(0, n * w, 3);
            for r in 0..w {
                assert_eq!(
                    values(&s, &out, r),
                    root[r * n..(r + 1) * n],
                    "{kind} scatter {r}"
                );
            }

            fill(&s, &big, 4);
            s.gather_to_worker_0(&a, &big).unwrap();
            assert_eq!(values(&s, &big, 0), concat, "{kind} gather");
            // The other workers' dst is left alone.
            assert_eq!(
                values(&s, &big, 1),
                src(1, n * w, 4),
                "{kind} gather leaves others"
            );
            s.sync().unwrap();
        }
    }
}

#[test]
fn send_and_recv_pair_workers_up() {
    let i64_ = DataType::int(64);
    for w in [2, 4] {
        for (kind, s) in sessions(w) {
            let n = 19; // 152 bytes: three chunks of 64
            let (a, b) = (tensor(&s, n, i64_), tensor(&s, n, i64_));
            fill(&s, &a, 5);
            fill(&s, &b, 6);
            // Even workers send to the next odd one, then the odd ones answer.
            let to: Vec<i64> = (0..w as i64)
                .map(|r| if r % 2 == 0 { r + 1 } else { -1 })
                .collect();
            let from: Vec<i64> = (0..w as i64)
                .map(|r| if r % 2 == 1 { r - 1 } else { -1 })
                .collect();
            s.send(&a, &to).unwrap();
            s.recv(&b, &from).unwrap();
            s.send(&b, &from).unwrap();
            s.recv(&b, &to).unwrap();
            for r in 0..w {
                // Odd workers got their even neighbour's `a`, and sent it straight back.
                let want = src(r - r % 2, n, 5);
                assert_eq!(values(&s, &b, r), want, "{kind} rank {r}");
            }
            s.sync().unwrap();
        }
    }
}

fn sync_err(s: &Session) -> Error {
    match s.sync() {
        Ok(()) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[test]
fn bad_arguments_fail_on_every_rank_and_the_communicator_stays_usable() {
    let f32_ = DataType::float(32);
    for (kind, s) in sessions(2) {
        let (a, b) = (tensor(&s, 4, f32_), tensor(&s, 5, f32_));
        fill(&s, &a, 0);
        s.allreduce(&a, &b, "sum").unwrap();
        let e = sync_err(&s);
        assert_eq!(e.kind(), "ValueError", "{kind}: {}", e.message());
        assert!(
            e.message().contains("same shape"),
            "{kind}: {}",
            e.message()
        );

        let i32_ = tensor(&s, 4, DataType::int(32));
        s.allreduce(&a, &i32_, "sum").unwrap();
        assert!(sync_err(&s).message().contains("same dtype"), "{kind}");

        s.allreduce(&a, &a, "mean").unwrap();
        let e = sync_err(&s);
        assert!(
            e.message().contains("unknown reduction \"mean\""),
            "{kind}: {}",
            e.message()
        );

        // Only worker 0 fails (gather needs its dst); worker 1 hears of it instead of waiting.
        let none = s
            .get_global_func("testing.echo")
            .unwrap()
            .call(&[Any::none()])
            .unwrap();
        s.gather_to_worker_0(&a, &none).unwrap();
        let t0 = Instant::now();
        let e = sync_err(&s);
        assert!(e.message().contains("got None"), "{kind}: {}", e.message());
        assert!(t0.elapsed() < Duration::from_secs(5));

        // A receive into a tensor of the wrong size refuses the data; both ends fail.
        s.send(&a, &[1, -1]).unwrap();
        s.recv(&b, &[-1, 0]).unwrap();
        let e = sync_err(&s);
        assert!(e.message().contains("bytes"), "{kind}: {}", e.message());

        // Still usable.
        s.allreduce(&a, &a, "sum").unwrap();
        let want: Vec<f64> = (0..4)
            .map(|i| fill_value(0, i, 0) + fill_value(1, i, 0))
            .collect();
        assert_eq!(values(&s, &a, 1), want, "{kind}");
    }
}

#[test]
fn two_workers_sending_to_each_other_is_an_error_not_a_hang() {
    let s = ThreadSession::new(2).unwrap();
    s.init_ccl("shm", &[]).unwrap();
    let a = tensor(&s, 8, DataType::float(32));
    s.send(&a, &[1, 0]).unwrap();
    let e = sync_err(&s);
    assert!(
        e.message().contains("both send to each other"),
        "{}",
        e.message()
    );
    // The communicator is broken after that; a new one works.
    s.allreduce(&a, &a, "sum").unwrap();
    assert!(sync_err(&s).message().contains("init_ccl again"));
    s.init_ccl("shm", &[]).unwrap();
    s.allreduce(&a, &a, "sum").unwrap();
    s.sync().unwrap();
}

#[test]
fn a_peer_naming_its_own_worker_or_none_is_refused_before_any_worker_sees_it() {
    for (kind, s) in sessions(2) {
        let a = tensor(&s, 8, DataType::float(32));
        for (peers, bad) in [
            (&[0, 0][..], "worker 0 cannot exchange with worker 0"),
            (&[1, 5][..], "worker 1 cannot exchange with worker 5"),
            (&[1][..], "one entry per worker"),
        ] {
            let e = s.send(&a, peers).unwrap_err();
            assert_eq!(e.kind(), "ValueError", "{kind}");
            assert!(e.message().contains(bad), "{kind}: {}", e.message());
            assert!(
                s.recv(&a, peers).unwrap_err().message().contains(bad),
                "{kind}"
            );
        }
        // Nothing reached the workers: the communicator is still usable.
        s.allreduce(&a, &a, "sum").unwrap();
        s.sync().unwrap();
    }
}

#[test]
fn a_worker_whose_peer_names_itself_or_none_fails_every_rank_at_once() {
    // The workers' own `ccl.send`, called past the session's check (as a binding could):
    // worker 0 names itself while worker 1 sends to it, then worker 1 names a worker the session
    // does not have while worker 0 sends to it.
    for (kind, s) in sessions(2) {
        let a = tensor(&s, 8, DataType::float(32));
        let send = s.get_global_func("ccl.send").unwrap();
        for (peers, bad) in [
            ([0, 0], "worker 0 cannot exchange with worker 0"),
            ([1, 5], "worker 1 cannot exchange with worker 5"),
        ] {
            let t0 = Instant::now();
            let list = Array::new(peers.iter().map(|p| Any::from(*p as i64)).collect());
            send.call(&[Any::from(&a), Any::from(list)]).unwrap();
            let e = sync_err(&s);
            assert!(e.message().contains(bad), "{kind}: {}", e.message());
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{kind}: {:?}",
                t0.elapsed()
            );
            s.init_ccl_shm(64).unwrap();
        }
        s.allreduce(&a, &a, "sum").unwrap();
        s.sync().unwrap();
    }
}

#[test]
fn a_dead_worker_is_an_error_not_a_hang() {
    let s = ProcessSession::with_program(2, &worker_program()).unwrap();
    s.init_ccl("shm", &[]).unwrap();
    let a = tensor(&s, 8, DataType::float(32));
    let pid = s.worker_pids()[0];
    // SAFETY: killing our own worker process.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    std::thread::sleep(Duration::from_millis(50));
    let t0 = Instant::now();
    let r = s.allreduce(&a, &a, "sum").and_then(|()| s.sync());
    let e = r.expect_err("a collective with a dead peer must fail");
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
    assert!(e.message().contains("worker 1"), "{}", e.message());
    // Worker 0 got the call before the controller found worker 1 gone: it saw its peer die in
    // the barrier and returned, so the session stops at once instead of waiting on it.
    let t1 = Instant::now();
    drop(s);
    assert!(
        t1.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        t1.elapsed()
    );
}

#[test]
fn collectives_need_a_communicator_and_nccl_its_library() {
    let s = ThreadSession::new(2).unwrap();
    let a = tensor(&s, 4, DataType::float(32));
    s.allreduce(&a, &a, "sum").unwrap();
    let e = sync_err(&s);
    assert!(e.message().contains("init_ccl"), "{}", e.message());

    let e = s.init_ccl("gloo", &[]).unwrap_err();
    assert!(e.message().contains("unknown backend"), "{}", e.message());

    if rffi_session::ccl::nccl::check_libraries("probe").is_ok() {
        eprintln!("skipped the missing-library check: CUDA and NCCL are installed here");
        return;
    }
    let e = s.init_ccl("nccl", &[0, 1]).unwrap_err();
    assert_eq!(e.kind(), "RuntimeError");
    assert!(
        e.message().contains("could not be loaded") && e.message().contains(".so"),
        "{}",
        e.message()
    );
    // The session is untouched by the failed init.
    s.init_ccl("shm", &[]).unwrap();
    s.allreduce(&a, &a, "sum").unwrap();
    s.sync().unwrap();
}
