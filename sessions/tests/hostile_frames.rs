//! Frames no controller of this build sends, served by a worker or decoded: each is refused
//! with an error, where it once crashed the worker or made it allocate what the frame claimed.
//! (The `session_frames` fuzz target found these; its saved inputs replay in
//! `tests/fuzz_regressions.rs`.)

use rffi_core::{DataType, Device, Tensor};
use rffi_session::codec::{Resolve, Value};
use rffi_session::protocol::{Command, Reply};
use rffi_session::shm_tensor;
use rffi_session::worker::{Step, Worker};

fn sync(w: &mut Worker) -> Option<String> {
    match w.handle(Command::Sync { seq: 1 }, &[]) {
        Step::Reply(Reply::Done { error, .. }, _) => {
            error.map(|e| format!("{}: {}", e.kind, e.message))
        }
        _ => panic!("Sync is answered with Done"),
    }
}

/// A register id far past the register file (`GetGlobalFunc` into register 2^36) made the worker
/// grow its file to that size: 2^36 registers of 16 bytes, an allocation that fails and aborts
/// the worker (2^60 overflowed instead). The controller hands out ids in order, so a command
/// fills an existing register or the next one; any other id is a malformed frame.
#[test]
fn a_register_past_the_next_new_one_is_refused_without_growing_the_file() {
    for reg in [1u64 << 36, 1 << 60, u64::MAX, 2] {
        let mut w = Worker::new(0, 1);
        let cmd = Command::GetGlobalFunc {
            reg,
            name: "ffi.Array".into(),
        };
        assert!(matches!(w.handle(cmd, &[]), Step::Continue));
        assert_eq!(w.registers(), 0);
        let e = sync(&mut w).expect("an error");
        assert!(
            e.starts_with(&format!(
                "ValueError: malformed session frame: register {reg} is out of order on worker \
                 0: it has 0 registers, so a command may fill one of them or register 0"
            )),
            "{e}"
        );
    }
    // In order, the file grows one register at a time, and existing registers are refilled.
    let mut w = Worker::new(0, 1);
    for reg in [0, 1, 1, 0, 2] {
        let cmd = Command::GetGlobalFunc {
            reg,
            name: "ffi.Array".into(),
        };
        w.handle(cmd, &[]);
    }
    assert_eq!((w.registers(), sync(&mut w)), (3, None));
}

fn empty_u8(w: &mut Worker, n: i64) {
    let cmd = Command::Empty {
        reg: 0,
        shape: vec![n],
        dtype: DataType::uint(8),
        device: Device::cpu(),
        fd: None,
    };
    assert!(matches!(w.handle(cmd, &[]), Step::Continue));
}

fn copy(w: &mut Worker, addr: u64, to_worker: bool) -> Option<String> {
    let cmd = Command::Copy {
        seq: 2,
        reg: 0,
        addr,
        nbytes: 4,
        to_worker,
    };
    match w.handle(cmd, &[]) {
        Step::Reply(Reply::Done { error, .. }, _) => {
            error.map(|e| format!("{}: {}", e.kind, e.message))
        }
        _ => panic!("Copy is answered with Done"),
    }
}

/// A `Copy` carries an address of the controller's memory, which only a worker thread of the
/// controller's process shares: a worker process followed it anyway (a wild read or write of
/// its own memory, SIGSEGV at address 0x10).
#[test]
fn a_copy_by_address_is_refused_by_a_worker_in_another_process() {
    for to_worker in [true, false] {
        let mut w = Worker::new(0, 1);
        empty_u8(&mut w, 4);
        let e = copy(&mut w, 0x10, to_worker).expect("an error");
        assert_eq!(
            e,
            "ValueError: malformed session frame: a host copy by address reached a worker in \
             another process than the controller (its copies travel in frames: CopyIn, CopyOut)"
        );
    }
    // A worker thread of the controller's process copies.
    let mut w = Worker::new(0, 1).sharing_memory(true);
    empty_u8(&mut w, 4);
    let host = [1u8, 2, 3, 4];
    assert_eq!(copy(&mut w, host.as_ptr() as u64, true), None);
    let mut back = [0u8; 4];
    assert_eq!(copy(&mut w, back.as_mut_ptr() as u64, false), None);
    assert_eq!(back, host);
}

struct Nothing;

impl Resolve for Nothing {
    fn register(&self, _: u64) -> rffi_core::Result<rffi_core::Any> {
        unreachable!()
    }
    fn tensor(&self, _: u32, _: &[i64], _: DataType) -> rffi_core::Result<rffi_core::Any> {
        unreachable!()
    }
}

/// A tensor sent inline (`Value::Tensor`) whose shape claims 2^60 bytes and whose data has 3:
/// the receiver allocated the shape's bytes before comparing (a MemoryError here; a 30 GiB shape
/// was allocated and zeroed). The size is now checked first.
#[test]
fn an_inline_tensor_is_checked_against_its_bytes_before_allocating() {
    for shape in [vec![1i64 << 30, 1 << 30], vec![1 << 35]] {
        let v = Value::Tensor {
            shape: shape.clone(),
            dtype: DataType::uint(8),
            data: vec![1, 2, 3],
        };
        let e = v.into_any(&Nothing).unwrap_err();
        let need = shape.iter().product::<i64>();
        assert_eq!(e.kind(), "ValueError");
        assert_eq!(
            e.message(),
            format!("a tensor {shape:?} uint8 needs {need} bytes but 3 came")
        );
    }
    let v = Value::Tensor {
        shape: vec![3],
        dtype: DataType::uint(8),
        data: vec![1, 2, 3],
    };
    let t: Tensor = v.into_any(&Nothing).unwrap().try_as().unwrap();
    assert_eq!(t.to_vec::<u8>().unwrap(), [1, 2, 3]);
}

/// A shared-memory tensor is a descriptor its sender keeps: a descriptor whose size was not
/// sealed was mapped, and the sender could then truncate the file under the mapping, so that the
/// receiver's next read of the tensor died of SIGBUS. Every segment is now a memfd sealed at its
/// size, and an unsealed descriptor is refused before its size is read.
#[test]
fn an_unsealed_shared_memory_descriptor_is_refused() {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: a new memfd with a valid name, owned here; sized as a 4-byte tensor.
    let unsealed = unsafe {
        let fd = libc::memfd_create(c"hostile".as_ptr(), libc::MFD_CLOEXEC);
        assert!(fd >= 0);
        assert_eq!(libc::ftruncate(fd, 4), 0);
        OwnedFd::from_raw_fd(fd)
    };
    for shared in [false, true] {
        let e = shm_tensor::open(&unsealed, &[4], DataType::uint(8), shared).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(
            e.message().starts_with(
                "a shared-memory segment must be a memfd sealed at its size (F_SEAL_SHRINK and \
                 F_SEAL_GROW), which this descriptor is not (seals "
            ),
            "{}",
            e.message()
        );
    }
    // What the runtime sends is sealed: it maps, and nobody can shrink it.
    let t = Tensor::from_slice(&[1u8, 2, 3, 4], &[4]).unwrap();
    let fd = shm_tensor::share(&t).unwrap();
    // SAFETY: resizing a descriptor we hold (refused by its seals).
    assert_ne!(unsafe { libc::ftruncate(fd.as_raw_fd(), 0) }, 0);
    let back = shm_tensor::open(&fd, &[4], DataType::uint(8), false).unwrap();
    assert_eq!(back.to_vec::<u8>().unwrap(), [1, 2, 3, 4]);
}
