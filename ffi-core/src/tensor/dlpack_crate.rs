//! Conversions between rffi tensors and the types of the `dlpack` crate (cargo feature `dlpack`).
//!
//! That crate describes DLPack's legacy (pre-1.0) structs: `dlpack::ManagedTensor` is
//! `DLManagedTensor`, `dlpack::Tensor` is `DLTensor`, `dlpack::DataType` is `DLDataType` and
//! `dlpack::Context` is `DLDevice`. The layouts agree field by field (asserted at compile time
//! below), so a managed tensor passes between the two without copying anything.

use super::Tensor;
use crate::abi::{DLDataType, DLDevice, DLManagedTensor, DLTensor};
use crate::error::Result;
use core::mem::{offset_of, size_of};
use std::ptr::NonNull;

macro_rules! same_layout {
    ($ours:ty, $theirs:ty, $($a:ident = $b:ident),*) => {
        const _: () = assert!(size_of::<$ours>() == size_of::<$theirs>());
        $(const _: () = assert!(offset_of!($ours, $a) == offset_of!($theirs, $b));)*
    };
}
same_layout!(
    DLDataType,
    dlpack::DataType,
    code = code,
    bits = bits,
    lanes = lanes
);
same_layout!(
    DLDevice,
    dlpack::Context,
    device_type = device_type,
    device_id = device_id
);
same_layout!(
    DLTensor,
    dlpack::Tensor,
    data = data,
    device = ctx,
    ndim = ndim,
    dtype = dtype,
    shape = shape,
    strides = strides,
    byte_offset = byte_offset
);
same_layout!(
    DLManagedTensor,
    dlpack::ManagedTensor,
    dl_tensor = dl_tensor,
    manager_ctx = manager_ctx,
    deleter = deleter
);

impl Tensor {
    /// Imports a `dlpack::ManagedTensor` without copying, as [`Tensor::from_dlpack`] does (the
    /// same checks; ownership passes to rffi in every case).
    ///
    /// # Safety
    /// `managed` must be a valid managed tensor, not used by the caller afterwards.
    pub unsafe fn from_dlpack_crate(
        managed: NonNull<dlpack::ManagedTensor>,
        require_alignment: usize,
        require_contiguous: bool,
    ) -> Result<Tensor> {
        // SAFETY: the two structs have one layout (asserted above); the contract is forwarded.
        unsafe { Tensor::from_dlpack(managed.cast(), require_alignment, require_contiguous) }
    }

    /// Exports as a `dlpack::ManagedTensor` sharing the data, as [`Tensor::to_dlpack`] does: the
    /// caller owns the result and calls its deleter once. A read-only tensor is refused.
    pub fn to_dlpack_crate(&self) -> Result<NonNull<dlpack::ManagedTensor>> {
        // The deleter is always set on export, as the crate's non-nullable field requires.
        self.to_dlpack().map(NonNull::cast)
    }
}

impl From<DLDataType> for dlpack::DataType {
    fn from(d: DLDataType) -> Self {
        dlpack::DataType {
            code: d.code,
            bits: d.bits,
            lanes: d.lanes,
        }
    }
}

impl From<dlpack::DataType> for DLDataType {
    fn from(d: dlpack::DataType) -> Self {
        DLDataType {
            code: d.code,
            bits: d.bits,
            lanes: d.lanes,
        }
    }
}

impl From<DLDevice> for dlpack::Context {
    fn from(d: DLDevice) -> Self {
        dlpack::Context {
            device_type: d.device_type,
            device_id: d.device_id,
        }
    }
}

impl From<dlpack::Context> for DLDevice {
    fn from(d: dlpack::Context) -> Self {
        DLDevice {
            device_type: d.device_type,
            device_id: d.device_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DataType, Device};

    #[test]
    fn round_trip_through_the_dlpack_crate_shares_the_data() {
        let t = Tensor::empty(&[2, 3], DataType::float(32), Device::cpu()).unwrap();
        let exported = t.to_dlpack_crate().unwrap();
        // SAFETY: a managed tensor just exported, read before it is handed back.
        let theirs = unsafe { &exported.as_ref().dl_tensor };
        assert_eq!(theirs.data, t.dl_tensor().data);
        assert_eq!(theirs.ndim, 2);
        assert_eq!(theirs.dtype.code, dlpack::data_type_codes::FLOAT);
        assert_eq!(theirs.ctx.device_type, dlpack::device_type_codes::CPU);
        // SAFETY: the exported tensor, given back (rffi calls its deleter).
        let back = unsafe { Tensor::from_dlpack_crate(exported, 0, true) }.unwrap();
        assert_eq!(back.dl_tensor().data, t.dl_tensor().data);
        assert_eq!(back.shape(), &[2, 3]);
    }

    #[test]
    fn dtype_and_device_convert_both_ways() {
        let dt = DLDataType {
            code: 4,
            bits: 16,
            lanes: 1,
        };
        let theirs: dlpack::DataType = dt.into();
        assert_eq!((theirs.code, theirs.bits, theirs.lanes), (4, 16, 1));
        assert_eq!(DLDataType::from(theirs), dt);
        let dev = DLDevice {
            device_type: 2,
            device_id: 3,
        };
        let ctx: dlpack::Context = dev.into();
        assert_eq!(DLDevice::from(ctx), dev);
    }
}
