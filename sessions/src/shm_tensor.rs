//! Tensors in shared memory, passed between a controller and its workers as memfd descriptors
//! (never by name, so nothing is left in `/dev/shm`; the memory goes when the last descriptor
//! and mapping of it do, however the processes end).
//!
//! - A host tensor passed to a call is written once into a new memfd; each worker maps it
//!   privately (copy-on-write) as a tensor of its own.
//! - `sess.empty` on the CPU makes one memfd per worker: the worker maps it shared as its tensor
//!   and the controller keeps a shared mapping of every one (`SharedTensor`), so a host copy to or
//!   from a worker's tensor is one `memcpy` in the controller.
//! - A tensor fetched from a worker comes back as a memfd holding a copy of it.
//!
//! Workers that may be on another host (connected by TCP, as a `RaySession`'s are) cannot map this
//! host's memory: their tensors travel inline in the frame (`bytes_of` and `from_bytes`).

use rffi_core::abi::{
    DLManagedTensorVersioned, DLPackVersion, DLTensor, DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION,
};
use rffi_core::{DataType, Device, Error, Result, Tensor};
use std::ffi::c_void;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

fn os_error(what: &str) -> Error {
    Error::runtime_error(format!(
        "shared memory: {what} failed: {}",
        std::io::Error::last_os_error()
    ))
}

/// Seals every shared-memory file carries: its size is fixed once made, so that no process
/// holding the descriptor can shrink it under another's mapping (whose reads past the new end
/// would be a SIGBUS).
const SIZE_SEALS: i32 = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;

/// A new anonymous shared-memory file of `len` bytes (zero-filled, close-on-exec), sealed at that
/// size (`SIZE_SEALS`).
pub fn memfd(name: &str, len: usize) -> Result<OwnedFd> {
    let c = std::ffi::CString::new(name).map_err(|_| Error::value_error("NUL in a name"))?;
    // SAFETY: creating a new anonymous file with a valid name.
    let fd = unsafe { libc::memfd_create(c.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(os_error("memfd_create"));
    }
    // SAFETY: the descriptor is new and ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sizing our own file (sparse: pages cost memory once touched).
    if len > 0 && unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(Error::runtime_error(format!(
            "shared memory: sizing a segment of {len} bytes failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: sealing our own file.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, SIZE_SEALS) } != 0 {
        return Err(os_error("sealing a shared-memory segment"));
    }
    Ok(fd)
}

/// Refuses a descriptor whose size is not sealed (`SIZE_SEALS`): whoever sent it could shrink it
/// while it is mapped here. Checked before its size is read, which the seals then keep.
pub(crate) fn check_sealed(fd: BorrowedFd<'_>) -> Result<()> {
    // SAFETY: a query on a descriptor we hold.
    let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
    if seals < 0 || seals & SIZE_SEALS != SIZE_SEALS {
        return Err(Error::value_error(format!(
            "a shared-memory segment must be a memfd sealed at its size (F_SEAL_SHRINK and \
             F_SEAL_GROW), which this descriptor is not (seals {seals}): its sender could \
             truncate it under the mapping"
        )));
    }
    Ok(())
}

/// The bytes of a compact tensor of `shape` and `dtype`.
pub fn nbytes(shape: &[i64], dtype: DataType) -> Result<usize> {
    let numel = shape
        .iter()
        .try_fold(1i64, |a, d| if *d < 0 { None } else { a.checked_mul(*d) })
        .ok_or_else(|| Error::value_error(format!("bad tensor shape {shape:?}")))?;
    let len = (numel as u128 * dtype.bits() as u128 * dtype.lanes() as u128).div_ceil(8);
    usize::try_from(len).map_err(|_| Error::value_error("tensor too large"))
}

/// A mapping of a shared-memory file, unmapped on drop.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a mapping is plain memory; whoever reads or writes it synchronizes by other means (the
// session's command order).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd`: `shared` (writes reach the file) or private (copy-on-write).
    /// The file must be sealed at its size (see `memfd`).
    pub fn new(fd: BorrowedFd<'_>, len: usize, shared: bool) -> Result<Mapping> {
        if len == 0 {
            return Ok(Mapping {
                ptr: NonNull::<u8>::dangling().as_ptr(),
                len: 0,
            });
        }
        check_sealed(fd)?;
        let flags = if shared {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        };
        // SAFETY: a new mapping of a descriptor we hold; the kernel checks the rest.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        Ok(Mapping { ptr: p.cast(), len })
    }

    /// New private memory of `len` bytes for a host tensor (zero-filled). From 2 MiB up it is
    /// aligned to 2 MiB and advised for transparent huge pages: a fetched tensor is written
    /// into fresh memory, and faulting it in 2 MiB pages instead of 4 KiB ones makes filling
    /// 64 MiB 2-3x faster (the page faults, not the copy, were most of a fetch).
    pub fn anonymous(len: usize) -> Result<Mapping> {
        const HUGE: usize = 2 << 20;
        if len == 0 {
            return Ok(Mapping {
                ptr: NonNull::<u8>::dangling().as_ptr(),
                len: 0,
            });
        }
        let slack = if len >= HUGE { HUGE } else { 0 };
        let total = len
            .checked_add(slack)
            .ok_or_else(|| Error::value_error(format!("{len} bytes is too large to map")))?;
        // SAFETY: a new private anonymous mapping; the kernel checks the rest.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        if slack == 0 {
            return Ok(Mapping { ptr: p.cast(), len });
        }
        let base = p as usize;
        let start = base.next_multiple_of(HUGE);
        // SAFETY: both ranges lie inside the mapping just made and outside [start, start + len),
        // the part kept; trimming them leaves exactly that part mapped. The advice is a hint
        // on our own mapping (an error there only means 4 KiB pages).
        unsafe {
            if start > base {
                libc::munmap(p, start - base);
            }
            let end = start + len;
            if base + total > end {
                libc::munmap(end as *mut c_void, base + total - end);
            }
            libc::madvise(start as *mut c_void, len, libc::MADV_HUGEPAGE);
        }
        Ok(Mapping {
            ptr: start as *mut u8,
            len,
        })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmapping our own mapping, once.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }
}

fn check_host(t: &Tensor, what: &str) -> Result<()> {
    if t.device() != Device::cpu() || !t.is_contiguous() {
        return Err(Error::value_error(format!(
            "{what} must be a contiguous CPU tensor, got {:?} on {}",
            t.shape(),
            t.device().type_name()
        )));
    }
    Ok(())
}

/// A new memfd holding a copy of a contiguous CPU tensor's bytes.
pub fn share(t: &Tensor) -> Result<OwnedFd> {
    check_host(t, "a tensor sent to or fetched from workers")?;
    let n = t.nbytes();
    let fd = memfd("rffi-tensor", n)?;
    let mut done = 0;
    let src = t.element_ptr().cast::<u8>();
    while done < n {
        // SAFETY: writing `n - done` bytes from the live tensor's memory into our file.
        let w = unsafe {
            libc::pwrite(
                fd.as_raw_fd(),
                src.add(done).cast(),
                n - done,
                done as libc::off_t,
            )
        };
        if w < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(os_error("writing a tensor"));
        }
        done += w as usize;
    }
    Ok(fd)
}

/// The bytes of a contiguous CPU tensor, to travel inline in a frame (at most `max` bytes).
pub fn bytes_of(t: &Tensor, max: usize) -> Result<Vec<u8>> {
    check_host(t, "a tensor sent to or fetched from workers")?;
    let n = t.nbytes();
    if n > max {
        return Err(Error::value_error(format!(
            "a tensor of {n} bytes is larger than a session frame ({max} bytes) can carry to a \
             worker on another host; send it in parts or load it there (load_params)"
        )));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: a contiguous CPU tensor has `n` readable bytes at its element pointer, alive while
    // `t` is borrowed.
    Ok(unsafe { std::slice::from_raw_parts(t.element_ptr().cast::<u8>(), n) }.to_vec())
}

/// A new CPU tensor of `shape` and `dtype` holding `data` (whose size must match).
pub fn from_bytes(shape: &[i64], dtype: DataType, data: &[u8]) -> Result<Tensor> {
    // Checked before allocating: the shape comes from a frame, and may claim any size.
    let need = nbytes(shape, dtype)?;
    if need != data.len() {
        return Err(Error::value_error(format!(
            "a tensor {shape:?} {dtype} needs {need} bytes but {} came",
            data.len()
        )));
    }
    let t = Tensor::empty(shape, dtype, Device::cpu())?;
    if !data.is_empty() {
        // SAFETY: the new tensor owns `data.len()` contiguous bytes; the two never overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), t.element_ptr().cast::<u8>(), data.len())
        };
    }
    Ok(t)
}

/// What a mapped tensor owns: the mapping and the shape the DLTensor points at.
struct Mapped {
    _map: Mapping,
    shape: Vec<i64>,
    managed: DLManagedTensorVersioned,
}

unsafe extern "C" fn unmap(m: *mut DLManagedTensorVersioned) {
    // SAFETY: `manager_ctx` is the Box<Mapped> made in `open`, released once by this deleter;
    // dropping it unmaps.
    drop(unsafe { Box::from_raw((*m).manager_ctx.cast::<Mapped>()) });
}

/// Maps memfd `fd` as a tensor of `shape` and `dtype`: `shared` (this tensor's writes reach every
/// mapping of the file) or private (copy-on-write). The file must have exactly the tensor's size.
pub fn open(fd: &OwnedFd, shape: &[i64], dtype: DataType, shared: bool) -> Result<Tensor> {
    let len = nbytes(shape, dtype)?;
    check_sealed(fd.as_fd())?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat on our descriptor; the struct is read only when it succeeded.
    let size = unsafe {
        if libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) != 0 {
            return Err(os_error("fstat"));
        }
        st.assume_init().st_size as u64
    };
    if size != len as u64 {
        return Err(Error::value_error(format!(
            "a shared-memory segment of {size} bytes cannot hold the tensor {shape:?} {dtype}, \
             which needs {len}"
        )));
    }
    tensor_of(Mapping::new(fd.as_fd(), len, shared)?, shape, dtype)
}

/// A tensor of `shape` and `dtype` over `map` (which holds exactly its bytes), owning it.
fn tensor_of(map: Mapping, shape: &[i64], dtype: DataType) -> Result<Tensor> {
    let ptr = if map.is_empty() {
        std::ptr::null_mut()
    } else {
        map.as_ptr().cast::<c_void>()
    };
    let mut b = Box::new(Mapped {
        _map: map,
        shape: shape.to_vec(),
        managed: DLManagedTensorVersioned {
            version: DLPackVersion {
                major: DLPACK_MAJOR_VERSION,
                minor: DLPACK_MINOR_VERSION,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(unmap),
            flags: 0,
            dl_tensor: DLTensor {
                data: ptr,
                device: Device::cpu().raw(),
                ndim: shape.len() as i32,
                dtype: dtype.raw(),
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        },
    });
    b.managed.dl_tensor.shape = b.shape.as_mut_ptr();
    let raw = Box::into_raw(b);
    // SAFETY: `raw` is a live box; the managed tensor inside points back at it, so the deleter
    // frees the box (and the mapping) once the tensor is done with it.
    unsafe {
        (*raw).managed.manager_ctx = raw.cast();
        let managed = NonNull::from(&mut (*raw).managed);
        Tensor::from_dlpack_versioned(managed, 0, false)
    }
}

/// The controller's side of a tensor that `sess.empty` made on every worker: one memfd per
/// worker, each mapped here too. Dropped when the DRef is released (the worker unmaps its side
/// when the register is freed); the memory goes with the last mapping.
pub struct SharedTensor {
    pub shape: Vec<i64>,
    pub dtype: DataType,
    pub nbytes: usize,
    maps: Vec<Mapping>,
}

impl SharedTensor {
    /// A tensor of `shape` and `dtype` for each of `world` workers: the controller's side and
    /// the descriptors to send, worker by worker.
    pub fn create(world: usize, shape: &[i64], dtype: DataType) -> Result<(Self, Vec<OwnedFd>)> {
        let nbytes = nbytes(shape, dtype)?;
        let mut fds = Vec::with_capacity(world);
        let mut maps = Vec::with_capacity(world);
        for _ in 0..world {
            let fd = memfd("rffi-tensor", nbytes)?;
            maps.push(Mapping::new(fd.as_fd(), nbytes, true)?);
            fds.push(fd);
        }
        let t = SharedTensor {
            shape: shape.to_vec(),
            dtype,
            nbytes,
            maps,
        };
        Ok((t, fds))
    }

    /// Worker `rank`'s tensor, as the controller maps it.
    pub fn ptr(&self, rank: usize) -> *mut u8 {
        self.maps[rank].as_ptr()
    }

    /// A new host tensor holding a copy of worker `rank`'s.
    pub fn read(&self, rank: usize) -> Result<Tensor> {
        let map = Mapping::anonymous(self.nbytes)?;
        // SAFETY: both hold `nbytes` bytes; the new mapping is ours alone.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr(rank), map.as_ptr(), self.nbytes) };
        tensor_of(map, &self.shape, self.dtype)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_round_trips_and_private_writes_stay_private() {
        let t = Tensor::from_slice(&[1f32, 2., 3., 4.], &[2, 2]).unwrap();
        let fd = share(&t).unwrap();
        let a = open(&fd, &[2, 2], DataType::float(32), false).unwrap();
        let b = open(&fd, &[2, 2], DataType::float(32), false).unwrap();
        // SAFETY: no other slice of `a` is alive.
        unsafe { a.as_mut_slice::<f32>().unwrap()[0] = 9.0 };
        assert_eq!(a.to_vec::<f32>().unwrap(), [9., 2., 3., 4.]);
        assert_eq!(b.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
        drop(fd);
        // Mapped tensors outlive the descriptor.
        assert_eq!(b.to_vec::<f32>().unwrap()[3], 4.0);
    }

    #[test]
    fn large_fetched_tensors_are_huge_page_aligned_copies() {
        let n = (3 << 20) / 4 + 5;
        let (st, fds) = SharedTensor::create(1, &[n], DataType::int(32)).unwrap();
        let w0 = open(&fds[0], &[n], DataType::int(32), true).unwrap();
        // SAFETY: the slice is the only one alive.
        unsafe { w0.as_mut_slice::<i32>().unwrap()[n as usize - 1] = 11 };
        let got = st.read(0).unwrap();
        assert_eq!(got.element_ptr() as usize % (2 << 20), 0);
        let v = got.to_vec::<i32>().unwrap();
        assert_eq!((v.len(), v[0], v[n as usize - 1]), (n as usize, 0, 11));
        // A copy: later writes on the worker's side do not reach it.
        // SAFETY: as above.
        unsafe { w0.as_mut_slice::<i32>().unwrap()[0] = 5 };
        assert_eq!(got.to_vec::<i32>().unwrap()[0], 0);
    }

    #[test]
    fn shared_tensors_are_one_memory_on_both_sides() {
        let (st, fds) = SharedTensor::create(2, &[3], DataType::int(32)).unwrap();
        let w1 = open(&fds[1], &[3], DataType::int(32), true).unwrap();
        drop(fds);
        // SAFETY: the slice is the only one alive.
        unsafe { w1.as_mut_slice::<i32>().unwrap()[2] = 7 };
        assert_eq!(st.read(1).unwrap().to_vec::<i32>().unwrap(), [0, 0, 7]);
        assert_eq!(st.read(0).unwrap().to_vec::<i32>().unwrap(), [0, 0, 0]);
    }

    #[test]
    fn inline_tensors_round_trip_and_check_sizes() {
        let t = Tensor::from_slice(&[1f32, 2., 3.], &[3]).unwrap();
        let b = bytes_of(&t, 1024).unwrap();
        let u = from_bytes(&[3], DataType::float(32), &b).unwrap();
        assert_eq!(u.to_vec::<f32>().unwrap(), [1., 2., 3.]);
        let e = from_bytes(&[4], DataType::float(32), &b).unwrap_err();
        assert!(
            e.message().contains("needs 16 bytes but 12 came"),
            "{}",
            e.message()
        );
        let e = bytes_of(&t, 8).unwrap_err();
        assert!(
            e.message().contains("12 bytes is larger"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn sizes_must_match() {
        let t = Tensor::from_slice(&[1f32, 2.], &[2]).unwrap();
        let fd = share(&t).unwrap();
        let e = open(&fd, &[3], DataType::float(32), false).unwrap_err();
        assert!(e.message().contains("of 8 bytes"), "{}", e.message());
        let e = nbytes(&[-1], DataType::float(32)).unwrap_err();
        assert!(e.message().contains("bad tensor shape"), "{}", e.message());
    }
}
