//! Host tensors passed to a session call travel through shared memory when the workers are on
//! this host: the controller copies the tensor once into a `/dev/shm` segment, the command carries
//! the segment's name, shape and dtype, and each worker maps it privately (copy-on-write) as a
//! tensor of its own. The controller unlinks its segments at the next full sync (every worker has
//! mapped them by then) and at shutdown.
//!
//! Workers that may be on another host (connected by TCP, as a `RaySession`'s are) cannot map this
//! host's files: their tensors travel inline in the frame (`bytes_of` and `from_bytes`).

use rffi_core::abi::{
    DLManagedTensorVersioned, DLPackVersion, DLTensor, DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION,
};
use rffi_core::{DataType, Device, Error, Result, Tensor};
use std::ffi::{c_void, CString};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// A segment the controller made; unlinked when dropped.
pub struct Segment {
    pub name: String,
}

impl Drop for Segment {
    fn drop(&mut self) {
        if let Ok(c) = CString::new(self.name.as_str()) {
            // SAFETY: unlinking a path we created.
            unsafe { libc::unlink(c.as_ptr()) };
        }
    }
}

fn os_error(what: &str, name: &str) -> Error {
    Error::runtime_error(format!(
        "{what} of shared-memory segment {name} failed: {}",
        std::io::Error::last_os_error()
    ))
}

/// Copies a contiguous CPU tensor into a new segment.
pub fn share(t: &Tensor) -> Result<Segment> {
    check_host(t)?;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let name = format!(
        "/dev/shm/rffi-session-{pid}-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let seg = Segment { name };
    let c = CString::new(seg.name.as_str()).expect("no NUL in the name");
    let n = t.nbytes();
    // SAFETY: creating a new file with a valid path.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(os_error("creation", &seg.name));
    }
    let result = (|| {
        if n == 0 {
            return Ok(());
        }
        // SAFETY: sizing and mapping the file we just opened, then copying `n` bytes from the
        // live tensor into the fresh mapping of exactly `n` bytes.
        unsafe {
            if libc::ftruncate(fd, n as libc::off_t) != 0 {
                return Err(os_error("sizing", &seg.name));
            }
            let p = libc::mmap(
                std::ptr::null_mut(),
                n,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            );
            if p == libc::MAP_FAILED {
                return Err(os_error("mapping", &seg.name));
            }
            std::ptr::copy_nonoverlapping(t.element_ptr().cast::<u8>(), p.cast::<u8>(), n);
            libc::munmap(p, n);
        }
        Ok(())
    })();
    // SAFETY: closing our descriptor.
    unsafe { libc::close(fd) };
    result.map(|()| seg)
}

fn check_host(t: &Tensor) -> Result<()> {
    if t.device() != Device::cpu() || !t.is_contiguous() {
        return Err(Error::value_error(format!(
            "a tensor sent to workers must be a contiguous CPU tensor, got {:?} on {}",
            t.shape(),
            t.device().type_name()
        )));
    }
    Ok(())
}

/// The bytes of a contiguous CPU tensor, to travel inline in a frame (at most `max` bytes).
pub fn bytes_of(t: &Tensor, max: usize) -> Result<Vec<u8>> {
    check_host(t)?;
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
    let t = Tensor::empty(shape, dtype, Device::cpu())?;
    if t.nbytes() != data.len() {
        return Err(Error::value_error(format!(
            "a tensor {shape:?} {dtype} needs {} bytes but {} came",
            t.nbytes(),
            data.len()
        )));
    }
    if !data.is_empty() {
        // SAFETY: the new tensor owns `data.len()` contiguous bytes; the two never overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), t.element_ptr().cast::<u8>(), data.len())
        };
    }
    Ok(t)
}

/// What a worker's mapped tensor owns: the mapping and the shape the DLTensor points at.
struct Mapped {
    ptr: *mut c_void,
    len: usize,
    shape: Vec<i64>,
    managed: DLManagedTensorVersioned,
}

unsafe extern "C" fn unmap(m: *mut DLManagedTensorVersioned) {
    // SAFETY: `manager_ctx` is the Box<Mapped> made in `open`, released once by this deleter.
    let b = unsafe { Box::from_raw((*m).manager_ctx.cast::<Mapped>()) };
    if b.len > 0 {
        // SAFETY: unmapping the mapping made in `open`.
        unsafe { libc::munmap(b.ptr, b.len) };
    }
}

/// Maps segment `name` as a tensor of `shape` and `dtype` (private: writes stay this worker's).
pub fn open(name: &str, shape: &[i64], dtype: DataType) -> Result<Tensor> {
    if !name.starts_with("/dev/shm/rffi-session-") || name.contains("..") {
        return Err(Error::value_error(format!(
            "{name:?} is not a session shared-memory segment"
        )));
    }
    let numel = shape
        .iter()
        .try_fold(1i64, |a, d| if *d < 0 { None } else { a.checked_mul(*d) })
        .ok_or_else(|| Error::value_error(format!("bad tensor shape {shape:?}")))?;
    let len = (numel as u128 * dtype.bits() as u128 * dtype.lanes() as u128).div_ceil(8);
    let len = usize::try_from(len).map_err(|_| Error::value_error("tensor too large"))?;
    let c = CString::new(name).map_err(|_| Error::value_error("NUL in a segment name"))?;
    // SAFETY: opening a path read-only.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(os_error("opening", name));
    }
    let mapped = (|| {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat on our descriptor; the struct is read only when it succeeded.
        let size = unsafe {
            if libc::fstat(fd, st.as_mut_ptr()) != 0 {
                return Err(os_error("stat", name));
            }
            st.assume_init().st_size as u64
        };
        if size != len as u64 {
            return Err(Error::value_error(format!(
                "shared-memory segment {name} has {size} bytes, the tensor {shape:?} {dtype} \
                 needs {len}"
            )));
        }
        if len == 0 {
            return Ok(std::ptr::null_mut());
        }
        // SAFETY: a private (copy-on-write) mapping of the whole file.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_error("mapping", name));
        }
        Ok(p)
    })();
    // SAFETY: closing our descriptor (the mapping stays).
    unsafe { libc::close(fd) };
    let ptr = mapped?;
    let mut b = Box::new(Mapped {
        ptr,
        len,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_round_trips_and_writes_stay_private() {
        let t = Tensor::from_slice(&[1f32, 2., 3., 4.], &[2, 2]).unwrap();
        let seg = share(&t).unwrap();
        let a = open(&seg.name, &[2, 2], DataType::float(32)).unwrap();
        let b = open(&seg.name, &[2, 2], DataType::float(32)).unwrap();
        // SAFETY: no other slice of `a` is alive.
        unsafe { a.as_mut_slice::<f32>().unwrap()[0] = 9.0 };
        assert_eq!(a.to_vec::<f32>().unwrap(), [9., 2., 3., 4.]);
        assert_eq!(b.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
        let name = seg.name.clone();
        drop(seg);
        assert!(!std::path::Path::new(&name).exists());
        // Mapped tensors outlive the name.
        assert_eq!(b.to_vec::<f32>().unwrap()[3], 4.0);
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
    fn bad_names_and_sizes_are_errors() {
        let e = open("/etc/passwd", &[1], DataType::float(32)).unwrap_err();
        assert!(e.message().contains("not a session"), "{}", e.message());
        let t = Tensor::from_slice(&[1f32, 2.], &[2]).unwrap();
        let seg = share(&t).unwrap();
        let e = open(&seg.name, &[3], DataType::float(32)).unwrap_err();
        assert!(e.message().contains("has 8 bytes"), "{}", e.message());
    }
}
