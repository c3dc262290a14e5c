//! The process-wide environment allocator (its own test binary: installing it globally would
//! change allocation for tests running in parallel threads).

use rffi_core::abi::*;
use rffi_core::tensor::{self, RFFIDLPackSetError};
use rffi_core::{DataType, Device, Tensor};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

static GLOBAL_CALLS: AtomicUsize = AtomicUsize::new(0);
static LOCAL_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Answers every request with an error, counting the calls: enough to see which one was used.
unsafe extern "C" fn global_alloc(
    _: *mut DLTensor,
    _: *mut *mut DLManagedTensorVersioned,
    ctx: *mut c_void,
    set_error: RFFIDLPackSetError,
) -> i32 {
    GLOBAL_CALLS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the runtime passes its error callback and context.
    unsafe { set_error.unwrap()(ctx, c"RuntimeError".as_ptr(), c"global".as_ptr()) };
    -1
}

unsafe extern "C" fn local_alloc(
    _: *mut DLTensor,
    _: *mut *mut DLManagedTensorVersioned,
    ctx: *mut c_void,
    set_error: RFFIDLPackSetError,
) -> i32 {
    LOCAL_CALLS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: as above.
    unsafe { set_error.unwrap()(ctx, c"RuntimeError".as_ptr(), c"local".as_ptr()) };
    -1
}

fn who_allocates() -> String {
    Tensor::empty(&[1], DataType::float(32), Device::cuda(0))
        .unwrap_err()
        .message()
}

#[test]
fn global_allocator_serves_threads_without_their_own() {
    assert!(tensor::set_env_allocator(Some(global_alloc), true).is_none());
    assert_eq!(who_allocates(), "global");
    std::thread::spawn(|| {
        assert_eq!(who_allocates(), "global");
        // A thread's own allocator wins on that thread only.
        tensor::set_env_allocator(Some(local_alloc), false);
        assert_eq!(who_allocates(), "local");
        // Removing it falls back to the process-wide one.
        let prev = tensor::set_env_allocator(None, false);
        assert!(prev.is_some());
        assert_eq!(who_allocates(), "global");
    })
    .join()
    .unwrap();
    assert_eq!(
        (
            GLOBAL_CALLS.load(Ordering::SeqCst),
            LOCAL_CALLS.load(Ordering::SeqCst)
        ),
        (3, 1)
    );
    // Clearing both restores the built-in allocator for CPU tensors.
    tensor::set_env_allocator(None, true);
    assert!(tensor::env_allocator().is_none());
    assert!(Tensor::empty(&[1], DataType::float(32), Device::cpu()).is_ok());
}
