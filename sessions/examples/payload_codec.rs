//! The session protocol's binary value encoding (`rffi_session::codec`) against the JSON graph
//! form (`to_json_graph_str` / `from_json_graph_str`) on the payloads a session call carries:
//! encode + decode time and size per payload.
//! `cargo run --release -p rffi-session --example payload_codec`
use rffi_core::structural::{from_json_graph, to_json_graph};
use rffi_core::{
    Any, Array, DataType, Device, Error, Map, ObjectRef, ObjectType, Result, Shape, Tensor,
};
use rffi_session::codec::{Reader, Resolve, Value, Writer};
use rffi_session::shm_tensor;
use std::hint::black_box;
use std::time::Instant;

/// Decoding needs no worker registers or descriptors here.
struct NoContext;

impl Resolve for NoContext {
    fn register(&self, _: u64) -> Result<Any> {
        unreachable!("no registers in these payloads")
    }
    fn tensor(&self, _: u32, _: &[i64], _: DataType) -> Result<Any> {
        unreachable!("no descriptors in these payloads")
    }
}

/// Host tensors travel inline, as they do to a worker on another host.
fn inline_tensor(obj: &ObjectRef) -> Option<Result<Value>> {
    let t = Tensor::from_object(obj.clone()).ok()?;
    Some(
        shm_tensor::bytes_of(&t, usize::MAX).map(|data| Value::Tensor {
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
            data,
        }),
    )
}

fn binary_round_trip(v: &Any) -> Result<(usize, Any)> {
    let mut w = Writer::default();
    w.value(&Value::from_view(&v.view(), &inline_tensor)?);
    let frame = w.buf;
    let back = Reader::new(&frame).value()?.into_any(&NoContext)?;
    Ok((frame.len(), back))
}

fn json_round_trip(v: &Any) -> Result<(usize, Any)> {
    let text = to_json_graph(&v.view(), None)?;
    Ok((text.len(), from_json_graph(&text)?))
}

/// Best time of 7 runs of `reps` round trips, in microseconds per round trip.
fn time(reps: usize, f: &dyn Fn() -> Result<(usize, Any)>) -> Result<f64> {
    let mut best = f64::MAX;
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..reps {
            black_box(f()?);
        }
        best = best.min(t.elapsed().as_secs_f64() / reps as f64 * 1e6);
    }
    Ok(best)
}

fn s(text: &str) -> Any {
    text.into()
}

fn payloads() -> Result<Vec<(&'static str, Any, usize)>> {
    let f32 = DataType::parse("float32").map_err(Error::value_error)?;
    let args: Any = Array::new(vec![
        7i64.into(),
        0.5f64.into(),
        s("model/layers.3.mlp.weight"),
        Shape::new(&[1, 128, 4096]).into(),
        f32.into(),
        Device::cpu().into(),
    ])
    .into();
    let config: Any = Map::new(
        (0..32)
            .map(|i| {
                let v: Any = match i % 4 {
                    0 => (i as i64).into(),
                    1 => (i as f64 * 0.25).into(),
                    2 => s(&format!("value-{i}")),
                    _ => Array::new(vec![1i64.into(), 2i64.into(), 3i64.into()]).into(),
                };
                (s(&format!("option_{i}")), v)
            })
            .collect(),
    )?
    .into();
    let records: Any = Array::new(
        (0..1000)
            .map(|i| {
                let attrs = Map::new(vec![
                    (s("alpha"), (i as f64 * 0.5).into()),
                    (s("name"), s(&format!("node{i}"))),
                ])?;
                Ok(Map::new(vec![
                    (s("op"), s("add")),
                    (
                        s("args"),
                        Array::new(vec![(i as i64).into(), (i as i64 + 1).into()]).into(),
                    ),
                    (s("attrs"), attrs.into()),
                ])?
                .into())
            })
            .collect::<Result<_>>()?,
    )
    .into();
    let data: Vec<u8> = (0..1 << 20).map(|i| (i * 7 % 251) as u8).collect();
    let tensor: Any = shm_tensor::from_bytes(&[1 << 18], f32, &data)?.into();
    Ok(vec![
        ("call arguments (6 values)", args, 20_000),
        ("config map (32 entries)", config, 2_000),
        ("1000 records (9001 values)", records, 20),
        ("float32 tensor, 1 MiB", tensor, 20),
    ])
}

fn main() -> Result<()> {
    println!("| payload | binary (µs) | JSON (µs) | JSON / binary | binary bytes | JSON bytes |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, v, reps) in payloads()? {
        let (bin_len, bin_back) = binary_round_trip(&v)?;
        let (json_len, json_back) = json_round_trip(&v)?;
        // Both forms give the value back.
        for back in [&bin_back, &json_back] {
            assert!(rffi_core::structural::structural_equal(
                &v.view(),
                &back.view(),
                Default::default()
            )?);
        }
        let bin = time(reps, &|| binary_round_trip(&v))?;
        let json = time(reps, &|| json_round_trip(&v))?;
        println!(
            "| {name} | {bin:.2} | {json:.2} | {:.1} | {bin_len} | {json_len} |",
            json / bin
        );
    }
    Ok(())
}
