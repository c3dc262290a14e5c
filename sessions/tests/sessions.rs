//! Every session kind end to end: calls by name, DRef chaining, tensors, failures of every kind,
//! worker death, shutdown, and register reuse over many calls.

mod common;

use common::{sessions, socket_session, worker_program};
use rffi_core::{Any, DataType, Device, Error, Shape, Tensor};
use rffi_session::{ProcessSession, ThreadSession, WorkerProgram};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The test plugin, built for this profile into this test's target directory.
fn plugin() -> String {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "build",
            "-q",
            "-p",
            "rffi-session-test-plugin",
            "--target-dir",
        ])
        // With an explicit target (`CARGO_BUILD_TARGET`, inherited by this cargo, as in `make
        // sanitize`), the profile directory is `<target-dir>/<triple>/<profile>`.
        .arg(
            dir.ancestors()
                .nth(if std::env::var_os("CARGO_BUILD_TARGET").is_some() {
                    2
                } else {
                    1
                })
                .unwrap(),
        )
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "building the test plugin");
        dir.join("librffi_session_test_plugin.so")
    })
    .display()
    .to_string()
}

/// Whether a process exists (reaped children do not).
fn exists(pid: i32) -> bool {
    // SAFETY: signal 0 only probes the pid.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn err_of<T>(r: Result<T, Error>) -> Error {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[test]
fn calls_by_name_with_every_argument_kind() {
    for (kind, s) in sessions(2) {
        assert_eq!(s.num_workers(), 2);
        let echo = s.get_global_func("testing.echo").unwrap();
        let rank = s.get_global_func("session.worker_rank").unwrap();
        let args: Vec<Any> = vec![
            Any::none(),
            true.into(),
            7i64.into(),
            2.5f64.into(),
            "text".into(),
            b"\x00\x01".as_slice().into(),
            Shape::new(&[2, 3]).into(),
            DataType::float(16).into(),
            Device::cpu().into(),
            rffi_core::Array::new(vec![1i64.into(), "x".into()]).into(),
            rffi_core::Map::new(vec![("k".into(), 1i64.into())])
                .unwrap()
                .into(),
        ];
        for a in &args {
            let r = echo.call(std::slice::from_ref(a)).unwrap();
            for w in 0..2 {
                let got = r.fetch(w).unwrap();
                assert_eq!(format!("{got:?}"), format!("{a:?}"), "{kind}: {a:?}");
            }
        }
        let r = rank.call(&[]).unwrap();
        assert_eq!(r.fetch(0).unwrap().try_as::<i64>().unwrap(), 0, "{kind}");
        assert_eq!(r.fetch(1).unwrap().try_as::<i64>().unwrap(), 1, "{kind}");
        // What cannot cross is a TypeError naming the argument's position.
        let f = Any::from(rffi_core::Function::from_typed(|| 1i64));
        let e = err_of(echo.call(&[1i64.into(), f]));
        assert_eq!(e.kind(), "TypeError");
        assert!(e.message().starts_with("argument #1:"), "{}", e.message());
        let f = Any::from(rffi_core::Function::from_typed(|| 1i64));
        let nested = Any::from(rffi_core::Array::new(vec![Any::from(1i64), f]));
        let e = err_of(echo.call(&[nested]));
        assert!(
            e.message().starts_with("argument #0[1]: a value of type"),
            "{}",
            e.message()
        );
        s.sync().unwrap();
    }
}

#[test]
fn drefs_chain_and_fetch_from_each_worker() {
    for (kind, s) in sessions(3) {
        let add_one = s.get_global_func("testing.add_one").unwrap();
        let mut r = add_one.call(&[1i64.into()]).unwrap();
        for _ in 0..5 {
            r = add_one.call(&[(&r).into()]).unwrap();
        }
        for w in 0..3 {
            assert_eq!(r.fetch(w).unwrap().try_as::<i64>().unwrap(), 7, "{kind}");
        }
        let e = err_of(r.fetch(3));
        assert_eq!(e.kind(), "IndexError", "{kind}");
    }
}

#[test]
fn plugins_and_tensors_both_ways() {
    for (kind, s) in sessions(2) {
        let m = s.load_module(&plugin()).unwrap();
        let add = m.get_function("session_test.add").unwrap();
        let r = add.call(&[2i64.into(), 40i64.into()]).unwrap();
        assert_eq!(r.fetch(1).unwrap().try_as::<i64>().unwrap(), 42, "{kind}");
        let t = s
            .empty(&[4, 2], DataType::float(32), Device::cpu())
            .unwrap();
        let host = Tensor::from_slice(&[1f32, 2., 3., 4., 5., 6., 7., 8.], &[4, 2]).unwrap();
        s.copy_to_worker_0(&host, &t).unwrap();
        let scale = s.get_global_func("session_test.scale").unwrap();
        let scaled = scale.call(&[(&t).into(), 2.0f64.into()]).unwrap();
        let sum = s.get_global_func("session_test.sum").unwrap();
        let total = sum.call(&[(&scaled).into()]).unwrap();
        assert_eq!(total.fetch(0).unwrap().try_as::<f64>().unwrap(), 72.0);
        // Worker 1's tensor was never written: zeros.
        assert_eq!(total.fetch(1).unwrap().try_as::<f64>().unwrap(), 0.0);
        let out = Tensor::alloc_cpu(&[4, 2], DataType::float(32)).unwrap();
        s.copy_from_worker_0(&out, &t).unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap()[7], 16.0, "{kind}");
        // A size mismatch is an error naming both sizes; the session goes on.
        let small = Tensor::alloc_cpu(&[3], DataType::float(32)).unwrap();
        let e = err_of(s.copy_to_worker_0(&small, &t));
        assert!(e.message().contains("12 bytes"), "{}", e.message());
        // Fetching a tensor brings a copy of it.
        let back = t.fetch(0).unwrap().try_as::<Tensor>().unwrap();
        assert_eq!(back.to_vec::<f32>().unwrap(), out.to_vec::<f32>().unwrap());
        s.sync().unwrap();
    }
}

#[test]
fn host_tensors_reach_every_worker_through_shared_memory() {
    for (kind, s) in sessions(2) {
        s.load_module(&plugin()).unwrap();
        let host = Tensor::from_slice(&[1f32, 2., 3., 4.], &[2, 2]).unwrap();
        let scale = s.get_global_func("session_test.scale").unwrap();
        let sum = s.get_global_func("session_test.sum").unwrap();
        // Each worker scales its own private copy; the host array is untouched.
        let scaled = scale.call(&[(&host).into(), 3.0f64.into()]).unwrap();
        let total = sum.call(&[(&scaled).into()]).unwrap();
        for w in 0..2 {
            assert_eq!(
                total.fetch(w).unwrap().try_as::<f64>().unwrap(),
                30.0,
                "{kind}"
            );
        }
        assert_eq!(host.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
        s.sync().unwrap();
        let leftover = std::fs::read_dir("/dev/shm")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("rffi-session-{}-", std::process::id()))
            })
            .count();
        assert_eq!(leftover, 0, "{kind}: segments left after a sync");
    }
}

#[test]
fn worker_errors_and_panics_are_raised_and_the_session_survives() {
    for (kind, s) in sessions(2) {
        let m = s.load_module(&plugin()).unwrap();
        let fail = m.get_function("session_test.fail").unwrap();
        fail.call(&["bad input".into()]).unwrap();
        let e = err_of(s.sync());
        assert_eq!(e.kind(), "ValueError", "{kind}");
        assert!(
            e.message()
                .contains("worker 0: call `session_test.fail` failed: bad input"),
            "{kind}: {}",
            e.message()
        );
        assert!(
            e.backtrace().contains("rffi session worker 0"),
            "{}",
            e.backtrace()
        );
        assert_eq!(s.failed_rank(), Some(0));
        s.sync().unwrap();

        let panic = s.get_global_func("session_test.panic").unwrap();
        panic.call(&["boom".into()]).unwrap();
        let e = err_of(s.sync());
        assert!(e.message().contains("boom"), "{kind}: {}", e.message());
        assert!(
            e.message().contains("session_test.panic"),
            "{}",
            e.message()
        );

        s.get_global_func("no.such.function").unwrap();
        let e = err_of(s.sync());
        assert_eq!(e.kind(), "KeyError", "{kind}");
        assert!(
            e.message().contains("`no.such.function`"),
            "{}",
            e.message()
        );

        // The next call works.
        let add = s.get_global_func("testing.add_one").unwrap();
        let r = add.call(&[1i64.into()]).unwrap();
        assert_eq!(r.fetch(1).unwrap().try_as::<i64>().unwrap(), 2, "{kind}");
        // A failure is raised by a fetch too, from the worker that had it.
        s.get_global_func("testing.raise_error")
            .unwrap()
            .call(&["IndexError".into(), "only here".into()])
            .unwrap();
        let e = err_of(r.fetch(1));
        assert_eq!(e.kind(), "IndexError");
        assert!(e.message().starts_with("worker 1:"), "{}", e.message());
        // Worker 0's copy of that failure comes with the next sync.
        assert_eq!(err_of(s.sync()).kind(), "IndexError");
        s.sync().unwrap();
    }
}

#[test]
fn a_killed_worker_is_reported_by_rank_without_hanging() {
    let s = ProcessSession::with_program(3, &worker_program()).unwrap();
    let pids = s.worker_pids();
    assert_eq!(pids.len(), 2);
    // Killed while idle, everything sent already done: the next sync still reports it.
    s.sync().unwrap();
    // SAFETY: killing our own child.
    unsafe { libc::kill(pids[1], libc::SIGKILL) };
    let start = Instant::now();
    let e = err_of(s.sync());
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        e.message().contains("worker 2") && e.message().contains("killed by signal 9 (SIGKILL)"),
        "{}",
        e.message()
    );
    // Later calls raise the same error.
    let e2 = err_of(s.get_global_func("testing.nop"));
    assert_eq!(e2.message(), e.message());
    s.shutdown();
    s.shutdown();
    for pid in pids {
        assert!(!exists(pid), "worker {pid} still exists");
    }
}

#[test]
fn a_connected_worker_that_goes_away_is_reported_by_rank() {
    let s = socket_session(2, |rank| rank == 0);
    // Seen when the command is sent (a closed socket) or at the sync.
    let e = match s.get_global_func("testing.nop") {
        Err(e) => e,
        Ok(_) => err_of(s.sync()),
    };
    assert!(
        e.message()
            .contains("worker 1 (test thread 1) closed its connection"),
        "{}",
        e.message()
    );
    assert_eq!(s.failed_rank(), Some(1));
    let e2 = err_of(s.get_global_func("testing.nop"));
    assert_eq!(e2.message(), e.message());
    s.shutdown();
    s.shutdown();
}

#[test]
fn shutdown_is_idempotent_and_later_use_is_an_error() {
    for (kind, s) in sessions(2) {
        let pids = s.worker_pids();
        s.shutdown();
        s.shutdown();
        let e = err_of(s.get_global_func("testing.nop"));
        assert!(e.message().contains("shut down"), "{kind}: {}", e.message());
        for pid in pids {
            assert!(!exists(pid), "{kind}: worker {pid} still exists");
        }
    }
}

#[test]
fn registers_are_reused_over_many_calls() {
    for (kind, s) in sessions(2) {
        let f = s.get_global_func("testing.add_one").unwrap();
        let x = f.call(&[0i64.into()]).unwrap();
        for i in 0..20_000 {
            let r = f.call(&[(&x).into()]).unwrap();
            if i % 5_000 == 0 {
                s.sync().unwrap();
            }
            drop(r);
        }
        s.sync().unwrap();
        let r = f.call(&[(&x).into()]).unwrap();
        // Ids come back from the free list: a handful, not 20 000.
        assert!(r.register() < 8, "{kind}: register {}", r.register());
        assert_eq!(r.fetch(1).unwrap().try_as::<i64>().unwrap(), 2);
    }
}

#[test]
fn a_missing_worker_program_fails_to_start() {
    let p = WorkerProgram {
        program: "/no/such/rffi-worker".into(),
        args: vec![],
    };
    let e = err_of(ProcessSession::with_program(2, &p));
    assert!(
        e.message().contains("cannot start worker 1"),
        "{}",
        e.message()
    );
    assert_eq!(err_of(ThreadSession::new(0)).kind(), "ValueError");
}
