//! Shared by the session test files: every session kind, made the same way.
#![allow(dead_code)] // each test file uses some of these

use rffi_session::transport::{socket_pair, SocketLink};
use rffi_session::{ProcessSession, Session, SocketSession, ThreadSession, WorkerProgram};

pub fn worker_program() -> WorkerProgram {
    WorkerProgram {
        program: env!("CARGO_BIN_EXE_rffi-worker").into(),
        args: vec![],
    }
}

/// A session over workers started here as threads, each serving on its end of a socket pair as
/// a Ray actor serves on its TCP connection (host data travels inline). `serving(rank)`: whether
/// worker `rank` serves at all, or closes its socket at once.
pub fn socket_session(n: usize, serving: impl Fn(usize) -> bool) -> Session {
    let workers = (0..n)
        .map(|rank| {
            let (ours, theirs) = socket_pair().unwrap();
            if serving(rank) {
                std::thread::spawn(move || {
                    rffi_session::worker::serve(rank, n, &SocketLink::new(theirs))
                });
            }
            (ours, format!("test thread {rank}"))
        })
        .collect();
    SocketSession::new(workers).unwrap()
}

/// Every kind with `n` workers.
pub fn sessions(n: usize) -> Vec<(&'static str, Session)> {
    vec![
        ("thread", ThreadSession::new(n).unwrap()),
        (
            "process",
            ProcessSession::with_program(n, &worker_program()).unwrap(),
        ),
        ("socket", socket_session(n, |_| true)),
    ]
}
