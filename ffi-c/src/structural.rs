//! Exports of the structural part of the C API (implemented in `rffi_core::capi::structural`):
//! structural equality and hashing, the first mismatch, recursive comparison, deep copy, repr
//! and JSON graphs. Values are borrowed for the call; results are owned by the caller.
use rffi_core::abi::*;
use rffi_core::capi;

/// Writes to `*out` 1 if `lhs` and `rhs` are structurally equal (same shape and contents, objects
/// by their fields; cycles and shared parts handled), else 0. `flags`: `kRFFIStructural*`. A
/// tensor on a device compared by content, or a value nested deeper than the stack allows
/// (RecursionError), is an error.
///
/// # Safety
/// `lhs` and `rhs` must point to valid values; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIStructuralEqual(
    lhs: *const RFFIAny,
    rhs: *const RFFIAny,
    flags: i32,
    out: *mut i32,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::structural::RFFIStructuralEqual(lhs, rhs, flags, out) }
}

/// Writes the structural hash of `value` to `*out`: structurally equal values (under the same
/// `flags`) hash equal; the hash is the same in every process.
///
/// # Safety
/// `value` must point to a valid value; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIStructuralHash(
    value: *const RFFIAny,
    flags: i32,
    out: *mut u64,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::structural::RFFIStructuralHash(value, flags, out) }
}

/// Writes to `*lhs_path` and `*rhs_path` where `lhs` and `rhs` first differ: two
/// `ffi.reflection.AccessPath` objects (the global function `ffi.AccessPathToString` prints one as
/// `root.body[2].name`), or None to both when they are structurally equal.
///
/// # Safety
/// `lhs` and `rhs` must point to valid values; both out-slots must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIStructuralGetFirstMismatch(
    lhs: *const RFFIAny,
    rhs: *const RFFIAny,
    flags: i32,
    lhs_path: *mut RFFIAny,
    rhs_path: *mut RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::structural::RFFIStructuralGetFirstMismatch(lhs, rhs, flags, lhs_path, rhs_path) }
}

/// Compares `lhs` with `rhs` as values (objects by their fields in order, sequences
/// lexicographically, `None` first) and writes -1 (less), 0 (equal), 1 (greater) or, when
/// `ordering` is 0, 2 (different) to `*out`. With `ordering` set, values that have no order
/// (different types, maps that differ, NaN) are a TypeError.
///
/// # Safety
/// `lhs` and `rhs` must point to valid values; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIRecursiveCompare(
    lhs: *const RFFIAny,
    rhs: *const RFFIAny,
    ordering: i32,
    out: *mut i32,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::structural::RFFIRecursiveCompare(lhs, rhs, ordering, out) }
}

/// Writes the hash matching `RFFIRecursiveCompare`'s equality to `*out`.
///
/// # Safety
/// `value` must point to a valid value; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIRecursiveHash(value: *const RFFIAny, out: *mut u64) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::structural::RFFIRecursiveHash(value, out) }
}

/// Writes a deep copy of `value` to `*out`: new containers and objects, with the original's
/// sharing and cycles; strings, tensors and functions are shared. A type that cannot be created
/// from its fields is a TypeError naming it.
///
/// # Safety
/// `value` must point to a valid value; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIDeepCopy(value: *const RFFIAny, out: *mut RFFIAny) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::structural::RFFIDeepCopy(value, out) }
}

/// Writes the field-wise text of `value` to `*out` (a String): `my.Point(x=1, y=2)`, shared
/// objects printed once (`#1=...`, then `#1`), cycles as `...`. `width` 0 prints one line;
/// otherwise parts longer than `width` are broken over indented lines.
///
/// # Safety
/// `value` must point to a valid value; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIReprPrint(
    value: *const RFFIAny,
    width: i32,
    out: *mut RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::structural::RFFIReprPrint(value, width, out) }
}

/// Writes the JSON graph of `value` to `*out` (a String), with `metadata` (NULL: none) under
/// `"metadata"`. Shared parts stay shared and cycles survive; CPU tensors are included (base64).
/// A value that cannot be written (a function, a module, device memory) is a TypeError naming its
/// type and its place in the graph.
///
/// # Safety
/// `value` must point to a valid value; `metadata` must be NULL or point to a valid value; `out`
/// must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIToJSONGraphString(
    value: *const RFFIAny,
    metadata: *const RFFIAny,
    out: *mut RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::structural::RFFIToJSONGraphString(value, metadata, out) }
}

/// Writes the value of a JSON graph (from `RFFIToJSONGraphString`, or tvm-ffi's) to `*out`.
/// Malformed input is a ValueError saying which node is wrong and why.
///
/// # Safety
/// `json` must point to a valid byte array; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIFromJSONGraphString(
    json: *const RFFIByteArray,
    out: *mut RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::structural::RFFIFromJSONGraphString(json, out) }
}
