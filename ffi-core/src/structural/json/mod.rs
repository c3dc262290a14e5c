//! JSON graphs of values (tvm-ffi's `ToJSONGraph` format, with a version): any value, containers
//! and objects of registered types included, written as a list of nodes that refer to each
//! other by index, so shared parts stay shared and cycles survive:
//!
//! ```json
//! {"version": 1, "root_index": 2,
//!  "nodes": [{"type": "int", "data": 1},
//!            {"type": "ffi.String", "data": "x"},
//!            {"type": "ffi.Array", "data": [0, 1, 0]}]}
//! ```
//!
//! Node types: `None`, `bool`, `int`, `float`, `DataType` (`"float32"`), `Device`
//! (`[device_type, device_id]`), `ffi.String`, `ffi.Bytes` (base64), `ffi.Shape` (the
//! dimensions), `ffi.Tensor` (`{"dtype", "shape", "data": base64 of the row-major bytes}`),
//! `ffi.Array` / `ffi.List` (node indices), `ffi.Map` / `ffi.Dict` (key and value indices,
//! alternating), and objects by their type key, whose `data` maps each field to its value
//! (int, bool, float and dtype fields inline) or node index. Reading checks every part and
//! reports the first problem as a ValueError; a graph without `version` (tvm-ffi's) reads as
//! version 1.

mod base64;
mod decode;
mod encode;

pub use decode::from_json_graph;
pub use encode::to_json_graph;

/// The format version written, and the newest read.
pub(crate) const JSON_GRAPH_VERSION: i64 = 1;

/// Whether a field of this static type index is written inline (not as a node).
pub(crate) fn inline_field(static_index: i32) -> bool {
    use crate::abi::*;
    matches!(
        static_index,
        kRFFINone | kRFFIInt | kRFFIBool | kRFFIFloat | kRFFIDataType
    )
}
