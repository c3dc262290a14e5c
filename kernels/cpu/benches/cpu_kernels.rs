//! CPU `add` and `softmax` on 16M float32 (4096 x 4096), through the dispatcher as a host calls
//! them: `cargo bench -p rffi-kernels-cpu --bench cpu_kernels`. Prints a table; compare with
//! numpy through `kernels/benches/bench_kernels.py`.

use rffi_core::{Any, AnyView, DataType, Tensor};
use rffi_kernels::{Op, Registry};
use std::time::Instant;

fn median_ms(mut f: impl FnMut(), reps: usize) -> (f64, f64) {
    f();
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[t.len() / 2], t[0])
}

fn main() {
    let reg = Registry::new();
    reg.register_backend(rffi_kernels_cpu::backend()).unwrap();
    let (rows, cols) = (4096i64, 4096i64);
    let n = (rows * cols) as usize;
    let vals: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0)
        .collect();
    let a = Tensor::from_slice(&vals, &[rows, cols]).unwrap();
    let b = Tensor::from_slice(&vals, &[rows, cols]).unwrap();
    let out = Tensor::empty(&[rows, cols], DataType::float(32), rffi_core::Device::cpu()).unwrap();
    let (aa, ba, oa) = (Any::from(&a), Any::from(&b), Any::from(&out));
    let call = |op: Op, args: &[&Any]| {
        let v: Vec<AnyView<'_>> = args.iter().map(|a| a.view()).collect();
        reg.call(op, &v).unwrap()
    };
    let reps = 15;
    let bytes = (n * 4) as f64;
    println!(
        "CPU kernels, 16M float32 ({rows}x{cols}), {} threads, median of {reps}",
        rayon::current_num_threads()
    );
    println!("| kernel | median ms | best ms | GB/s (median) |");
    println!("|---|---|---|---|");
    let axis = Any::from(-1i64);
    let rows_out = [
        ("add(a, b, out)", Op::Add, vec![&aa, &ba, &oa], 3.0),
        ("add(a, b) allocating", Op::Add, vec![&aa, &ba], 3.0),
        (
            "softmax(x, -1, out)",
            Op::Softmax,
            vec![&aa, &axis, &oa],
            2.0,
        ),
        ("softmax(x) allocating", Op::Softmax, vec![&aa], 2.0),
    ];
    for (name, op, args, traffic) in rows_out {
        let (med, best) = median_ms(|| drop(call(op, &args)), reps);
        println!(
            "| {name} | {med:.2} | {best:.2} | {:.1} |",
            traffic * bytes / med / 1e6
        );
    }
    // The dispatcher's own cost: a 4-element add, where the arithmetic is nothing.
    let tiny: Vec<Any> = (0..3)
        .map(|_| Any::from(&Tensor::from_slice(&[1.0f32; 4], &[4]).unwrap()))
        .collect();
    let tiny: Vec<&Any> = tiny.iter().collect();
    let calls = 200_000;
    let (med, _) = median_ms(
        || {
            for _ in 0..calls {
                drop(call(Op::Add, &tiny));
            }
        },
        5,
    );
    println!(
        "| add of 4 elements (dispatch cost), us per call | {:.3} | | |",
        med * 1e3 / calls as f64
    );
}
