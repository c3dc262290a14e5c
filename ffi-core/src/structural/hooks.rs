//! The recursive comparisons' per-type hooks, tvm-ffi's type attributes:
//! `__ffi_eq__(lhs, rhs, fn_eq) -> bool`, `__ffi_compare__(lhs, rhs, fn_cmp) -> int` (below,
//! at or above 0) and `__ffi_hash__(obj, fn_hash) -> int`. A type with one is compared or hashed
//! by it instead of field by field; the function it is given compares or hashes a nested value
//! the same recursive way. `==` uses `__ffi_eq__`, else `__ffi_compare__`; ordering uses
//! `__ffi_compare__`; a type with either but no `__ffi_hash__` cannot be hashed (equal values
//! must hash alike). `__ffi_repr__(obj, fn_repr) -> str` prints an object in `repr`.

use super::compare::{recursive_compare, recursive_eq, Compared};
use super::hash::recursive_hash;
use crate::any::{Any, AnyView};
use crate::error::{Error, Result};
use crate::reflection::type_attr;
use crate::type_registry::type_name;
use crate::Function;
use rustc_hash::FxHashMap;

/// The hooks of one type.
#[derive(Default)]
pub(crate) struct Hooks {
    pub(crate) eq: Option<Function>,
    pub(crate) compare: Option<Function>,
    pub(crate) hash: Option<Function>,
    pub(crate) repr: Option<Function>,
}

/// The hooks of the types met in one operation, looked up once each.
#[derive(Default)]
pub(crate) struct HookCache(FxHashMap<i32, Hooks>);

impl HookCache {
    pub(crate) fn of(&mut self, index: i32) -> Result<&Hooks> {
        if let std::collections::hash_map::Entry::Vacant(slot) = self.0.entry(index) {
            let get = |name: &str| -> Result<Option<Function>> {
                type_attr(index, name)?
                    .map(|v| {
                        v.try_as::<Function>().map_err(|_| {
                            Error::type_error(format!(
                                "the `{name}` attribute of `{}` is not a function",
                                type_name(index)
                            ))
                        })
                    })
                    .transpose()
            };
            let hooks = Hooks {
                eq: get("__ffi_eq__")?,
                compare: get("__ffi_compare__")?,
                hash: get("__ffi_hash__")?,
                repr: get("__ffi_repr__")?,
            };
            slot.insert(hooks);
        }
        Ok(&self.0[&index])
    }
}

impl Hooks {
    /// `l` against `r` (objects of this type) by the hooks, or `None` where they do not say.
    pub(crate) fn compare(
        &self,
        l: &AnyView<'_>,
        r: &AnyView<'_>,
        ordering: bool,
    ) -> Result<Option<Compared>> {
        let args =
            |f: Function| -> Result<[Any; 3]> { Ok([l.to_owned()?, r.to_owned()?, f.into()]) };
        if !ordering {
            if let Some(eq) = &self.eq {
                let same: bool = eq
                    .call(&args(fn_eq())?)?
                    .try_as()
                    .map_err(|_| hook_result_error(l.type_index(), "__ffi_eq__", "a bool"))?;
                return Ok(Some(if same {
                    Compared::Equal
                } else {
                    Compared::Different
                }));
            }
        }
        let Some(cmp) = &self.compare else {
            return Ok(None);
        };
        let c: i64 = cmp
            .call(&args(fn_cmp())?)?
            .try_as()
            .map_err(|_| hook_result_error(l.type_index(), "__ffi_compare__", "an int"))?;
        Ok(Some(match c.cmp(&0) {
            core::cmp::Ordering::Equal => Compared::Equal,
            _ if !ordering => Compared::Different,
            o => o.into(),
        }))
    }

    /// The hash of `v` (an object of this type) by its `__ffi_hash__`, or `None` without one;
    /// an error for a type that has an equality hook but no hash hook.
    pub(crate) fn hash(&self, v: &AnyView<'_>) -> Result<Option<u64>> {
        let Some(h) = &self.hash else {
            if self.eq.is_some() || self.compare.is_some() {
                return Err(Error::value_error(format!(
                    "RecursiveHash: type '{}' defines __ffi_eq__ or __ffi_compare__ but not \
                     __ffi_hash__; add a __ffi_hash__ hook so that RecursiveEq(a, b) implies \
                     RecursiveHash(a) == RecursiveHash(b)",
                    type_name(v.type_index())
                )));
            }
            return Ok(None);
        };
        let r: i64 = h
            .call(&[v.to_owned()?, fn_hash().into()])?
            .try_as()
            .map_err(|_| hook_result_error(v.type_index(), "__ffi_hash__", "an int"))?;
        Ok(Some(r as u64))
    }
}

impl Hooks {
    /// The text of `v` (an object of this type) by its `__ffi_repr__`, or `None` without one.
    pub(crate) fn repr(&self, v: &AnyView<'_>) -> Result<Option<String>> {
        let Some(r) = &self.repr else {
            return Ok(None);
        };
        let fn_repr = Function::from_typed(|v: Any| super::repr::repr_print(&v.view(), 0));
        let text: String = r
            .call(&[v.to_owned()?, fn_repr.into()])?
            .try_as()
            .map_err(|_| hook_result_error(v.type_index(), "__ffi_repr__", "a str"))?;
        Ok(Some(text))
    }
}

fn hook_result_error(index: i32, hook: &str, expected: &str) -> Error {
    Error::type_error(format!(
        "the {hook} hook of `{}` must return {expected}",
        type_name(index)
    ))
}

/// What a hook calls to compare nested values: `RecursiveEq`.
fn fn_eq() -> Function {
    Function::from_typed(|a: Any, b: Any| recursive_eq(&a.view(), &b.view()))
}

/// What a hook calls to order nested values: -1, 0 or 1.
fn fn_cmp() -> Function {
    Function::from_typed(|a: Any, b: Any| -> Result<i64> {
        Ok(match recursive_compare(&a.view(), &b.view(), true)? {
            Compared::Less => -1,
            Compared::Equal => 0,
            _ => 1,
        })
    })
}

/// What a hook calls to hash nested values: `RecursiveHash`.
fn fn_hash() -> Function {
    Function::from_typed(|v: Any| -> Result<i64> { Ok(recursive_hash(&v.view())? as i64) })
}
