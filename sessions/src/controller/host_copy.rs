//! Copies between host memory and worker 0's tensors: one `memcpy` by worker 0 itself when it
//! shares this process's memory (`Copy`), else the bytes in a frame of their own over worker 0's
//! connection (`CopyIn`, `CopyOut`; a `RaySession`'s worker 0 is an actor).

use super::Controller;
use crate::codec::Value;
use crate::protocol::{Command, Reg, Reply};
use rffi_core::{Error, Result};

impl Controller {
    /// Copies between host memory at `addr` and worker 0's tensor in `reg`, in command order.
    ///
    /// # Safety
    /// `addr` must be valid for `nbytes` bytes (readable, or writable when copying from the
    /// worker) until this returns.
    pub unsafe fn copy_worker_0(
        &self,
        reg: Reg,
        addr: u64,
        nbytes: u64,
        to_worker: bool,
    ) -> Result<()> {
        let cmd = |seq| Command::Copy {
            seq,
            reg,
            addr,
            nbytes,
            to_worker,
        };
        self.host_copy(cmd, None, None)
    }

    /// Writes `data` into worker 0's tensor in `reg`, sent over worker 0's connection.
    pub fn copy_in(&self, reg: Reg, data: &[u8]) -> Result<()> {
        let nbytes = data.len() as u64;
        self.host_copy(|seq| Command::CopyIn { seq, reg, nbytes }, Some(data), None)
    }

    /// Reads worker 0's tensor in `reg` into `out`, over worker 0's connection.
    pub fn copy_out(&self, reg: Reg, out: &mut [u8]) -> Result<()> {
        let nbytes = out.len() as u64;
        self.host_copy(|seq| Command::CopyOut { seq, reg, nbytes }, None, Some(out))
    }

    /// Sends a host copy to worker 0 (`send`: the bytes that follow the command) and waits for
    /// its answer (`recv`: where the bytes that follow the answer go). Waited for without a
    /// timeout: a copy from host memory reads an address that must outlive it.
    fn host_copy(
        &self,
        make: impl FnOnce(u64) -> Command,
        send: Option<&[u8]>,
        recv: Option<&mut [u8]>,
    ) -> Result<()> {
        let mut st = self.usable()?;
        let seq = Self::next_seq(&mut st);
        let cmd = make(seq);
        self.send_to(&mut st, &[0], &cmd)?;
        if let Some(bytes) = send {
            self.send_frame(&mut st, &[0], bytes, cmd.name())?;
        }
        match self.wait_reply(&mut st, 0, seq, None)? {
            Some(Reply::Done { error: Some(e), .. })
            | Some(Reply::Fetched { result: Err(e), .. }) => return Err(self.raise(0, &e)),
            Some(Reply::Done { error: None, .. }) if recv.is_none() => {}
            Some(Reply::Fetched {
                result: Ok(Value::Int(n)),
                ..
            }) if recv.as_ref().is_some_and(|out| out.len() as i64 == n) => {
                let out = recv.expect("checked");
                let bytes = self.read_frame(&mut st, 0, None)?.expect("no timeout");
                if bytes.len() != out.len() {
                    return Err(Error::runtime_error(format!(
                        "worker 0 sent {} bytes for a copy of {}",
                        bytes.len(),
                        out.len()
                    )));
                }
                out.copy_from_slice(&bytes);
            }
            _ => {
                return Err(Error::runtime_error(format!(
                    "worker 0 answered {} with something else",
                    cmd.name()
                )))
            }
        }
        match st.stashed.take() {
            Some((r, e)) => Err(self.raise(r, &e)),
            None => Ok(()),
        }
    }
}
