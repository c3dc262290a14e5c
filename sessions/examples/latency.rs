//! Round-trip latency of a call by name plus a sync, from Rust (no Python in the way).
//! `cargo run --release -p rffi-session --example latency [workers]`
use rffi_session::{ProcessSession, ThreadSession};
use std::time::Instant;

fn main() -> rffi_core::Result<()> {
    let n: usize = std::env::args().nth(1).map_or(1, |a| a.parse().unwrap());
    for (kind, s) in [
        ("thread", ThreadSession::new(n)?),
        ("process", ProcessSession::new(n)?),
    ] {
        let f = s.get_global_func("session.worker_rank")?;
        s.sync()?;
        for label in ["sync", "call+sync"] {
            let mut best = f64::MAX;
            for _ in 0..5 {
                let t = Instant::now();
                for _ in 0..2000 {
                    if label == "call+sync" {
                        f.call(&[])?;
                    }
                    s.sync()?;
                }
                best = best.min(t.elapsed().as_secs_f64() / 2000.0 * 1e6);
            }
            println!("{kind} n={n} {label}: {best:.2} us");
        }
    }
    Ok(())
}
