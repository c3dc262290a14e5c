//! The commands a controller sends to its workers and the replies they send back.
//!
//! Commands are broadcast and pipelined: only `Sync`, `Fetch` and the worker-0 copies are answered,
//! so a call costs one frame per worker and no wait. Every answer carries the first failure the
//! worker met since the previous answer, which is how errors of pipelined commands come back.
//!
//! Later features need no new kinds: collectives (`ccl.*`) and load-time sharding are global
//! functions the workers call through `Call`, with ids and sizes passed as bytes and ints. New kinds
//! get new tags; a worker answers an unknown tag with an error, never by dying.

use crate::codec::{Reader, Value, WireError, Writer};
use rffi_core::{DataType, Device, Error, Result};

/// Bumped when the encoding changes; a worker started from another build refuses to serve.
pub const PROTOCOL_VERSION: u32 = 3;

/// A register id: slot `k` of every worker's register file.
pub type Reg = u64;

#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// The first command of every worker: descriptor `fd` of the frame is the session's progress
    /// block (see `progress`), where the worker reports the frames it has finished.
    Attach {
        fd: u32,
    },
    /// Stores the global function `name` in `reg` (a KeyError naming it when missing).
    GetGlobalFunc {
        reg: Reg,
        name: String,
    },
    /// Loads a plugin or module from `path` and stores the Module in `reg`.
    LoadModule {
        reg: Reg,
        path: String,
    },
    /// Stores the function `name` of the Module in `module` in `reg`.
    ModuleGetFunction {
        reg: Reg,
        module: Reg,
        name: String,
    },
    /// Calls the function in `func` with `args` (`Ref`s are this worker's registers) into `reg`.
    Call {
        reg: Reg,
        func: Reg,
        args: Vec<Value>,
    },
    /// A new tensor in `reg`; with `fd`, its memory is that descriptor of the frame (a
    /// shared-memory file the controller maps too).
    Empty {
        reg: Reg,
        shape: Vec<i64>,
        dtype: DataType,
        device: Device,
        fd: Option<u32>,
    },
    /// Clears registers whose last controller handle went away.
    Free {
        regs: Vec<Reg>,
    },
    /// Answered with `Done` once every earlier command has run.
    Sync {
        seq: u64,
    },
    /// Answered with `Fetched`: the value in `reg`.
    Fetch {
        seq: u64,
        reg: Reg,
    },
    /// Worker 0 only (it shares the controller's address space): copies `nbytes` from host memory
    /// at `addr` into the tensor in `reg` (`to_worker`), or from the tensor to `addr`. Answered
    /// with `Done`.
    Copy {
        seq: u64,
        reg: Reg,
        addr: u64,
        nbytes: u64,
        to_worker: bool,
    },
    /// Worker 0 in another process (perhaps on another host): the next frame holds `nbytes`
    /// bytes, raw, for the tensor in `reg`. Answered with `Done`. (The bytes go in a frame of
    /// their own so that neither side copies them into or out of an encoded frame.)
    CopyIn {
        seq: u64,
        reg: Reg,
        nbytes: u64,
    },
    /// Worker 0 in another process: answered with `Fetched` holding `Int(nbytes)`, then a frame
    /// of the tensor's `nbytes` bytes, raw (or with `Fetched` holding the failure, and nothing
    /// after it). `nbytes` is the controller's host array's size, checked by the worker.
    CopyOut {
        seq: u64,
        reg: Reg,
        nbytes: u64,
    },
    Shutdown,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Done {
        seq: u64,
        error: Option<WireError>,
    },
    Fetched {
        seq: u64,
        result: std::result::Result<Value, WireError>,
    },
}

impl Reply {
    pub fn seq(&self) -> u64 {
        match self {
            Reply::Done { seq, .. } | Reply::Fetched { seq, .. } => *seq,
        }
    }
}

const C_GET_GLOBAL: u8 = 1;
const C_LOAD_MODULE: u8 = 2;
const C_MODULE_FUNC: u8 = 3;
const C_CALL: u8 = 4;
const C_EMPTY: u8 = 5;
const C_FREE: u8 = 6;
const C_SYNC: u8 = 7;
const C_FETCH: u8 = 8;
const C_COPY: u8 = 9;
const C_SHUTDOWN: u8 = 10;
const C_COPY_IN: u8 = 11;
const C_COPY_OUT: u8 = 12;
const C_ATTACH: u8 = 13;

const R_DONE: u8 = 1;
const R_FETCHED: u8 = 2;

impl Command {
    /// What the worker was doing, for error messages.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Attach { .. } => "attach",
            Command::GetGlobalFunc { .. } => "get_global_func",
            Command::LoadModule { .. } => "load_module",
            Command::ModuleGetFunction { .. } => "get_function",
            Command::Call { .. } => "call",
            Command::Empty { .. } => "empty",
            Command::Free { .. } => "free",
            Command::Sync { .. } => "sync",
            Command::Fetch { .. } => "fetch",
            Command::Copy {
                to_worker: true, ..
            } => "copy_to_worker_0",
            Command::Copy { .. } => "copy_from_worker_0",
            Command::CopyIn { .. } => "copy_to_worker_0",
            Command::CopyOut { .. } => "copy_from_worker_0",
            Command::Shutdown => "shutdown",
        }
    }

    pub fn encode(&self, w: &mut Writer) {
        match self {
            Command::Attach { fd } => {
                w.u8(C_ATTACH);
                w.u32(*fd);
            }
            Command::GetGlobalFunc { reg, name } => {
                w.u8(C_GET_GLOBAL);
                w.u64(*reg);
                w.str(name);
            }
            Command::LoadModule { reg, path } => {
                w.u8(C_LOAD_MODULE);
                w.u64(*reg);
                w.str(path);
            }
            Command::ModuleGetFunction { reg, module, name } => {
                w.u8(C_MODULE_FUNC);
                w.u64(*reg);
                w.u64(*module);
                w.str(name);
            }
            Command::Call { reg, func, args } => {
                w.u8(C_CALL);
                w.u64(*reg);
                w.u64(*func);
                w.u32(args.len() as u32);
                args.iter().for_each(|a| w.value(a));
            }
            Command::Empty {
                reg,
                shape,
                dtype,
                device,
                fd,
            } => {
                w.u8(C_EMPTY);
                w.u64(*reg);
                w.value(&Value::Shape(shape.clone()));
                w.value(&Value::DataType(*dtype));
                w.value(&Value::Device(*device));
                match fd {
                    None => w.u8(0),
                    Some(i) => {
                        w.u8(1);
                        w.u32(*i);
                    }
                }
            }
            Command::Free { regs } => {
                w.u8(C_FREE);
                w.u32(regs.len() as u32);
                regs.iter().for_each(|r| w.u64(*r));
            }
            Command::Sync { seq } => {
                w.u8(C_SYNC);
                w.u64(*seq);
            }
            Command::Fetch { seq, reg } => {
                w.u8(C_FETCH);
                w.u64(*seq);
                w.u64(*reg);
            }
            Command::Copy {
                seq,
                reg,
                addr,
                nbytes,
                to_worker,
            } => {
                w.u8(C_COPY);
                w.u64(*seq);
                w.u64(*reg);
                w.u64(*addr);
                w.u64(*nbytes);
                w.u8(*to_worker as u8);
            }
            Command::CopyIn { seq, reg, nbytes } => {
                w.u8(C_COPY_IN);
                w.u64(*seq);
                w.u64(*reg);
                w.u64(*nbytes);
            }
            Command::CopyOut { seq, reg, nbytes } => {
                w.u8(C_COPY_OUT);
                w.u64(*seq);
                w.u64(*reg);
                w.u64(*nbytes);
            }
            Command::Shutdown => w.u8(C_SHUTDOWN),
        }
    }

    /// Decodes a frame holding exactly one command.
    pub fn decode(frame: &[u8]) -> Result<Command> {
        let mut r = Reader::new(frame);
        let cmd = Self::read(&mut r)?;
        if !r.is_empty() {
            return Err(bad("trailing bytes after the command"));
        }
        Ok(cmd)
    }

    /// Decodes every command of a frame, in order (a controller batches commands that go out
    /// together, such as a free and the call after it, into one frame).
    pub fn decode_all(frame: &[u8]) -> Result<Vec<Command>> {
        let mut r = Reader::new(frame);
        let mut cmds = Vec::with_capacity(2);
        while !r.is_empty() {
            cmds.push(Self::read(&mut r)?);
        }
        Ok(cmds)
    }

    fn read(r: &mut Reader<'_>) -> Result<Command> {
        let cmd = match r.u8()? {
            C_ATTACH => Command::Attach { fd: r.u32()? },
            C_GET_GLOBAL => Command::GetGlobalFunc {
                reg: r.u64()?,
                name: r.str()?,
            },
            C_LOAD_MODULE => Command::LoadModule {
                reg: r.u64()?,
                path: r.str()?,
            },
            C_MODULE_FUNC => Command::ModuleGetFunction {
                reg: r.u64()?,
                module: r.u64()?,
                name: r.str()?,
            },
            C_CALL => {
                let reg = r.u64()?;
                let func = r.u64()?;
                let n = r.u32()? as usize;
                let args = (0..n).map(|_| r.value()).collect::<Result<_>>()?;
                Command::Call { reg, func, args }
            }
            C_EMPTY => {
                let reg = r.u64()?;
                let (shape, dtype, device) = match (r.value()?, r.value()?, r.value()?) {
                    (Value::Shape(s), Value::DataType(t), Value::Device(d)) => (s, t, d),
                    _ => return Err(bad("empty expects a shape, a dtype and a device")),
                };
                let fd = match r.u8()? {
                    0 => None,
                    _ => Some(r.u32()?),
                };
                Command::Empty {
                    reg,
                    shape,
                    dtype,
                    device,
                    fd,
                }
            }
            C_FREE => {
                let n = r.u32()? as usize;
                Command::Free {
                    regs: (0..n).map(|_| r.u64()).collect::<Result<_>>()?,
                }
            }
            C_SYNC => Command::Sync { seq: r.u64()? },
            C_FETCH => Command::Fetch {
                seq: r.u64()?,
                reg: r.u64()?,
            },
            C_COPY => Command::Copy {
                seq: r.u64()?,
                reg: r.u64()?,
                addr: r.u64()?,
                nbytes: r.u64()?,
                to_worker: r.u8()? != 0,
            },
            C_COPY_IN => Command::CopyIn {
                seq: r.u64()?,
                reg: r.u64()?,
                nbytes: r.u64()?,
            },
            C_COPY_OUT => Command::CopyOut {
                seq: r.u64()?,
                reg: r.u64()?,
                nbytes: r.u64()?,
            },
            C_SHUTDOWN => Command::Shutdown,
            t => return Err(bad(&format!("unknown command tag {t}"))),
        };
        Ok(cmd)
    }
}

fn bad(what: &str) -> Error {
    Error::value_error(format!("malformed session frame: {what}"))
}

impl Reply {
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Reply::Done { seq, error } => {
                w.u8(R_DONE);
                w.u64(*seq);
                match error {
                    None => w.u8(0),
                    Some(e) => {
                        w.u8(1);
                        w.error(e);
                    }
                }
            }
            Reply::Fetched { seq, result } => {
                w.u8(R_FETCHED);
                w.u64(*seq);
                match result {
                    Ok(v) => {
                        w.u8(0);
                        w.value(v);
                    }
                    Err(e) => {
                        w.u8(1);
                        w.error(e);
                    }
                }
            }
        }
    }

    pub fn decode(frame: &[u8]) -> Result<Reply> {
        let mut r = Reader::new(frame);
        let reply = match r.u8()? {
            R_DONE => {
                let seq = r.u64()?;
                let error = match r.u8()? {
                    0 => None,
                    _ => Some(r.error()?),
                };
                Reply::Done { seq, error }
            }
            R_FETCHED => {
                let seq = r.u64()?;
                let result = match r.u8()? {
                    0 => Ok(r.value()?),
                    _ => Err(r.error()?),
                };
                Reply::Fetched { seq, result }
            }
            t => return Err(bad(&format!("unknown reply tag {t}"))),
        };
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_replies_round_trip() {
        let cmds = [
            Command::Attach { fd: 0 },
            Command::GetGlobalFunc {
                reg: 1,
                name: "a.b".into(),
            },
            Command::LoadModule {
                reg: 2,
                path: "/x.so".into(),
            },
            Command::ModuleGetFunction {
                reg: 3,
                module: 2,
                name: "f".into(),
            },
            Command::Call {
                reg: 4,
                func: 1,
                args: vec![Value::Int(1), Value::Ref(3)],
            },
            Command::Empty {
                reg: 5,
                shape: vec![2, 2],
                dtype: DataType::float(32),
                device: Device::cpu(),
                fd: Some(1),
            },
            Command::Free { regs: vec![1, 2] },
            Command::Sync { seq: 9 },
            Command::Fetch { seq: 10, reg: 4 },
            Command::Copy {
                seq: 11,
                reg: 5,
                addr: 0x1000,
                nbytes: 16,
                to_worker: true,
            },
            Command::CopyIn {
                seq: 12,
                reg: 5,
                nbytes: 3,
            },
            Command::CopyOut {
                seq: 13,
                reg: 5,
                nbytes: 3,
            },
            Command::Shutdown,
        ];
        let mut all = Writer::default();
        for c in &cmds {
            let mut w = Writer::default();
            c.encode(&mut w);
            assert_eq!(&Command::decode(&w.buf).unwrap(), c);
            c.encode(&mut all);
        }
        assert_eq!(Command::decode_all(&all.buf).unwrap(), cmds);
        let err = WireError {
            kind: "ValueError".into(),
            message: "m".into(),
            backtrace: "  File \"x\", line 1, in f\n".into(),
            function: "f".into(),
            command: "call".into(),
        };
        for r in [
            Reply::Done {
                seq: 1,
                error: None,
            },
            Reply::Done {
                seq: 2,
                error: Some(err.clone()),
            },
            Reply::Fetched {
                seq: 3,
                result: Ok(Value::Str("v".into())),
            },
            Reply::Fetched {
                seq: 4,
                result: Err(err),
            },
        ] {
            let mut w = Writer::default();
            r.encode(&mut w);
            assert_eq!(Reply::decode(&w.buf).unwrap(), r);
        }
    }

    #[test]
    fn unknown_tags_are_errors() {
        assert!(Command::decode(&[200])
            .unwrap_err()
            .message()
            .contains("unknown command tag 200"));
        assert!(Command::decode(&[C_SYNC, 1, 0, 0, 0, 0, 0, 0, 0, 7])
            .unwrap_err()
            .message()
            .contains("trailing"));
    }
}
