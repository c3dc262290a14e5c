//! The field-wise printer of a value (`ffi.ReprPrint`, Python's default `repr` of objects):
//! `my.Point(x=1, y=2)`, Arrays as tuples `(1, 2)`, Lists `[1, 2]`, maps `{"k": v}`, tensors
//! `float32[3, 4]@cpu:0`.
//!
//! An object reached more than once is printed once, labelled at its first occurrence and named
//! by the label after: `(#1=my.Var(name="x"), #1)`. A reference back to an object being printed
//! (a cycle) is `...`. With a `width`, a part longer than the line is broken over indented
//! lines, one field or item per line. A type's `__ffi_repr__` hook prints its objects.

use super::items::{Entries, Seq};
use super::{addr, class_of, text_of, Class, Depth, FieldCache};
use crate::abi::*;
use crate::any::AnyView;
use crate::error::Result;
use crate::reflection::{member_name, read_field};
use crate::schema::json_quote;
use crate::type_registry::type_name;
use crate::{Function, Shape, Tensor};
use rustc_hash::{FxHashMap, FxHashSet};
use std::fmt::Write;

/// The text of `value`: on one line when `width` is 0, otherwise broken over lines of about
/// `width` characters.
pub fn repr_print(value: &AnyView<'_>, width: usize) -> Result<String> {
    let mut p = Printer {
        depth: Depth::new("repr"),
        fields: FieldCache::default(),
        seen: FxHashSet::default(),
        shared: FxHashSet::default(),
        on_path: FxHashSet::default(),
        labels: FxHashMap::default(),
        hooks: super::hooks::HookCache::default(),
    };
    p.count(value)?;
    p.seen.clear();
    let doc = p.doc(value)?;
    let mut out = String::new();
    render(&doc, 0, width, &mut out);
    Ok(out)
}

/// The printed form before line breaking.
enum Doc {
    Text(String),
    /// `head` + items separated by ", " + `tail`; `tuple`: one item takes a trailing comma.
    /// `len` is the length on one line, computed once (rendering asks at every level).
    Group {
        head: String,
        items: Vec<Doc>,
        tail: &'static str,
        tuple: bool,
        len: usize,
    },
    /// A prefix glued to a part: `name=` + value, `key: ` + value.
    Glued(String, Box<Doc>),
}

impl Doc {
    fn group(head: String, items: Vec<Doc>, tail: &'static str, tuple: bool) -> Doc {
        let inner: usize = items.iter().map(Doc::flat_len).sum();
        let seps = 2 * items.len().saturating_sub(1);
        let len = head.len() + inner + seps + tail.len() + usize::from(tuple && items.len() == 1);
        Doc::Group {
            head,
            items,
            tail,
            tuple,
            len,
        }
    }

    fn flat_len(&self) -> usize {
        match self {
            Doc::Text(t) => t.len(),
            Doc::Glued(p, d) => p.len() + d.flat_len(),
            Doc::Group { len, .. } => *len,
        }
    }
}

fn render(doc: &Doc, indent: usize, width: usize, out: &mut String) {
    match doc {
        Doc::Text(t) => out.push_str(t),
        Doc::Glued(p, d) => {
            out.push_str(p);
            render(d, indent, width, out);
        }
        Doc::Group {
            head,
            items,
            tail,
            tuple,
            ..
        } => {
            let flat = width == 0 || items.is_empty() || indent + doc.flat_len() <= width;
            out.push_str(head);
            for (i, item) in items.iter().enumerate() {
                if flat {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    render(item, indent, width, out);
                } else {
                    out.push('\n');
                    out.push_str(&" ".repeat(indent + 2));
                    render(item, indent + 2, width, out);
                    out.push(',');
                }
            }
            if flat {
                if *tuple && items.len() == 1 {
                    out.push(',');
                }
            } else {
                out.push('\n');
                out.push_str(&" ".repeat(indent));
            }
            out.push_str(tail);
        }
    }
}

struct Printer {
    depth: Depth,
    fields: FieldCache,
    /// Objects met so far (first pass) / printed so far (second pass).
    seen: FxHashSet<usize>,
    /// Objects reached again, not through a cycle: printed once, labelled.
    shared: FxHashSet<usize>,
    on_path: FxHashSet<usize>,
    labels: FxHashMap<usize, usize>,
    hooks: super::hooks::HookCache,
}

impl Printer {
    /// First pass: which objects are shared.
    fn count(&mut self, v: &AnyView<'_>) -> Result<()> {
        let class = class_of(v.type_index());
        let a = addr(v);
        match class {
            Class::Object => {
                if !self.seen.insert(a) {
                    if !self.on_path.contains(&a) {
                        self.shared.insert(a);
                    }
                    return Ok(());
                }
            }
            Class::Array | Class::List | Class::Map | Class::Dict if self.on_path.contains(&a) => {
                return Ok(())
            }
            Class::Array | Class::List | Class::Map | Class::Dict => {}
            _ => return Ok(()),
        }
        self.depth.enter()?;
        self.on_path.insert(a);
        let r = self.each_part(v, class, |p, x| p.count(x));
        self.on_path.remove(&a);
        self.depth.leave();
        r
    }

    /// Runs `f` on every part of a node: items, keys and values, printed fields.
    fn each_part(
        &mut self,
        v: &AnyView<'_>,
        class: Class,
        mut f: impl FnMut(&mut Self, &AnyView<'_>) -> Result<()>,
    ) -> Result<()> {
        match class {
            Class::Array | Class::List => {
                for x in Seq::of(v)?.iter() {
                    f(self, &x)?;
                }
            }
            Class::Map | Class::Dict => {
                for (k, x) in Entries::of(v)?.iter() {
                    f(self, &k)?;
                    f(self, &x)?;
                }
            }
            _ => {
                let obj = v.as_object().unwrap();
                for fi in self.fields.of(v.type_index()).iter() {
                    if fi.flags & kRFFIFieldFlagBitMaskReprOff == 0 {
                        f(self, &read_field(obj, fi)?.view())?;
                    }
                }
            }
        }
        Ok(())
    }

    fn doc(&mut self, v: &AnyView<'_>) -> Result<Doc> {
        let class = class_of(v.type_index());
        let a = addr(v);
        if super::is_node(class) && self.on_path.contains(&a) {
            return Ok(Doc::Text("...".into()));
        }
        let mut label = String::new();
        if class == Class::Object && self.shared.contains(&a) {
            if let Some(n) = self.labels.get(&a) {
                return Ok(Doc::Text(format!("#{n}")));
            }
            let n = self.labels.len() + 1;
            self.labels.insert(a, n);
            label = format!("#{n}=");
        }
        if !super::is_node(class) {
            return Ok(Doc::Text(leaf(v, class)?));
        }
        self.depth.enter()?;
        self.on_path.insert(a);
        let doc = self.node(v, class, label);
        self.on_path.remove(&a);
        self.depth.leave();
        doc
    }

    fn node(&mut self, v: &AnyView<'_>, class: Class, label: String) -> Result<Doc> {
        let mut items = Vec::new();
        let (head, tail, tuple) = match class {
            Class::Array | Class::List => {
                for x in Seq::of(v)?.iter() {
                    items.push(self.doc(&x)?);
                }
                if class == Class::Array {
                    ("(".to_owned(), ")", true)
                } else {
                    ("[".to_owned(), "]", false)
                }
            }
            Class::Map | Class::Dict => {
                for (k, x) in Entries::of(v)?.iter() {
                    let key = self.doc(&k)?;
                    let mut text = String::new();
                    render(&key, 0, 0, &mut text);
                    items.push(Doc::Glued(format!("{text}: "), Box::new(self.doc(&x)?)));
                }
                ("{".to_owned(), "}", false)
            }
            _ => {
                if let Some(text) = self.hooks.of(v.type_index())?.repr(v)? {
                    return Ok(Doc::Text(format!("{label}{text}")));
                }
                let obj = v.as_object().unwrap();
                for f in self.fields.of(v.type_index()).iter() {
                    if f.flags & kRFFIFieldFlagBitMaskReprOff == 0 {
                        let x = self.doc(&read_field(obj, f)?.view())?;
                        items.push(Doc::Glued(
                            format!("{}=", member_name(&f.name)),
                            Box::new(x),
                        ));
                    }
                }
                (format!("{label}{}(", type_name(v.type_index())), ")", false)
            }
        };
        Ok(Doc::group(head, items, tail, tuple))
    }
}

/// A value that is not a node, as text.
fn leaf(v: &AnyView<'_>, class: Class) -> Result<String> {
    let raw = v.as_raw();
    let ti = v.type_index();
    Ok(match class {
        // SAFETY: in every arm, the payload member read matches the type index.
        Class::Pod => unsafe {
            match ti {
                kRFFINone => "None".into(),
                kRFFIBool => if raw.v.v_int64 != 0 { "True" } else { "False" }.into(),
                kRFFIInt => raw.v.v_int64.to_string(),
                kRFFIFloat => py_float(raw.v.v_float64),
                kRFFIDataType => crate::DataType(raw.v.v_dtype).to_string(),
                kRFFIDevice => crate::Device(raw.v.v_device).to_string(),
                _ => format!("<{} {:#x}>", type_name(ti), raw.v.v_ptr as usize),
            }
        },
        Class::Str => json_quote(&String::from_utf8_lossy(text_of(v))),
        Class::Bytes => {
            let mut s = String::from("b\"");
            for &b in text_of(v) {
                match b {
                    b'"' | b'\\' => {
                        s.push('\\');
                        s.push(b as char);
                    }
                    0x20..=0x7e => s.push(b as char),
                    _ => {
                        let _ = write!(s, "\\x{b:02x}");
                    }
                }
            }
            s.push('"');
            s
        }
        Class::Shape => {
            let s = v.try_as::<Shape>()?;
            let dims: Vec<String> = s.iter().map(i64::to_string).collect();
            format!("Shape({})", dims.join(", "))
        }
        Class::Tensor => {
            let t = v.try_as::<Tensor>()?;
            let dims: Vec<String> = t.shape().iter().map(i64::to_string).collect();
            format!("{}[{}]@{}", t.dtype(), dims.join(", "), t.device())
        }
        _ => match ti {
            kRFFIFunction => match v.try_as::<Function>()?.name() {
                Some(name) => format!("<ffi.Function {name}>"),
                None => "<ffi.Function>".into(),
            },
            kRFFIError => {
                let e: crate::Error = v.try_as()?;
                format!("<ffi.Error {}: {}>", e.kind(), e.message())
            }
            _ => format!("<{} at {:#x}>", type_name(ti), addr(v)),
        },
    })
}

/// A float as Python's `repr` writes it: the shortest text that reads back the same, in
/// positional form from 1e-4 to 1e16, with an exponent otherwise.
pub(crate) fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        let s = x.to_string();
        if s.contains('.') {
            s
        } else {
            s + ".0"
        }
    } else {
        format!(
            "{mantissa}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    }
}
