//! The recursive comparisons (tvm-ffi's `RecursiveEq`, `RecursiveLt`, ...): what `==` and `<`
//! mean for dataclass-like objects. Values compare as values (`-0.0 == 0.0`, every NaN equal to
//! every NaN), sequences and objects lexicographically (objects by their fields in order, those
//! marked compare-off skipped, or by their type's `__ffi_eq__` / `__ffi_compare__` hook),
//! `None` before everything.
//!
//! Equality never fails on a type difference (it is `false`); an order between values that have
//! none (different types, maps, NaN, functions) is a TypeError naming both; an order through a
//! cycle is a ValueError.

use super::hooks::HookCache;
use super::items::{Entries, Seq};
use super::{addr, class_of, text_of, Class, Depth, FieldCache, OnPath};
use crate::abi::*;
use crate::any::AnyView;
use crate::error::{Error, Result};
use crate::reflection::read_field;
use crate::Shape;
use core::cmp::Ordering;

/// The result of a recursive comparison: an order, or (equality only) "different".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compared {
    /// `lhs` orders before `rhs`.
    Less,
    /// Equal.
    Equal,
    /// `lhs` orders after `rhs`.
    Greater,
    /// Different, with no order asked for.
    Different,
}

impl From<Ordering> for Compared {
    fn from(o: Ordering) -> Compared {
        match o {
            Ordering::Less => Compared::Less,
            Ordering::Equal => Compared::Equal,
            Ordering::Greater => Compared::Greater,
        }
    }
}

/// Compares `lhs` with `rhs`; with `ordering`, values that have no order are a TypeError, and
/// the result is never `Different`.
pub fn recursive_compare(lhs: &AnyView<'_>, rhs: &AnyView<'_>, ordering: bool) -> Result<Compared> {
    Comparer {
        ordering,
        depth: Depth::new(if ordering {
            "recursive comparison"
        } else {
            "recursive equality"
        }),
        fields: FieldCache::default(),
        on_path: OnPath::default(),
        hooks: HookCache::default(),
    }
    .any(lhs, rhs)
}

/// Whether `lhs` and `rhs` are equal, element by element and field by field.
pub fn recursive_eq(lhs: &AnyView<'_>, rhs: &AnyView<'_>) -> Result<bool> {
    Ok(recursive_compare(lhs, rhs, false)? == Compared::Equal)
}

/// Whether `lhs` orders before `rhs` (a TypeError for values without an order).
pub fn recursive_lt(lhs: &AnyView<'_>, rhs: &AnyView<'_>) -> Result<bool> {
    Ok(recursive_compare(lhs, rhs, true)? == Compared::Less)
}

/// Whether `lhs` orders before or equals `rhs` (a TypeError for values without an order).
pub fn recursive_le(lhs: &AnyView<'_>, rhs: &AnyView<'_>) -> Result<bool> {
    Ok(recursive_compare(lhs, rhs, true)? != Compared::Greater)
}

/// Whether `lhs` orders after `rhs` (a TypeError for values without an order).
pub fn recursive_gt(lhs: &AnyView<'_>, rhs: &AnyView<'_>) -> Result<bool> {
    Ok(recursive_compare(lhs, rhs, true)? == Compared::Greater)
}

/// Whether `lhs` orders after or equals `rhs` (a TypeError for values without an order).
pub fn recursive_ge(lhs: &AnyView<'_>, rhs: &AnyView<'_>) -> Result<bool> {
    Ok(recursive_compare(lhs, rhs, true)? != Compared::Less)
}

struct Comparer {
    ordering: bool,
    depth: Depth,
    fields: FieldCache,
    on_path: OnPath,
    /// Types' `__ffi_eq__` / `__ffi_compare__` hooks (see `hooks`).
    hooks: HookCache,
}

impl Comparer {
    /// `Different`, or with `ordering` a TypeError saying why `l` and `r` have no order.
    fn unordered(&self, l: &AnyView<'_>, r: &AnyView<'_>, why: &str) -> Result<Compared> {
        if !self.ordering {
            return Ok(Compared::Different);
        }
        Err(Error::type_error(format!(
            "cannot order {} and {}: {why}",
            l.type_name(),
            r.type_name()
        )))
    }

    fn any(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<Compared> {
        let (tl, tr) = (l.type_index(), r.type_index());
        let (cl, cr) = (class_of(tl), class_of(tr));
        if tl == kRFFINone || tr == kRFFINone {
            return Ok(match (tl == kRFFINone, tr == kRFFINone) {
                (true, true) => Compared::Equal,
                _ if !self.ordering => Compared::Different,
                (true, false) => Compared::Less,
                _ => Compared::Greater,
            });
        }
        let same_family = cl == cr && matches!(cl, Class::Str | Class::Bytes);
        if tl != tr && !same_family {
            return self.unordered(l, r, "different types");
        }
        match cl {
            Class::Pod => self.pod(l, r),
            Class::Str | Class::Bytes => Ok(text_of(l).cmp(text_of(r)).into()),
            Class::Shape => {
                let (a, b) = (l.try_as::<Shape>()?, r.try_as::<Shape>()?);
                Ok(a.as_slice().cmp(b.as_slice()).into())
            }
            Class::Tensor | Class::Opaque => {
                if addr(l) == addr(r) {
                    Ok(Compared::Equal)
                } else {
                    self.unordered(l, r, "they compare by identity only")
                }
            }
            Class::Array | Class::List | Class::Map | Class::Dict | Class::Object => {
                self.node(l, r, cl)
            }
        }
    }

    fn pod(&self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<Compared> {
        let (a, b) = (l.as_raw(), r.as_raw());
        // SAFETY: in every arm, the payload member read matches the (shared) type index.
        unsafe {
            Ok(match a.type_index {
                kRFFIInt | kRFFIBool => a.v.v_int64.cmp(&b.v.v_int64).into(),
                kRFFIFloat => {
                    let (x, y) = (a.v.v_float64, b.v.v_float64);
                    if x.is_nan() || y.is_nan() {
                        if !self.ordering && x.is_nan() && y.is_nan() {
                            return Ok(Compared::Equal);
                        }
                        return self.unordered(l, r, "NaN has no order");
                    }
                    x.partial_cmp(&y)
                        .map_or(Compared::Different, Compared::from)
                }
                kRFFIDataType => {
                    let (x, y) = (a.v.v_dtype, b.v.v_dtype);
                    (x.code, x.bits, x.lanes)
                        .cmp(&(y.code, y.bits, y.lanes))
                        .into()
                }
                kRFFIDevice => {
                    let (x, y) = (a.v.v_device, b.v.v_device);
                    (x.device_type, x.device_id)
                        .cmp(&(y.device_type, y.device_id))
                        .into()
                }
                _ => (a.v.v_ptr as usize).cmp(&(b.v.v_ptr as usize)).into(),
            })
        }
    }

    fn node(&mut self, l: &AnyView<'_>, r: &AnyView<'_>, class: Class) -> Result<Compared> {
        let (al, ar) = (addr(l), addr(r));
        if al == ar {
            return Ok(Compared::Equal);
        }
        if let Some(equal) = self.on_path.cycle(al, ar) {
            if self.ordering {
                // Equality can close a cycle; an order through one has no first difference.
                return Err(Error::value_error(format!(
                    "cannot order {} and {}: they contain a cyclic reference",
                    l.type_name(),
                    r.type_name()
                )));
            }
            return if equal {
                Ok(Compared::Equal)
            } else {
                Ok(Compared::Different)
            };
        }
        self.depth.enter()?;
        self.on_path.push(al, ar, self.depth.level());
        let result = match class {
            Class::Array | Class::List => self.seq(l, r),
            Class::Map | Class::Dict => self.map(l, r),
            _ => match self
                .hooks
                .of(l.type_index())?
                .compare(l, r, self.ordering)?
            {
                Some(c) => Ok(c),
                None => self.fields(l, r),
            },
        };
        self.on_path.pop(al, ar);
        self.depth.leave();
        result
    }

    fn seq(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<Compared> {
        let (ls, rs) = (Seq::of(l)?, Seq::of(r)?);
        if !self.ordering && ls.len() != rs.len() {
            return Ok(Compared::Different);
        }
        for (a, b) in ls.iter().zip(rs.iter()) {
            let c = self.any(&a, &b)?;
            if c != Compared::Equal {
                return Ok(c);
            }
        }
        Ok(ls.len().cmp(&rs.len()).into())
    }

    fn map(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<Compared> {
        let (lm, rm) = (Entries::of(l)?, Entries::of(r)?);
        let equal = lm.len() == rm.len() && {
            let mut all = true;
            for (k, v) in lm.iter() {
                let same = match rm.get(&k)? {
                    Some(x) => {
                        let ordering = core::mem::replace(&mut self.ordering, false);
                        let c = self.any(&v, &x.view());
                        self.ordering = ordering;
                        c? == Compared::Equal
                    }
                    None => false,
                };
                if !same {
                    all = false;
                    break;
                }
            }
            all
        };
        if equal {
            Ok(Compared::Equal)
        } else {
            self.unordered(l, r, "maps have no order")
        }
    }

    fn fields(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<Compared> {
        let (lo, ro) = (l.as_object().unwrap(), r.as_object().unwrap());
        for f in self.fields.of(l.type_index()).iter() {
            if f.flags & kRFFIFieldFlagBitMaskCompareOff != 0 {
                continue;
            }
            let (a, b) = (read_field(lo, f)?, read_field(ro, f)?);
            let c = self.any(&a.view(), &b.view())?;
            if c != Compared::Equal {
                return Ok(c);
            }
        }
        Ok(Compared::Equal)
    }
}
