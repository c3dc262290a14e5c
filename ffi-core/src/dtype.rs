//! `DataType`: the element type of a tensor, with a string form compatible with tvm-ffi.
//!
//! A `DLDataType` read from foreign memory may hold any bit pattern, so values coming from C go
//! through [`DataType::from_raw`]. The string grammar matches tvm-ffi's (`int32`, `float16x4`,
//! `bool`, `handle`, `float8_e4m3fn`, ...) so dtype strings cross between the two runtimes; rffi
//! additionally names `complex<bits>` and `void`, and rejects the degenerate forms tvm-ffi lets
//! through (empty string, zero bits, zero lanes).

use core::fmt;
use core::str::FromStr;

use crate::abi::{
    kDLBfloat, kDLBool, kDLComplex, kDLFloat, kDLFloat4_e2m1fn, kDLFloat6_e2m3fn, kDLFloat6_e3m2fn,
    kDLFloat8_e3m4, kDLFloat8_e4m3, kDLFloat8_e4m3b11fnuz, kDLFloat8_e4m3fn, kDLFloat8_e4m3fnuz,
    kDLFloat8_e5m2, kDLFloat8_e5m2fnuz, kDLFloat8_e8m0fnu, kDLInt, kDLOpaqueHandle, kDLUInt,
    DLDataType,
};

/// The element type of a tensor: a DLPack `DLDataType` (type code, bits per lane, lanes).
///
/// `DataType::new` and the field are unchecked; use [`DataType::from_raw`] for values written by
/// foreign code and [`DataType::parse`] for strings.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct DataType(pub DLDataType);

/// The low-precision float formats: the name fixes the bit width, so it is never written.
const FIXED_WIDTH_FLOATS: [(u8, &str, u8); 11] = [
    (kDLFloat8_e3m4, "float8_e3m4", 8),
    (kDLFloat8_e4m3, "float8_e4m3", 8),
    (kDLFloat8_e4m3b11fnuz, "float8_e4m3b11fnuz", 8),
    (kDLFloat8_e4m3fn, "float8_e4m3fn", 8),
    (kDLFloat8_e4m3fnuz, "float8_e4m3fnuz", 8),
    (kDLFloat8_e5m2, "float8_e5m2", 8),
    (kDLFloat8_e5m2fnuz, "float8_e5m2fnuz", 8),
    (kDLFloat8_e8m0fnu, "float8_e8m0fnu", 8),
    (kDLFloat6_e2m3fn, "float6_e2m3fn", 6),
    (kDLFloat6_e3m2fn, "float6_e3m2fn", 6),
    (kDLFloat4_e2m1fn, "float4_e2m1fn", 4),
];

/// Spellings accepted for the prefix of a low-precision float name, and the canonical prefix.
const FIXED_WIDTH_PREFIXES: [(&str, &str); 7] = [
    ("float8_", "float8_"),
    ("fp8_", "float8_"),
    ("f8_", "float8_"),
    ("float6_", "float6_"),
    ("fp6_", "float6_"),
    ("float4_", "float4_"),
    ("fp4_", "float4_"),
];

/// Names whose bit width is written after them, with the width used when it is left out
/// (`None`: the width must be written, since `complex` alone is ambiguous between libraries).
const SIZED_NAMES: [(&str, u8, Option<u8>); 7] = [
    ("int", kDLInt, Some(32)),
    ("uint", kDLUInt, Some(32)),
    ("float", kDLFloat, Some(32)),
    ("bfloat", kDLBfloat, Some(16)),
    ("complex", kDLComplex, None),
    ("bool", kDLBool, Some(8)),
    ("handle", kDLOpaqueHandle, Some(64)),
];

const VOID: DLDataType = DLDataType {
    code: kDLOpaqueHandle,
    bits: 0,
    lanes: 0,
};

fn code_name(code: u8) -> Option<&'static str> {
    if let Some(&(_, name, _)) = FIXED_WIDTH_FLOATS.iter().find(|e| e.0 == code) {
        return Some(name);
    }
    SIZED_NAMES.iter().find(|e| e.1 == code).map(|e| e.0)
}

fn fixed_width(code: u8) -> Option<u8> {
    FIXED_WIDTH_FLOATS.iter().find(|e| e.0 == code).map(|e| e.2)
}

/// The width that printing leaves out because parsing the bare name restores it. `int`, `uint`,
/// `float` and `bfloat` also have parse defaults, but tvm-ffi always prints their width.
fn implied_width(code: u8) -> Option<u8> {
    if code == kDLOpaqueHandle {
        Some(64)
    } else if code == kDLBool {
        Some(8)
    } else {
        fixed_width(code)
    }
}

fn check(dt: DLDataType) -> Result<(), String> {
    if dt == VOID {
        return Ok(());
    }
    let Some(name) = code_name(dt.code) else {
        return Err(format!("unknown type code {}", dt.code));
    };
    if dt.bits == 0 {
        return Err(format!("bits is 0 for type code {} ({name})", dt.code));
    }
    if let Some(width) = fixed_width(dt.code) {
        if dt.bits != width {
            return Err(format!(
                "type code {} ({name}) has {width} bits, got bits {}",
                dt.code, dt.bits
            ));
        }
    }
    check_width(name, dt.code, dt.bits)?;
    if dt.lanes == 0 {
        return Err(format!("lanes is 0 for type code {} ({name})", dt.code));
    }
    Ok(())
}

/// The bit widths each sized type code comes in; a width outside its list is no type at all
/// (an `int7` or a `float12` has no element layout anyone agrees on).
fn widths(code: u8) -> Option<&'static [u8]> {
    match code {
        kDLInt | kDLUInt => Some(&[1, 2, 4, 8, 16, 32, 64]),
        kDLFloat => Some(&[8, 16, 32, 64]),
        kDLBfloat => Some(&[16]),
        kDLComplex => Some(&[32, 64, 128]),
        kDLBool => Some(&[1, 8]),
        kDLOpaqueHandle => Some(&[32, 64]),
        _ => None,
    }
}

fn check_width(name: &str, code: u8, bits: u8) -> Result<(), String> {
    match widths(code) {
        Some(w) if !w.contains(&bits) => Err(format!(
            "{name} has no {bits}-bit form (bits must be one of {w:?})"
        )),
        _ => Ok(()),
    }
}

/// Splits `s` after its leading ASCII digits.
fn split_digits(s: &str) -> (&str, &str) {
    let end = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    s.split_at(end)
}

/// Parses the optional `x<lanes>` suffix; `before` is the text already consumed, for messages.
fn parse_lanes(before: &str, rest: &str) -> Result<u16, String> {
    if rest.is_empty() {
        return Ok(1);
    }
    let Some(after_x) = rest.strip_prefix('x') else {
        return Err(format!("unexpected {rest:?} after {before:?}"));
    };
    let (digits, tail) = split_digits(after_x);
    if digits.is_empty() {
        return Err("missing lane count after 'x'".to_string());
    }
    let lanes = match digits.parse::<u16>() {
        Ok(lanes) if lanes != 0 => lanes,
        _ => return Err(format!("lanes must be in 1..=65535, got {digits}")),
    };
    if !tail.is_empty() {
        return Err(format!("unexpected {tail:?} after \"x{digits}\""));
    }
    Ok(lanes)
}

fn parse_fixed_width(s: &str) -> Option<Result<DLDataType, String>> {
    let &(alias, family) = FIXED_WIDTH_PREFIXES
        .iter()
        .find(|(alias, _)| s.starts_with(alias))?;
    let rest = &s[alias.len()..];
    for &(code, name, bits) in &FIXED_WIDTH_FLOATS {
        let Some(format) = name.strip_prefix(family) else {
            continue;
        };
        let Some(tail) = rest.strip_prefix(format) else {
            continue;
        };
        // `e4m3` is a prefix of `e4m3fn`: only a match that ends the name counts.
        if tail.is_empty() || tail.starts_with('x') {
            return Some(
                parse_lanes(&s[..s.len() - tail.len()], tail).map(|lanes| DLDataType {
                    code,
                    bits,
                    lanes,
                }),
            );
        }
    }
    let unknown = rest.split('x').next().unwrap_or(rest);
    let known: Vec<&str> = FIXED_WIDTH_FLOATS
        .iter()
        .filter_map(|e| e.1.strip_prefix(family))
        .collect();
    Some(Err(format!(
        "unknown {} format {unknown:?}; expected one of {}",
        family.trim_end_matches('_'),
        known.join(", ")
    )))
}

fn parse_sized(s: &str) -> Result<DLDataType, String> {
    let Some(&(name, code, default_bits)) =
        SIZED_NAMES.iter().find(|(name, _, _)| s.starts_with(name))
    else {
        return Err(
            "unknown type name; expected int, uint, float, bfloat, complex, bool, \
                    handle, void, or a float8_/float6_/float4_ format"
                .to_string(),
        );
    };
    let (digits, rest) = split_digits(&s[name.len()..]);
    let bits = if digits.is_empty() {
        default_bits.ok_or_else(|| format!("{name} needs a bit width, e.g. {name}64"))?
    } else {
        match digits.parse::<u8>() {
            Ok(bits) if bits != 0 => bits,
            _ => return Err(format!("bits must be in 1..=255, got {digits}")),
        }
    };
    check_width(name, code, bits)?;
    let lanes = parse_lanes(&s[..s.len() - rest.len()], rest)?;
    Ok(DLDataType { code, bits, lanes })
}

impl DataType {
    /// A data type from its parts, unchecked.
    pub const fn new(code: u8, bits: u8, lanes: u16) -> DataType {
        DataType(DLDataType { code, bits, lanes })
    }

    /// Signed integer of `bits` bits.
    pub const fn int(bits: u8) -> DataType {
        DataType::new(kDLInt, bits, 1)
    }

    /// Unsigned integer of `bits` bits.
    pub const fn uint(bits: u8) -> DataType {
        DataType::new(kDLUInt, bits, 1)
    }

    /// IEEE float of `bits` bits.
    pub const fn float(bits: u8) -> DataType {
        DataType::new(kDLFloat, bits, 1)
    }

    /// `bfloat16`.
    pub const fn bfloat16() -> DataType {
        DataType::new(kDLBfloat, 16, 1)
    }

    /// `bool`, stored one byte per element as tvm-ffi does.
    pub const fn bool_() -> DataType {
        DataType::new(kDLBool, 8, 1)
    }

    /// `handle`: an opaque 64-bit pointer.
    pub const fn handle() -> DataType {
        DataType::new(kDLOpaqueHandle, 64, 1)
    }

    /// `void`: no value; the only valid data type with zero bits and zero lanes.
    pub const fn void() -> DataType {
        DataType(VOID)
    }

    /// The same element type with `lanes` lanes.
    pub const fn with_lanes(self, lanes: u16) -> DataType {
        DataType::new(self.0.code, self.0.bits, lanes)
    }

    /// The DLPack type code (`kDLInt`, `kDLFloat`, ...).
    pub const fn code(self) -> u8 {
        self.0.code
    }

    /// Bits per lane.
    pub const fn bits(self) -> u8 {
        self.0.bits
    }

    /// Number of lanes (1 for a scalar).
    pub const fn lanes(self) -> u16 {
        self.0.lanes
    }

    /// The underlying `DLDataType`.
    pub const fn raw(self) -> DLDataType {
        self.0
    }

    /// Storage size of one element, all lanes together, rounded up to whole bytes.
    pub fn bytes_per_element(self) -> usize {
        (usize::from(self.bits()) * usize::from(self.lanes())).div_ceil(8)
    }

    /// Validates a `DLDataType` read from foreign memory: the code must be a DLPack code this
    /// build knows, bits and lanes non-zero (except for `void`), and the low-precision float
    /// codes must carry their format's width.
    pub fn from_raw(dt: DLDataType) -> Result<DataType, String> {
        check(dt)
            .map(|()| DataType(dt))
            .map_err(|e| format!("invalid DLDataType: {e}"))
    }

    /// Parses the tvm-ffi string form, e.g. `int32`, `float16x4`, `bool`, `fp8_e4m3fn`.
    pub fn parse(s: &str) -> Result<DataType, String> {
        let parsed = if s.is_empty() {
            Err("empty string".to_string())
        } else if s == "void" {
            Ok(VOID)
        } else if s.starts_with("void") {
            Err("void takes no bits or lanes".to_string())
        } else if let Some(fixed) = parse_fixed_width(s) {
            fixed
        } else {
            parse_sized(s)
        };
        parsed
            .map(DataType)
            .map_err(|e| format!("invalid dtype {s:?}: {e}"))
    }
}

impl FromStr for DataType {
    type Err = String;

    fn from_str(s: &str) -> Result<DataType, String> {
        DataType::parse(s)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dt = self.0;
        if dt == VOID {
            return f.pad("void");
        }
        let name = match (check(dt), code_name(dt.code)) {
            (Ok(()), Some(name)) => name,
            _ => {
                // Printed in a form `parse` rejects, so an invalid value never turns into a valid
                // one by a round trip through text.
                let text = format!(
                    "invalid(code={}, bits={}, lanes={})",
                    dt.code, dt.bits, dt.lanes
                );
                return f.pad(&text);
            }
        };
        let mut text = String::from(name);
        if implied_width(dt.code) != Some(dt.bits) {
            text.push_str(&dt.bits.to_string());
        }
        if dt.lanes != 1 {
            text.push('x');
            text.push_str(&dt.lanes.to_string());
        }
        f.pad(&text)
    }
}

impl fmt::Debug for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataType({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> DataType {
        DataType::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(s: &str) -> String {
        match DataType::parse(s) {
            Ok(dt) => panic!("{s:?} parsed as {dt:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn layout_is_dldatatype() {
        assert_eq!(core::mem::size_of::<DataType>(), 4);
        assert_eq!(core::mem::align_of::<DataType>(), 2);
    }

    #[test]
    fn constructors_and_accessors() {
        let dt = DataType::new(kDLFloat, 16, 4);
        assert_eq!((dt.code(), dt.bits(), dt.lanes()), (kDLFloat, 16, 4));
        assert_eq!(
            dt.raw(),
            DLDataType {
                code: kDLFloat,
                bits: 16,
                lanes: 4
            }
        );
        assert_eq!(DataType::int(8), DataType::new(kDLInt, 8, 1));
        assert_eq!(DataType::uint(16), DataType::new(kDLUInt, 16, 1));
        assert_eq!(DataType::float(64), DataType::new(kDLFloat, 64, 1));
        assert_eq!(DataType::bfloat16(), DataType::new(kDLBfloat, 16, 1));
        assert_eq!(DataType::bool_(), DataType::new(kDLBool, 8, 1));
        assert_eq!(DataType::handle(), DataType::new(kDLOpaqueHandle, 64, 1));
        assert_eq!(DataType::void(), DataType::new(kDLOpaqueHandle, 0, 0));
        assert_eq!(
            DataType::float(32).with_lanes(8),
            DataType::new(kDLFloat, 32, 8)
        );
    }

    #[test]
    fn bytes_per_element_rounds_up() {
        assert_eq!(DataType::float(32).bytes_per_element(), 4);
        assert_eq!(DataType::float(32).with_lanes(4).bytes_per_element(), 16);
        assert_eq!(DataType::bool_().bytes_per_element(), 1);
        assert_eq!(DataType::int(1).bytes_per_element(), 1);
        assert_eq!(DataType::int(4).with_lanes(3).bytes_per_element(), 2);
        assert_eq!(p("float4_e2m1fn").bytes_per_element(), 1);
        assert_eq!(p("float4_e2m1fnx2").bytes_per_element(), 1);
        assert_eq!(p("float6_e2m3fnx4").bytes_per_element(), 3);
        assert_eq!(DataType::void().bytes_per_element(), 0);
        assert_eq!(
            DataType::new(kDLUInt, 255, 65535).bytes_per_element(),
            2_088_929
        );
    }

    #[test]
    fn parses_sized_names() {
        for bits in [8u8, 16, 32, 64] {
            assert_eq!(p(&format!("int{bits}")), DataType::int(bits));
            assert_eq!(p(&format!("uint{bits}")), DataType::uint(bits));
            assert_eq!(p(&format!("float{bits}")), DataType::float(bits));
        }
        assert_eq!(p("int1"), DataType::int(1));
        assert_eq!(p("int4"), DataType::int(4));
        assert_eq!(p("float8"), DataType::float(8));
        assert_eq!(p("bfloat16"), DataType::bfloat16());
        assert_eq!(p("complex64"), DataType::new(kDLComplex, 64, 1));
        assert_eq!(p("complex128"), DataType::new(kDLComplex, 128, 1));
        assert_eq!(p("bool8"), DataType::bool_());
        assert_eq!(p("bool1"), DataType::new(kDLBool, 1, 1));
        assert_eq!(p("handle32"), DataType::new(kDLOpaqueHandle, 32, 1));
        assert_eq!(p("int032"), DataType::int(32));
    }

    /// Widths no type comes in are refused, from strings and from raw values alike.
    #[test]
    fn widths_no_type_has_are_refused() {
        for (text, code, bits) in [
            ("uint255", kDLUInt, 255),
            ("int7", kDLInt, 7),
            ("float12", kDLFloat, 12),
            ("bfloat8", kDLBfloat, 8),
            ("complex16", kDLComplex, 16),
            ("bool2", kDLBool, 2),
            ("handle8", kDLOpaqueHandle, 8),
        ] {
            let e = err(text);
            assert!(e.contains(&format!("has no {bits}-bit form")), "{e}");
            let raw = DataType::from_raw(DataType::new(code, bits, 1).raw()).unwrap_err();
            assert!(raw.contains(&format!("has no {bits}-bit form")), "{raw}");
        }
    }

    #[test]
    fn bare_names_take_default_widths() {
        assert_eq!(p("int"), DataType::int(32));
        assert_eq!(p("uint"), DataType::uint(32));
        assert_eq!(p("float"), DataType::float(32));
        assert_eq!(p("bfloat"), DataType::bfloat16());
        assert_eq!(p("bool"), DataType::bool_());
        assert_eq!(p("handle"), DataType::handle());
        assert_eq!(p("void"), DataType::void());
        assert_eq!(p("intx4"), DataType::int(32).with_lanes(4));
        assert_eq!(p("boolx2"), DataType::bool_().with_lanes(2));
    }

    #[test]
    fn parses_lanes() {
        assert_eq!(p("float32x4"), DataType::float(32).with_lanes(4));
        assert_eq!(p("int8x1"), DataType::int(8));
        assert_eq!(p("uint16x65535"), DataType::uint(16).with_lanes(65535));
        assert_eq!(p("handlex2"), DataType::handle().with_lanes(2));
        assert_eq!(p("complex64x3"), DataType::new(kDLComplex, 64, 3));
        assert_eq!(
            p("float8_e4m3fnx16"),
            DataType::new(kDLFloat8_e4m3fn, 8, 16)
        );
    }

    #[test]
    fn parses_every_fixed_width_float_and_alias() {
        let expected: [(&str, u8, u8); 11] = [
            ("float8_e3m4", 7, 8),
            ("float8_e4m3", 8, 8),
            ("float8_e4m3b11fnuz", 9, 8),
            ("float8_e4m3fn", 10, 8),
            ("float8_e4m3fnuz", 11, 8),
            ("float8_e5m2", 12, 8),
            ("float8_e5m2fnuz", 13, 8),
            ("float8_e8m0fnu", 14, 8),
            ("float6_e2m3fn", 15, 6),
            ("float6_e3m2fn", 16, 6),
            ("float4_e2m1fn", 17, 4),
        ];
        for (name, code, bits) in expected {
            let dt = DataType::new(code, bits, 1);
            assert_eq!(p(name), dt, "{name}");
            assert_eq!(dt.to_string(), name);
            assert_eq!(p(&format!("{name}x8")), dt.with_lanes(8));
            let suffix = name.split_once('_').unwrap().1;
            let aliases: &[&str] = match bits {
                8 => &["fp8_", "f8_"],
                6 => &["fp6_"],
                _ => &["fp4_"],
            };
            for alias in aliases {
                assert_eq!(p(&format!("{alias}{suffix}")), dt, "{alias}{suffix}");
                assert_eq!(p(&format!("{alias}{suffix}x2")), dt.with_lanes(2));
            }
        }
    }

    #[test]
    fn display_and_debug() {
        assert_eq!(DataType::int(32).to_string(), "int32");
        assert_eq!(DataType::float(16).with_lanes(4).to_string(), "float16x4");
        assert_eq!(DataType::bfloat16().to_string(), "bfloat16");
        assert_eq!(DataType::bool_().to_string(), "bool");
        assert_eq!(DataType::bool_().with_lanes(4).to_string(), "boolx4");
        assert_eq!(DataType::new(kDLBool, 1, 1).to_string(), "bool1");
        assert_eq!(DataType::handle().to_string(), "handle");
        assert_eq!(
            DataType::new(kDLOpaqueHandle, 32, 1).to_string(),
            "handle32"
        );
        assert_eq!(DataType::void().to_string(), "void");
        assert_eq!(DataType::new(kDLComplex, 128, 1).to_string(), "complex128");
        assert_eq!(format!("{:?}", DataType::float(32)), "DataType(float32)");
        assert_eq!(format!("{:>8}|", DataType::int(8)), "    int8|");
        assert_eq!(p("fp8_e5m2").to_string(), "float8_e5m2");
    }

    #[test]
    fn invalid_values_print_unparseably() {
        for dt in [
            DataType::new(99, 8, 1),
            DataType::new(kDLInt, 0, 1),
            DataType::new(kDLInt, 32, 0),
            DataType::new(kDLFloat8_e4m3fn, 16, 1),
            DataType::new(kDLOpaqueHandle, 0, 1),
        ] {
            let text = dt.to_string();
            assert!(text.starts_with("invalid(code="), "{text}");
            assert!(DataType::parse(&text).is_err());
        }
        assert_eq!(
            format!("{:?}", DataType::new(99, 8, 1)),
            "DataType(invalid(code=99, bits=8, lanes=1))"
        );
    }

    #[test]
    fn every_valid_value_round_trips() {
        let mut checked = 0;
        for code in 0..=u8::MAX {
            for bits in 0..=u8::MAX {
                for lanes in [0u16, 1, 2, 3, 4, 16, 255, 256, 65535] {
                    let dt = DataType::new(code, bits, lanes);
                    if DataType::from_raw(dt.raw()).is_err() {
                        continue;
                    }
                    let text = dt.to_string();
                    assert_eq!(DataType::parse(&text), Ok(dt), "{text}");
                    assert_eq!(text.parse::<DataType>(), Ok(dt));
                    checked += 1;
                }
            }
        }
        // 26 widths of the 7 sized codes x 8 lane counts, 11 fixed-width codes x 8, and void.
        assert_eq!(checked, 26 * 8 + 11 * 8 + 1);
    }

    #[test]
    fn from_raw_accepts_valid() {
        for dt in [
            DataType::int(32),
            DataType::bool_(),
            DataType::void(),
            DataType::handle(),
            DataType::new(kDLFloat4_e2m1fn, 4, 2),
            DataType::new(kDLComplex, 64, 1),
        ] {
            assert_eq!(DataType::from_raw(dt.raw()), Ok(dt));
        }
    }

    #[test]
    fn from_raw_rejects_invalid() {
        let e =
            |code, bits, lanes| DataType::from_raw(DLDataType { code, bits, lanes }).unwrap_err();
        assert_eq!(e(99, 8, 1), "invalid DLDataType: unknown type code 99");
        assert_eq!(e(18, 8, 1), "invalid DLDataType: unknown type code 18");
        assert_eq!(e(129, 8, 1), "invalid DLDataType: unknown type code 129");
        assert_eq!(
            e(kDLInt, 0, 1),
            "invalid DLDataType: bits is 0 for type code 0 (int)"
        );
        assert_eq!(
            e(kDLOpaqueHandle, 0, 1),
            "invalid DLDataType: bits is 0 for type code 3 (handle)"
        );
        assert_eq!(
            e(kDLFloat, 32, 0),
            "invalid DLDataType: lanes is 0 for type code 2 (float)"
        );
        assert_eq!(
            e(kDLOpaqueHandle, 64, 0),
            "invalid DLDataType: lanes is 0 for type code 3 (handle)"
        );
        assert_eq!(
            e(kDLFloat8_e4m3fn, 16, 1),
            "invalid DLDataType: type code 10 (float8_e4m3fn) has 8 bits, got bits 16"
        );
        assert_eq!(
            e(kDLFloat4_e2m1fn, 8, 1),
            "invalid DLDataType: type code 17 (float4_e2m1fn) has 4 bits, got bits 8"
        );
    }

    #[test]
    fn rejects_empty_and_unknown_names() {
        assert_eq!(err(""), "invalid dtype \"\": empty string");
        for s in [
            "foo", "Int32", " int32", "fp16", "f8", "fp8", "double", "x4", "32",
        ] {
            let e = err(s);
            assert!(
                e.starts_with(&format!("invalid dtype {s:?}: unknown type name")),
                "{e}"
            );
        }
    }

    #[test]
    fn rejects_unknown_fixed_width_formats() {
        assert_eq!(
            err("float8_e9m9"),
            "invalid dtype \"float8_e9m9\": unknown float8 format \"e9m9\"; expected one of \
             e3m4, e4m3, e4m3b11fnuz, e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0fnu"
        );
        assert_eq!(
            err("fp6_e2m1fn"),
            "invalid dtype \"fp6_e2m1fn\": unknown float6 format \"e2m1fn\"; expected one of \
             e2m3fn, e3m2fn"
        );
        assert_eq!(
            err("float4_"),
            "invalid dtype \"float4_\": unknown float4 format \"\"; expected one of e2m1fn"
        );
        assert!(err("float8_e4m3fnu").contains("unknown float8 format \"e4m3fnu\""));
        assert!(err("f6_e2m3fn").contains("unknown type name"));
        assert!(err("f4_e2m1fn").contains("unknown type name"));
    }

    #[test]
    fn rejects_bad_bits() {
        assert_eq!(
            err("int0"),
            "invalid dtype \"int0\": bits must be in 1..=255, got 0"
        );
        assert_eq!(
            err("float256"),
            "invalid dtype \"float256\": bits must be in 1..=255, got 256"
        );
        assert!(err("uint99999999999999999999").ends_with("got 99999999999999999999"));
        assert!(err("bool0").contains("bits must be in 1..=255, got 0"));
        assert!(err("handle0").contains("bits must be in 1..=255, got 0"));
        assert_eq!(
            err("complex"),
            "invalid dtype \"complex\": complex needs a bit width, e.g. complex64"
        );
        assert!(err("complexx2").contains("complex needs a bit width"));
    }

    #[test]
    fn rejects_bad_lanes() {
        assert_eq!(
            err("floatx"),
            "invalid dtype \"floatx\": missing lane count after 'x'"
        );
        assert!(err("int32x").contains("missing lane count after 'x'"));
        assert!(err("int32x-1").contains("missing lane count after 'x'"));
        assert!(err("int32x+1").contains("missing lane count after 'x'"));
        assert_eq!(
            err("int32x0"),
            "invalid dtype \"int32x0\": lanes must be in 1..=65535, got 0"
        );
        assert!(err("int32x65536").ends_with("lanes must be in 1..=65535, got 65536"));
        assert!(err("int32x99999999999999999999").contains("got 99999999999999999999"));
        assert!(err("float8_e5m2x0").contains("lanes must be in 1..=65535, got 0"));
        assert!(err("float8_e5m2x").contains("missing lane count"));
    }

    #[test]
    fn rejects_trailing_junk() {
        assert_eq!(
            err("int32abc"),
            "invalid dtype \"int32abc\": unexpected \"abc\" after \"int32\""
        );
        assert_eq!(
            err("int32 "),
            "invalid dtype \"int32 \": unexpected \" \" after \"int32\""
        );
        assert_eq!(
            err("float32x4y"),
            "invalid dtype \"float32x4y\": unexpected \"y\" after \"x4\""
        );
        assert!(err("int32x4x4").contains("unexpected \"x4\" after \"x4\""));
        assert!(err("float8_e4m3fn8").contains("unknown float8 format \"e4m3fn8\""));
        assert!(err("bfloat16_").contains("unexpected \"_\" after \"bfloat16\""));
        assert!(err("void32").contains("void takes no bits or lanes"));
        assert!(err("voidx1").contains("void takes no bits or lanes"));
    }

    #[test]
    fn from_str_matches_parse() {
        assert_eq!(
            "float32x4".parse::<DataType>(),
            DataType::parse("float32x4")
        );
        assert_eq!("floatx".parse::<DataType>(), DataType::parse("floatx"));
    }
}
