//! Entry points for bindings that reach `librffi.so` through a generic foreign-function layer
//! (the `rffi` Python package uses ctypes).
//!
//! Such a layer marshals every argument of every foreign call: with ctypes each pointer argument
//! costs ~25-50 ns, so `RFFIFunctionCall`'s four arguments cost ~100 ns more than one. A binding
//! that keeps a prepared frame per function (the handle already written, arguments and result in
//! the same block) calls through `RFFIFunctionCallFrame` with a single pointer instead.
use rffi_core::abi::*;
use rffi_core::capi;

/// A call prepared in one block of memory: the function, the argument count, the result slot, and
/// then `num_args` argument values (`RFFIAny`, 16 bytes each) starting right after this header
/// (at byte offset 32). The layout is fixed so a binding can fill it with plain byte writes.
#[repr(C)]
pub struct RFFICallFrame {
    /// The function to call (borrowed).
    pub func: RFFIObjectHandle,
    /// How many argument values follow the header.
    pub num_args: i32,
    /// Zero; keeps `result` 8-byte aligned.
    pub reserved: u32,
    /// Must hold no object before the call (zero it); receives the owned result.
    pub result: RFFIAny,
}

const _: () = {
    assert!(core::mem::size_of::<RFFICallFrame>() == 32);
    assert!(core::mem::offset_of!(RFFICallFrame, result) == 16);
};

/// Calls `frame->func` with the `frame->num_args` values that follow the frame header, storing the
/// result in `frame->result`: the same call, checks and outcome as
/// `RFFIFunctionCall(frame->func, args, frame->num_args, &frame->result)`.
///
/// # Safety
/// `frame` must be NULL (a ValueError) or point to a frame header followed by `num_args` valid
/// values; `func` must be NULL or a live object.
#[no_mangle]
pub unsafe extern "C" fn RFFIFunctionCallFrame(frame: *mut RFFICallFrame) -> i32 {
    if frame.is_null() {
        return capi::boundary::guard(|| {
            Err(rffi_core::Error::value_error(
                "RFFIFunctionCallFrame: `frame` is NULL",
            ))
        });
    }
    // SAFETY: a valid frame per the contract; the arguments start right after the header.
    unsafe {
        let args = frame.add(1).cast::<RFFIAny>();
        capi::function::RFFIFunctionCall(
            (*frame).func,
            args,
            (*frame).num_args,
            &raw mut (*frame).result,
        )
    }
}
