//! The binary encoding of what crosses between a controller and its workers: primitives, the
//! values a call may carry (`Value`), and errors with their tracebacks (`WireError`).
//!
//! Little-endian, length-prefixed strings and lists. One encoding for every transport, so a thread
//! worker, a process worker and a remote one read the same bytes.

use rffi_core::abi::*;
use rffi_core::{Any, AnyView, Array, DataType, Device, Error, Map, ObjectRef, Result, Shape};

/// A value that can be sent to a worker (as an argument) or back (as a fetched result).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    Shape(Vec<i64>),
    DataType(DataType),
    Device(Device),
    /// A register of the receiving worker (a DRef, DFunction or DModule).
    Ref(u64),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
    /// A CPU tensor in a shared-memory file: descriptor `fd` of the frame (see `shm_tensor`).
    FdTensor {
        fd: u32,
        shape: Vec<i64>,
        dtype: DataType,
    },
    /// A host tensor carried in the frame itself, for workers that may be on another host.
    Tensor {
        shape: Vec<i64>,
        dtype: DataType,
        data: Vec<u8>,
    },
}

const T_NONE: u8 = 0;
const T_BOOL: u8 = 1;
const T_INT: u8 = 2;
const T_FLOAT: u8 = 3;
const T_STR: u8 = 4;
const T_BYTES: u8 = 5;
const T_SHAPE: u8 = 6;
const T_DTYPE: u8 = 7;
const T_DEVICE: u8 = 8;
const T_REF: u8 = 9;
const T_ARRAY: u8 = 10;
const T_MAP: u8 = 11;
const T_TENSOR: u8 = 13;
const T_FD_TENSOR: u8 = 14;

/// Arrays and maps nest; a bound keeps a malformed or hostile frame from exhausting the stack.
const MAX_DEPTH: usize = 64;

/// Appends encoded data to a frame.
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn f64(&mut self, v: f64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.buf.extend_from_slice(b);
    }
    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::None => self.u8(T_NONE),
            Value::Bool(b) => {
                self.u8(T_BOOL);
                self.u8(*b as u8);
            }
            Value::Int(i) => {
                self.u8(T_INT);
                self.i64(*i);
            }
            Value::Float(f) => {
                self.u8(T_FLOAT);
                self.f64(*f);
            }
            Value::Str(s) => {
                self.u8(T_STR);
                self.str(s);
            }
            Value::Bytes(b) => {
                self.u8(T_BYTES);
                self.bytes(b);
            }
            Value::Shape(dims) => {
                self.u8(T_SHAPE);
                self.u32(dims.len() as u32);
                dims.iter().for_each(|d| self.i64(*d));
            }
            Value::DataType(dt) => {
                self.u8(T_DTYPE);
                self.u8(dt.code());
                self.u8(dt.bits());
                self.buf.extend_from_slice(&dt.lanes().to_le_bytes());
            }
            Value::Device(d) => {
                self.u8(T_DEVICE);
                self.buf.extend_from_slice(&d.device_type().to_le_bytes());
                self.buf.extend_from_slice(&d.index().to_le_bytes());
            }
            Value::Ref(r) => {
                self.u8(T_REF);
                self.u64(*r);
            }
            Value::Array(items) => {
                self.u8(T_ARRAY);
                self.u32(items.len() as u32);
                items.iter().for_each(|x| self.value(x));
            }
            Value::Map(pairs) => {
                self.u8(T_MAP);
                self.u32(pairs.len() as u32);
                for (k, v) in pairs {
                    self.value(k);
                    self.value(v);
                }
            }
            Value::FdTensor { fd, shape, dtype } => {
                self.u8(T_FD_TENSOR);
                self.u32(*fd);
                self.value(&Value::Shape(shape.clone()));
                self.value(&Value::DataType(*dtype));
            }
            Value::Tensor { shape, dtype, data } => {
                self.u8(T_TENSOR);
                self.value(&Value::Shape(shape.clone()));
                self.value(&Value::DataType(*dtype));
                self.bytes(data);
            }
        }
    }
    pub fn error(&mut self, e: &WireError) {
        self.str(&e.kind);
        self.str(&e.message);
        self.str(&e.backtrace);
        self.str(&e.function);
        self.str(&e.command);
    }
}

/// Reads encoded data from a frame; every read checks the remaining length.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

fn malformed(what: &str) -> Error {
    Error::value_error(format!("malformed session frame: {what}"))
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(|| malformed("truncated"))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("length checked"))
    }
    pub fn is_empty(&self) -> bool {
        self.pos == self.buf.len()
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub fn str(&mut self) -> Result<String> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| malformed("string is not UTF-8"))
    }
    /// A count of items that each take at least `min_size` bytes: bounded by what is left, so a
    /// corrupt count cannot make us reserve gigabytes.
    fn count(&mut self, min_size: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_size) > self.buf.len() - self.pos {
            return Err(malformed("count exceeds the frame"));
        }
        Ok(n)
    }
    pub fn value(&mut self) -> Result<Value> {
        self.value_at(0)
    }
    fn value_at(&mut self, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(malformed("values nested too deeply"));
        }
        Ok(match self.u8()? {
            T_NONE => Value::None,
            T_BOOL => Value::Bool(self.u8()? != 0),
            T_INT => Value::Int(self.i64()?),
            T_FLOAT => Value::Float(self.f64()?),
            T_STR => Value::Str(self.str()?),
            T_BYTES => Value::Bytes(self.bytes()?.to_vec()),
            T_SHAPE => {
                let n = self.count(8)?;
                Value::Shape((0..n).map(|_| self.i64()).collect::<Result<_>>()?)
            }
            T_DTYPE => {
                let [code, bits] = self.array()?;
                let lanes = u16::from_le_bytes(self.array()?);
                Value::DataType(DataType::new(code, bits, lanes))
            }
            T_DEVICE => {
                let ty = i32::from_le_bytes(self.array()?);
                let index = i32::from_le_bytes(self.array()?);
                Value::Device(Device::new(ty, index).map_err(|e| malformed(&e))?)
            }
            T_REF => Value::Ref(self.u64()?),
            T_ARRAY => {
                let n = self.count(1)?;
                Value::Array(
                    (0..n)
                        .map(|_| self.value_at(depth + 1))
                        .collect::<Result<_>>()?,
                )
            }
            T_MAP => {
                let n = self.count(2)?;
                let mut pairs = Vec::with_capacity(n);
                for _ in 0..n {
                    pairs.push((self.value_at(depth + 1)?, self.value_at(depth + 1)?));
                }
                Value::Map(pairs)
            }
            T_FD_TENSOR => {
                let fd = self.u32()?;
                match (self.value_at(depth + 1)?, self.value_at(depth + 1)?) {
                    (Value::Shape(shape), Value::DataType(dtype)) => {
                        Value::FdTensor { fd, shape, dtype }
                    }
                    _ => return Err(malformed("a shared tensor needs a shape and a dtype")),
                }
            }
            T_TENSOR => match (self.value_at(depth + 1)?, self.value_at(depth + 1)?) {
                (Value::Shape(shape), Value::DataType(dtype)) => Value::Tensor {
                    shape,
                    dtype,
                    data: self.bytes()?.to_vec(),
                },
                _ => return Err(malformed("a tensor needs a shape and a dtype")),
            },
            t => return Err(malformed(&format!("unknown value tag {t}"))),
        })
    }
    pub fn error(&mut self) -> Result<WireError> {
        Ok(WireError {
            kind: self.str()?,
            message: self.str()?,
            backtrace: self.str()?,
            function: self.str()?,
            command: self.str()?,
        })
    }
}

/// A worker's failure as it travels: the error's kind, message and traceback, and what the worker
/// was doing (the function's name and the command).
#[derive(Clone, Debug, PartialEq)]
pub struct WireError {
    pub kind: String,
    pub message: String,
    pub backtrace: String,
    pub function: String,
    pub command: String,
}

impl WireError {
    pub fn from_error(e: &Error, function: &str, command: &str) -> WireError {
        WireError {
            kind: e.kind(),
            message: e.message(),
            backtrace: e.backtrace(),
            function: function.to_string(),
            command: command.to_string(),
        }
    }
}

/// `e`, raised for the value at `place` (`argument #1`, or `[2]` inside an array or map): the
/// places join into a path (`argument #1[2]["w"]: ...`), so an argument's error names where
/// inside it the value was.
pub fn located(e: Error, place: &str) -> Error {
    let m = e.message();
    let sep = if m.starts_with('[') { "" } else { ": " };
    Error::new(&e.kind(), format!("{place}{sep}{m}"))
}

/// What the values of a received frame refer to, on the side that received it.
pub trait Resolve {
    /// Register `r` of this worker (a `Ref`).
    fn register(&self, r: u64) -> Result<Any>;
    /// Descriptor `fd` of the frame as a tensor of `shape` and `dtype` (an `FdTensor`).
    fn tensor(&self, fd: u32, shape: &[i64], dtype: DataType) -> Result<Any>;
}

impl Value {
    /// Converts a value given to a session call. `object` converts the objects the caller knows
    /// how to send (its DRef handles, host tensors); anything else that cannot cross is a
    /// TypeError naming what it is.
    pub fn from_view(
        v: &AnyView<'_>,
        as_ref: &dyn Fn(&ObjectRef) -> Option<Result<Value>>,
    ) -> Result<Value> {
        Self::from_view_at(v, as_ref, 0)
    }

    fn from_view_at(
        v: &AnyView<'_>,
        as_ref: &dyn Fn(&ObjectRef) -> Option<Result<Value>>,
        depth: usize,
    ) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(Error::value_error("values nested too deeply to send"));
        }
        Ok(match v.type_index() {
            kRFFINone => Value::None,
            kRFFIBool => Value::Bool(v.try_as()?),
            kRFFIInt => Value::Int(v.try_as()?),
            kRFFIFloat => Value::Float(v.try_as()?),
            kRFFIRawStr | kRFFISmallStr | kRFFIStr => Value::Str(v.try_as()?),
            kRFFIByteArrayPtr | kRFFISmallBytes | kRFFIBytes => Value::Bytes(v.try_as()?),
            kRFFIDataType => Value::DataType(v.try_as()?),
            kRFFIDevice => Value::Device(v.try_as()?),
            kRFFIShape => Value::Shape(v.try_as::<Shape>()?.as_slice().to_vec()),
            kRFFIArray => Value::Array(
                v.try_as::<Array>()?
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        Self::from_view_at(&x, as_ref, depth + 1)
                            .map_err(|e| located(e, &format!("[{i}]")))
                    })
                    .collect::<Result<_>>()?,
            ),
            kRFFIMap => Value::Map(
                v.try_as::<Map>()?
                    .iter()
                    .map(|(k, x)| {
                        let key = Self::from_view_at(&k, as_ref, depth + 1)
                            .map_err(|e| located(e, "[key]"))?;
                        let named = match &key {
                            Value::Str(s) => format!("{s:?}"),
                            Value::Int(i) => i.to_string(),
                            _ => "value".to_string(),
                        };
                        let x = Self::from_view_at(&x, as_ref, depth + 1)
                            .map_err(|e| located(e, &format!("[{named}]")))?;
                        Ok((key, x))
                    })
                    .collect::<Result<_>>()?,
            ),
            _ => {
                if let Some(r) = v.as_object().and_then(as_ref) {
                    return r;
                }
                return Err(Error::type_error(format!(
                    "a value of type {} cannot be sent to a worker (it takes None, bool, int, \
                     float, str, bytes, Shape, dtype, Device, DRef, DFunction, DModule, host \
                     tensors, and arrays/maps of these)",
                    v.type_name()
                )));
            }
        })
    }

    /// The runtime value, with registers and tensors resolved by `ctx`.
    pub fn into_any(self, ctx: &dyn Resolve) -> Result<Any> {
        Ok(match self {
            Value::None => Any::none(),
            Value::Bool(b) => b.into(),
            Value::Int(i) => i.into(),
            Value::Float(f) => f.into(),
            Value::Str(s) => s.into(),
            Value::Bytes(b) => b.into(),
            Value::Shape(d) => Shape::new(&d).into(),
            Value::DataType(d) => d.into(),
            Value::Device(d) => d.into(),
            Value::Ref(r) => ctx.register(r)?,
            Value::FdTensor { fd, shape, dtype } => ctx.tensor(fd, &shape, dtype)?,
            Value::Tensor { shape, dtype, data } => {
                crate::shm_tensor::from_bytes(&shape, dtype, &data)?.into()
            }
            Value::Array(items) => Array::new(
                items
                    .into_iter()
                    .map(|x| x.into_any(ctx))
                    .collect::<Result<_>>()?,
            )
            .into(),
            Value::Map(pairs) => Map::new(
                pairs
                    .into_iter()
                    .map(|(k, v)| Ok((k.into_any(ctx)?, v.into_any(ctx)?)))
                    .collect::<Result<_>>()?,
            )?
            .into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(v: Value) {
        let mut w = Writer::default();
        w.value(&v);
        let mut r = Reader::new(&w.buf);
        assert_eq!(r.value().unwrap(), v);
        assert!(r.is_empty());
    }

    #[test]
    fn every_value_kind_round_trips() {
        round_trip(Value::None);
        round_trip(Value::Bool(true));
        round_trip(Value::Int(-7));
        round_trip(Value::Float(2.5));
        round_trip(Value::Str("héllo".into()));
        round_trip(Value::Bytes(vec![0, 1, 255]));
        round_trip(Value::Shape(vec![2, 3]));
        round_trip(Value::DataType(DataType::float(32)));
        round_trip(Value::Device(Device::cpu()));
        round_trip(Value::Ref(42));
        round_trip(Value::Array(vec![Value::Int(1), Value::Str("x".into())]));
        round_trip(Value::Map(vec![(Value::Str("k".into()), Value::Ref(3))]));
        round_trip(Value::FdTensor {
            fd: 2,
            shape: vec![4],
            dtype: DataType::float(32),
        });
        round_trip(Value::Tensor {
            shape: vec![2],
            dtype: DataType::float(32),
            data: vec![0, 0, 128, 63, 0, 0, 0, 64],
        });
    }

    #[test]
    fn truncated_and_corrupt_frames_are_errors() {
        let mut w = Writer::default();
        w.value(&Value::Str("hello".into()));
        for cut in 0..w.buf.len() {
            let e = Reader::new(&w.buf[..cut]).value().unwrap_err();
            assert!(e.message().contains("malformed"), "{}", e.message());
        }
        let e = Reader::new(&[99]).value().unwrap_err();
        assert!(e.message().contains("unknown value tag 99"));
        // A huge count in a short frame is refused before any allocation.
        let e = Reader::new(&[T_ARRAY, 255, 255, 255, 255])
            .value()
            .unwrap_err();
        assert!(e.message().contains("count exceeds"));
        let deep: Vec<u8> = std::iter::repeat_n([T_ARRAY, 1, 0, 0, 0], 100)
            .flatten()
            .collect();
        let e = Reader::new(&deep).value().unwrap_err();
        assert!(e.message().contains("nested too deeply"));
    }

    #[test]
    fn unsupported_values_name_their_type() {
        let t = rffi_core::Function::from_typed(|| 1i64);
        let any = Any::from(t);
        let e = Value::from_view(&any.view(), &|_| None).unwrap_err();
        assert_eq!(e.kind(), "TypeError");
        assert!(e.message().contains("ffi.Function"), "{}", e.message());
    }
}
