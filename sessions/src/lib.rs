//! rffi sessions: one controller driving N workers that each hold a full rffi runtime and call
//! global functions by name on all of them at once (the job of TVM's Disco).
//!
//! ```
//! use rffi_session::ThreadSession;
//! let sess = ThreadSession::new(2)?;
//! let f = sess.get_global_func("testing.add_one")?;
//! let r = f.call(&[41i64.into()])?;
//! assert_eq!(r.fetch(1)?.try_as::<i64>()?, 42);
//! # Ok::<(), rffi_core::Error>(())
//! ```
//!
//! Layers: `codec` (values and errors as bytes), `protocol` (commands and replies), `transport`
//! and `socket_link` (mailboxes and sockets, frames with descriptors), `shm_tensor` (tensors in
//! shared memory), `progress` (the shared counters a sync waits on), `worker` (the command loop
//! and register file), `process` (spawning and reaping worker processes), `controller`
//! (broadcast, sync, failures), `dref` (handles), `session` (the Rust API), `ffi` (the
//! `session.*` global functions), `ccl` (collectives) and `shard` (loading parameters sharded
//! at load time).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
// Implementation modules (the wire format, the worker loop, transports) are public for the
// crate's tests and hidden from its docs: the API is `Session`, `DRef`, `ccl` and `shard`.
// Type-index constants keep their C names (`kRFFIInt`), and are matched on.
#![allow(non_upper_case_globals)]

pub mod ccl;
#[doc(hidden)]
pub mod codec;
#[doc(hidden)]
pub mod controller;
pub mod dref;
#[doc(hidden)]
pub mod ffi;
mod futex;
mod peer;
#[doc(hidden)]
pub mod process;
#[doc(hidden)]
pub mod progress;
#[doc(hidden)]
pub mod protocol;
pub mod session;
pub mod shard;
#[doc(hidden)]
pub mod shm_tensor;
mod socket_link;
#[doc(hidden)]
pub mod transport;
#[doc(hidden)]
pub mod worker;

pub use dref::{DFunction, DModule, DRef};
pub use process::WorkerProgram;
pub use session::{ProcessSession, Session, SocketSession, ThreadSession};
