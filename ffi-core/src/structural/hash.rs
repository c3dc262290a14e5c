//! Hashes consistent with the equalities: [`structural_hash`] with `structural_equal` (under the
//! same options) and [`recursive_hash`] with `recursive_eq`. Both are deterministic: the same
//! graph hashes the same in every process.
//!
//! A subgraph met again (shared) is hashed once; a node met again while inside it (a cycle)
//! hashes as the number of levels back to it, which is also what equality compares for cycles.
//! Free variables and DAG nodes hash by the order they are first met in, so equal graphs built
//! from different objects hash alike.

use super::items::{Entries, Seq};
use super::tensor::tensor_bytes;
use super::{addr, class_of, eq_hash_kind, text_of, Class, Depth, FieldCache, Options};
use crate::abi::*;
use crate::any::AnyView;
use crate::error::Result;
use crate::reflection::read_field;
use crate::type_registry::type_info;
use crate::{ObjectRef, Shape, Tensor};
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::Hasher as _;

/// The structural hash of `value`: equal values (by `structural_equal` with the same options)
/// hash equal.
pub fn structural_hash(value: &AnyView<'_>, opts: Options) -> Result<u64> {
    Hasher::new(Mode::Structural(opts)).top(value)
}

/// The hash matching `recursive_eq`: floats by value (`-0.0` as `0.0`, every NaN alike), fields
/// left out of comparison or hashing skipped.
pub fn recursive_hash(value: &AnyView<'_>) -> Result<u64> {
    Hasher::new(Mode::Recursive).top(value)
}

#[derive(Clone, Copy)]
enum Mode {
    Structural(Options),
    Recursive,
}

/// One value's hash, and what it depends on besides the value.
#[derive(Clone, Copy)]
struct H {
    h: u64,
    /// The shallowest level a cycle inside reached back to (`u32::MAX`: none).
    reach: u32,
    /// Depends on the order free variables and DAG nodes were met in: not cached.
    stateful: bool,
}

impl H {
    fn plain(h: u64) -> H {
        H {
            h,
            reach: u32::MAX,
            stateful: false,
        }
    }
}

/// Mixes `x` into `h` (splitmix64's finalizer over both).
fn mix(h: u64, x: u64) -> u64 {
    let mut z = h.rotate_left(5) ^ x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn bytes_hash(tag: u64, b: &[u8]) -> u64 {
    let mut f = FxHasher::default();
    f.write(b);
    mix(mix(tag, b.len() as u64), f.finish())
}

// Tags keep values of different kinds apart.
const TAG_SEQ: u64 = 0x5e9;
const TAG_MAP: u64 = 0x3a9;
const TAG_CYCLE: u64 = 0xc7c1e;
const TAG_VAR: u64 = 0x7a5;
const TAG_VAR_ADDR: u64 = 0x7a5a;
const TAG_DAG_AGAIN: u64 = 0xda9;

struct Hasher {
    mode: Mode,
    depth: Depth,
    fields: FieldCache,
    /// Types' `__ffi_hash__` hooks (recursive hashing only; see `hooks`).
    hooks: super::hooks::HookCache,
    /// Nodes being hashed, with the level each was entered at.
    on_path: FxHashMap<usize, u32>,
    /// Finished nodes whose hash depends only on themselves.
    cache: FxHashMap<usize, u64>,
    /// Free variables and DAG nodes by the order they were first met in.
    order: FxHashMap<usize, u64>,
    /// Free variables met now are numbered (`map_free_vars`, or inside a definition field).
    free_vars: bool,
    /// Objects whose addresses are keys above, kept alive until the end.
    keep: Vec<ObjectRef>,
}

impl Hasher {
    fn new(mode: Mode) -> Hasher {
        Hasher {
            mode,
            depth: Depth::new(match mode {
                Mode::Structural(_) => "structural_hash",
                Mode::Recursive => "recursive_hash",
            }),
            fields: FieldCache::default(),
            hooks: Default::default(),
            on_path: FxHashMap::default(),
            cache: FxHashMap::default(),
            order: FxHashMap::default(),
            free_vars: matches!(mode, Mode::Structural(o) if o.map_free_vars),
            keep: Vec::new(),
        }
    }

    fn top(&mut self, v: &AnyView<'_>) -> Result<u64> {
        Ok(self.any(v)?.h)
    }

    fn any(&mut self, v: &AnyView<'_>) -> Result<H> {
        let ti = v.type_index();
        let class = class_of(ti);
        let raw = v.as_raw();
        Ok(match class {
            Class::Pod => H::plain(self.pod(ti, raw)),
            Class::Str => H::plain(bytes_hash(kRFFIStr as u64, text_of(v))),
            Class::Bytes => H::plain(bytes_hash(kRFFIBytes as u64, text_of(v))),
            Class::Shape => {
                let s = v.try_as::<Shape>()?;
                H::plain(
                    s.iter()
                        .fold(mix(kRFFIShape as u64, s.len() as u64), |h, &d| {
                            mix(h, d as u64)
                        }),
                )
            }
            Class::Tensor => H::plain(self.tensor(v)?),
            Class::Opaque => H::plain(mix(ti as u64, addr(v) as u64)),
            _ => self.node(v, class)?,
        })
    }

    fn pod(&self, ti: i32, raw: &RFFIAny) -> u64 {
        // SAFETY: POD payloads are 8 plain bytes; floats read as floats.
        let bits = unsafe {
            if ti == kRFFIFloat {
                let x = raw.v.v_float64;
                match self.mode {
                    _ if x.is_nan() => f64::NAN.to_bits(),
                    Mode::Recursive if x == 0.0 => 0,
                    _ => x.to_bits(),
                }
            } else {
                raw.v.v_int64 as u64 ^ (u64::from(raw.small_str_len) << 32)
            }
        };
        mix(ti as u64, bits)
    }

    fn tensor(&mut self, v: &AnyView<'_>) -> Result<u64> {
        let t = v.try_as::<Tensor>()?;
        let Mode::Structural(opts) = self.mode else {
            return Ok(mix(kRFFITensor as u64, addr(v) as u64));
        };
        let d = t.dtype().0;
        let dev = t.device().0;
        let mut h = mix(
            kRFFITensor as u64,
            u64::from(d.code) << 24 | u64::from(d.bits) << 16 | u64::from(d.lanes),
        );
        h = mix(
            h,
            (dev.device_type as u64) << 32 | dev.device_id as u32 as u64,
        );
        for &s in t.shape() {
            h = mix(h, s as u64);
        }
        if !opts.skip_tensor_content {
            h = mix(h, bytes_hash(0, &tensor_bytes(&t, "structural_hash (pass skip_tensor_content=True to hash tensors by dtype and shape)")?));
        }
        Ok(h)
    }

    /// Containers and objects: kinds, cache and cycles, then the contents.
    fn node(&mut self, v: &AnyView<'_>, class: Class) -> Result<H> {
        let a = addr(v);
        let ti = v.type_index();
        let kind = match (class, self.mode) {
            (Class::Object, Mode::Structural(_)) => eq_hash_kind(ti),
            _ => kRFFISEqHashKindTreeNode,
        };
        match kind {
            kRFFISEqHashKindUniqueInstance => return Ok(H::plain(mix(ti as u64, a as u64))),
            kRFFISEqHashKindFreeVar | kRFFISEqHashKindDAGNode => {
                if let Some(&n) = self.order.get(&a) {
                    let tag = if kind == kRFFISEqHashKindDAGNode {
                        TAG_DAG_AGAIN
                    } else {
                        TAG_VAR
                    };
                    return Ok(H {
                        stateful: true,
                        ..H::plain(mix(tag, n))
                    });
                }
            }
            _ => {}
        }
        // As in equality: cycles are tracked at Lists, Dicts and objects; objects are cached.
        let tracked = !matches!(class, Class::Array | Class::Map);
        let cached = class == Class::Object;
        if tracked {
            if let Some(&level) = self.on_path.get(&a) {
                return Ok(H {
                    h: mix(TAG_CYCLE, u64::from(self.depth.level() - level)),
                    reach: level,
                    stateful: false,
                });
            }
        }
        if cached {
            if let Some(&h) = self.cache.get(&a) {
                return Ok(H::plain(h));
            }
        }
        if kind == kRFFISEqHashKindFreeVar && !self.free_vars {
            // A free variable outside a definition: only itself is equal to it.
            self.number(v);
            return Ok(H {
                stateful: true,
                ..H::plain(mix(TAG_VAR_ADDR, a as u64))
            });
        }
        let numbered = if kind == kRFFISEqHashKindFreeVar || kind == kRFFISEqHashKindDAGNode {
            Some(self.number(v))
        } else {
            None
        };
        self.depth.enter()?;
        let level = self.depth.level();
        if tracked {
            self.on_path.insert(a, level);
        }
        let inner = match class {
            Class::Array | Class::List => self.seq(v, ti),
            Class::Map | Class::Dict => self.map(v, ti),
            _ => self.fields(v, ti),
        };
        if tracked {
            self.on_path.remove(&a);
        }
        self.depth.leave();
        let mut inner = inner?;
        if let Some(n) = numbered {
            inner.h = mix(mix(TAG_VAR, n), inner.h);
            inner.stateful = true;
        }
        if cached && !inner.stateful && inner.reach >= level {
            if let Some(o) = v.as_object() {
                self.keep.push(o.clone());
            }
            self.cache.insert(a, inner.h);
        }
        if inner.reach >= level {
            inner.reach = u32::MAX;
        }
        Ok(inner)
    }

    /// Gives a free variable or DAG node its number: the order it was first met in.
    fn number(&mut self, v: &AnyView<'_>) -> u64 {
        let n = self.order.len() as u64;
        if let Some(o) = v.as_object() {
            self.keep.push(o.clone());
        }
        self.order.insert(addr(v), n);
        n
    }

    fn seq(&mut self, v: &AnyView<'_>, ti: i32) -> Result<H> {
        let items = Seq::of(v)?;
        let mut acc = H::plain(mix(mix(TAG_SEQ, ti as u64), items.len() as u64));
        for x in items.iter() {
            let h = self.any(&x)?;
            acc = join(acc, h);
        }
        Ok(acc)
    }

    /// Entries in no particular order: each entry's hash is summed, so equal maps built in
    /// another order hash alike.
    fn map(&mut self, v: &AnyView<'_>, ti: i32) -> Result<H> {
        let entries = Entries::of(v)?;
        let mut acc = H::plain(0);
        let mut sum = 0u64;
        for (k, x) in entries.iter() {
            let hk = self.any(&k)?;
            let hv = self.any(&x)?;
            let entry = join(hk, hv);
            sum = sum.wrapping_add(mix(entry.h, 1));
            acc = join(acc, H { h: 0, ..entry });
        }
        acc.h = mix(mix(mix(TAG_MAP, ti as u64), entries.len() as u64), sum);
        Ok(acc)
    }

    fn fields(&mut self, v: &AnyView<'_>, ti: i32) -> Result<H> {
        if matches!(self.mode, Mode::Recursive) {
            if let Some(h) = self.hooks.of(ti)?.hash(v)? {
                return Ok(H::plain(h));
            }
        }
        let obj = v.as_object().unwrap();
        let key_hash = type_info(ti).map_or(ti as u64, |i| i.type_key_hash);
        let skip = match self.mode {
            Mode::Structural(_) => kRFFIFieldFlagBitMaskSEqHashIgnore,
            Mode::Recursive => kRFFIFieldFlagBitMaskCompareOff | kRFFIFieldFlagBitMaskHashOff,
        };
        let mut acc = H::plain(key_hash);
        for f in self.fields.of(ti).iter() {
            if f.flags & skip != 0 {
                continue;
            }
            let x = read_field(obj, f)?;
            let structural = matches!(self.mode, Mode::Structural(_));
            let h = if structural && f.flags & kRFFIFieldFlagBitMaskSEqHashIdentity != 0 {
                match class_of(x.type_index()) {
                    Class::Pod | Class::Str | Class::Bytes => self.any(&x.view())?,
                    _ => H::plain(mix(x.type_index() as u64, addr(&x.view()) as u64)),
                }
            } else if structural && f.flags & super::DEF_SITE != 0 {
                let outer = core::mem::replace(&mut self.free_vars, true);
                let h = self.any(&x.view());
                self.free_vars = outer;
                h?
            } else {
                self.any(&x.view())?
            };
            acc = join(acc, h);
        }
        Ok(acc)
    }
}

/// `acc` followed by `h`.
fn join(acc: H, h: H) -> H {
    H {
        h: mix(acc.h, h.h),
        reach: acc.reach.min(h.reach),
        stateful: acc.stateful || h.stateful,
    }
}
