//! Target `session_frames`: arbitrary bytes as what a session's other end sends, since a worker
//! reads its controller's frames and a controller reads its workers' (a connected worker may be
//! on another host). The first byte picks what the rest is: one encoded value, a frame of
//! commands, a reply, or commands served by a worker. What must hold: decoding returns a value
//! or a ValueError "malformed session frame", never a crash, a hang or an allocation that the
//! frame's own bytes do not pay for; whatever decodes re-encodes to bytes that decode to the
//! same thing; a worker answers every command with a result or an error, grows its register file
//! by at most one register per command and never follows a controller's address it does not
//! share.
//!
//! Not part of `rffi_fuzz`'s library (which `ffi-core`'s tests include by path, and which must
//! not depend on sessions): `fuzz_targets/session_frames.rs` and
//! `sessions/tests/fuzz_regressions.rs` include this file by path.

use rffi_core::{Any, DataType, Error, Result};
use rffi_session::codec::{Reader, Resolve, Value, Writer};
use rffi_session::protocol::{Command, Reply};
use rffi_session::shm_tensor;
use rffi_session::worker::{Step, Worker};

pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => values(rest),
        1 => commands(rest),
        2 => replies(rest),
        _ => serve(rest),
    }
}

/// A decoding failure must be the documented error.
fn decoded<T>(r: Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            assert_eq!(e.kind(), "ValueError", "{}", e.message());
            assert!(
                e.message().starts_with("malformed session frame: "),
                "{}",
                e.message()
            );
            None
        }
    }
}

fn encode(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::default();
    f(&mut w);
    w.buf
}

/// Registers and descriptors name nothing here.
struct Nothing;

impl Resolve for Nothing {
    fn register(&self, r: u64) -> Result<Any> {
        Err(Error::value_error(format!("register {r} is empty")))
    }
    fn tensor(&self, fd: u32, _: &[i64], _: DataType) -> Result<Any> {
        Err(Error::value_error(format!("descriptor #{fd} is missing")))
    }
}

fn values(data: &[u8]) {
    let Some(v) = decoded(Reader::new(data).value()) else {
        return;
    };
    // Compared as bytes: a float may be NaN, which is not equal to itself as a `Value`.
    let bytes = encode(|w| w.value(&v));
    let mut again = Reader::new(&bytes);
    let w = again.value().expect("a re-encoded value decodes");
    assert!(again.is_empty(), "a re-encoded value has trailing bytes");
    assert_eq!(encode(|x| x.value(&w)), bytes, "{v:?} does not round-trip");
    if let Err(e) = v.into_any(&Nothing) {
        let kind = e.kind();
        assert!(
            kind == "ValueError" || kind == "TypeError",
            "{kind}: {}",
            e.message()
        );
    }
}

fn commands(data: &[u8]) {
    let Some(cmds) = decoded(Command::decode_all(data)) else {
        return;
    };
    let bytes = encode(|w| cmds.iter().for_each(|c| c.encode(w)));
    let again = Command::decode_all(&bytes).expect("re-encoded commands decode");
    assert_eq!(again.len(), cmds.len());
    assert_eq!(encode(|w| again.iter().for_each(|c| c.encode(w))), bytes);
    if let [one] = cmds.as_slice() {
        assert!(Command::decode(&bytes).is_ok(), "{one:?}");
    }
}

fn round_trip_reply(reply: &Reply) {
    let bytes = encode(|w| reply.encode(w));
    let again = Reply::decode(&bytes).expect("a re-encoded reply decodes");
    assert_eq!(again.seq(), reply.seq());
    assert_eq!(encode(|w| again.encode(w)), bytes, "{reply:?}");
}

fn replies(data: &[u8]) {
    if let Some(reply) = decoded(Reply::decode(data)) {
        round_trip_reply(&reply);
    }
}

/// The global functions a served `GetGlobalFunc` may name (the fuzzer's names map onto these:
/// a frame may name any function, and some of the process's functions exist to end it).
const FUNCTIONS: [&str; 4] = ["ffi.Array", "ffi.Map", "ffi.Shape", "no.such.function"];

/// Tensors a served `Empty` may make: a request for more is one the worker would honour (the
/// controller may ask for any size), so it is not fuzzed for memory's sake.
const MAX_EMPTY: usize = 1 << 20;

/// `cmd` made safe to run in this process, or `None` to skip it.
fn tame(cmd: Command) -> Option<Command> {
    Some(match cmd {
        Command::GetGlobalFunc { reg, name } => Command::GetGlobalFunc {
            reg,
            name: FUNCTIONS[name.len() % FUNCTIONS.len()].to_string(),
        },
        Command::LoadModule { reg, .. } => Command::LoadModule {
            reg,
            path: "/nonexistent/rffi-fuzz-module.so".into(),
        },
        Command::Empty {
            ref shape, dtype, ..
        } if shm_tensor::nbytes(shape, dtype).is_ok_and(|n| n > MAX_EMPTY) => return None,
        cmd => cmd,
    })
}

/// Commands served by a worker in another process than its controller: the first two bytes say
/// how long the frame of commands is, the rest is what a `CopyIn` reads as its data frame.
fn serve(data: &[u8]) {
    let n = data
        .get(..2)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let rest = data.get(2..).unwrap_or_default();
    let (frame, copy_data) = rest.split_at(n.min(rest.len()));
    let Some(cmds) = decoded(Command::decode_all(frame)) else {
        return;
    };
    let mut worker = Worker::new(0, 1);
    let mut filled = 0;
    for cmd in cmds.into_iter().filter_map(tame) {
        let by_address = matches!(cmd, Command::Copy { .. });
        filled += matches!(
            cmd,
            Command::GetGlobalFunc { .. }
                | Command::LoadModule { .. }
                | Command::ModuleGetFunction { .. }
                | Command::Call { .. }
                | Command::Empty { .. }
        ) as usize;
        let mut step = worker.handle(cmd, &[]);
        if let Step::ReadBytes { seq, reg } = step {
            step = worker.copy_in(seq, reg, copy_data);
        }
        match step {
            Step::Continue => {}
            Step::Shutdown => break,
            Step::ReadBytes { .. } => panic!("a CopyIn's data frame was not taken"),
            Step::Reply(reply, fds) => {
                assert!(
                    fds.is_empty(),
                    "descriptors for a controller on another host"
                );
                if by_address {
                    assert!(
                        matches!(reply, Reply::Done { error: Some(_), .. }),
                        "a copy by address was not refused: {reply:?}"
                    );
                }
                round_trip_reply(&reply);
            }
            Step::ReplyWithBytes(reply, t) => {
                let Reply::Fetched {
                    result: Ok(Value::Int(n)),
                    ..
                } = &reply
                else {
                    panic!("CopyOut answered {reply:?}");
                };
                assert_eq!(*n as usize, t.nbytes());
                round_trip_reply(&reply);
            }
        }
        assert!(
            worker.registers() <= filled,
            "{} registers after {filled} commands that fill one",
            worker.registers()
        );
    }
}
