//! The dispatcher with fake backends: selection order, environment validation, disable/include
//! lists and scopes, unsupported-op declarations, dtype and arch fall-through, device checks, the
//! device guard, tuning precedence, allocation, introspection.

use rffi_core::abi::{kDLCPU, kDLCUDA, DLTensor};
use rffi_core::{Any, AnyView, DataType, Device, Tensor};
use rffi_kernels::{Availability, Backend, DeviceInfo, Implementation, Op, OpCall, Registry};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const F32: DataType = DataType::float(32);
const F64: DataType = DataType::float(64);

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

/// A kernel that fills a CPU output with `value`.
fn fill(value: f32) -> impl Fn(&OpCall<'_>) -> rffi_core::Result<()> + Send + Sync {
    move |call| {
        if call.dtype == F64 {
            // SAFETY: the output is a fresh or test-owned CPU tensor nobody else touches.
            unsafe { call.out.as_mut_slice::<f64>() }?.fill(value as f64);
        } else {
            // SAFETY: as above.
            unsafe { call.out.as_mut_slice::<f32>() }?.fill(value);
        }
        Ok(())
    }
}

/// A CPU backend whose every op fills the output with `value`.
fn filler(name: &str, priority: i32, value: f32, dtypes: &[DataType]) -> Backend {
    let dtypes = dtypes.to_vec();
    Backend::new(name, &[kDLCPU])
        .priority(priority)
        .implementations(move |_| {
            Ok(Op::ALL
                .iter()
                .map(|&op| Implementation::new(op, kDLCPU, &dtypes, fill(value)))
                .collect())
        })
}

fn cpu_fallback() -> Backend {
    filler("cpu", 0, 1.0, &[F32, F64]).fallback()
}

fn tensor(values: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_slice(values, shape).unwrap()
}

fn add(reg: &Registry) -> rffi_core::Result<f32> {
    let a = tensor(&[0.0; 4], &[4]);
    let b = tensor(&[0.0; 4], &[4]);
    let out = reg.call(Op::Add, &[Any::from(&a).view(), Any::from(&b).view()])?;
    Ok(out.try_as::<Tensor>()?.to_vec::<f32>()?[0])
}

/// Asserts that `e`'s message contains `text`, showing the message when it does not.
fn assert_mentions(e: &rffi_core::Error, text: &str) {
    assert!(e.message().contains(text), "{}", e.message());
}

fn views(args: &[Any]) -> Vec<AnyView<'_>> {
    args.iter().map(Any::view).collect()
}

#[test]
fn selection_order_probe_then_env_then_api_then_scope() {
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(cpu_fallback()).unwrap();
    reg.register_backend(filler("fast", 10, 2.0, &[F32]))
        .unwrap();
    reg.register_backend(filler("medium", 5, 3.0, &[F32]))
        .unwrap();
    assert_eq!(reg.backend_names(), ["fast", "medium", "cpu"]);
    assert_eq!(add(&reg).unwrap(), 2.0, "probes in priority order");

    let reg = Registry::with_env(env(&[("RFFI_KERNELS_BACKEND", "medium")]));
    reg.register_backend(cpu_fallback()).unwrap();
    reg.register_backend(filler("fast", 10, 2.0, &[F32]))
        .unwrap();
    reg.register_backend(filler("medium", 5, 3.0, &[F32]))
        .unwrap();
    assert_eq!(add(&reg).unwrap(), 3.0, "the environment beats probes");
    reg.set_backend(Some("cpu")).unwrap();
    assert_eq!(add(&reg).unwrap(), 1.0, "the API beats the environment");
    {
        let _s = reg.scope().backend("fast").unwrap().enter();
        assert_eq!(add(&reg).unwrap(), 2.0, "a scope beats the API");
        {
            let _inner = reg.scope().backend("medium").unwrap().enter();
            assert_eq!(add(&reg).unwrap(), 3.0, "the innermost scope wins");
        }
        assert_eq!(add(&reg).unwrap(), 2.0);
    }
    assert_eq!(add(&reg).unwrap(), 1.0, "the scope restored the API choice");
    reg.set_backend(None).unwrap();
    assert_eq!(
        add(&reg).unwrap(),
        3.0,
        "clearing the API gives the environment back"
    );

    let e = reg.set_backend(Some("tpu")).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert_mentions(
        &e,
        "unknown kernels backend `tpu`; valid backends: fast, medium, cpu",
    );
    assert!(reg.scope().backend("tpu").is_err());
}

#[test]
fn unknown_backend_in_the_environment_is_an_error_listing_valid_names() {
    let reg = Registry::with_env(env(&[("RFFI_KERNELS_BACKEND", "cuda")]));
    reg.register_backend(cpu_fallback()).unwrap();
    let e = add(&reg).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert_mentions(
        &e,
        "RFFI_KERNELS_BACKEND: unknown kernels backend `cuda`; valid backends: cpu",
    );
    let d = reg.describe();
    assert!(d["selection"]["cpu"]["error"]
        .as_str()
        .unwrap()
        .contains("unknown kernels backend"));
}

#[test]
fn probes_run_once_at_first_use_and_failures_fall_through() {
    let probes = Arc::new(AtomicUsize::new(0));
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(cpu_fallback()).unwrap();
    let p = probes.clone();
    reg.register_backend(filler("flaky", 10, 2.0, &[F32]).probe(move || {
        p.fetch_add(1, Ordering::SeqCst);
        Err("no device found".into())
    }))
    .unwrap();
    assert_eq!(
        probes.load(Ordering::SeqCst),
        0,
        "registration probes nothing"
    );
    assert_eq!(
        add(&reg).unwrap(),
        1.0,
        "an unavailable backend falls through to the CPU"
    );
    assert_eq!(add(&reg).unwrap(), 1.0);
    assert_eq!(probes.load(Ordering::SeqCst), 1, "the probe runs once");
    let d = reg.describe();
    let sel = &d["selection"]["cpu"];
    assert_eq!(sel["chosen"], "cpu");
    assert_eq!(sel["rejected"][0]["backend"], "flaky");
    assert!(sel["rejected"][0]["why"]
        .as_str()
        .unwrap()
        .contains("no device found"));
    assert_eq!(d["backends"][0]["available"], false);
    assert_eq!(d["backends"][0]["reason"], "no device found");

    // Choosing the unavailable backend explicitly is an error with the probe's reason.
    reg.set_backend(Some("flaky")).unwrap();
    let e = add(&reg).unwrap_err();
    assert_mentions(
        &e,
        "kernels backend `flaky` (chosen by set_backend()) is unavailable: no device found",
    );
}

/// A panicking probe or implementation table makes its backend unavailable with the panic's
/// message, and prints nothing: the registry catches panics the way every rffi boundary does
/// (`catch_panic`). The checks run in a child process (this test again), whose stderr shows
/// whether anything was printed.
#[test]
fn a_panicking_probe_is_an_unavailable_backend() {
    const CHILD: &str = "RFFI_KERNELS_PANIC_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "a_panicking_probe_is_an_unavailable_backend"])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(!stderr.contains("panicked"), "stderr: {stderr}");
        return;
    }
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(cpu_fallback()).unwrap();
    reg.register_backend(filler("broken", 10, 2.0, &[F32]).probe(|| panic!("libfoo.so not found")))
        .unwrap();
    reg.register_backend(
        Backend::new("no-table", &[kDLCPU])
            .priority(5)
            .implementations(|_| panic!("no kernel table")),
    )
    .unwrap();
    assert_eq!(add(&reg).unwrap(), 1.0);
    let d = reg.describe();
    let backend = |name: &str| {
        d["backends"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == name)
            .unwrap()
            .clone()
    };
    let reason = backend("broken")["reason"].as_str().unwrap().to_owned();
    assert_eq!(reason, "the probe failed: panic: libfoo.so not found");
    let impls = backend("no-table")["implementations"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        impls,
        "installing its implementations failed: panic: no kernel table"
    );
}

#[test]
fn disable_and_only_from_env_api_and_scopes() {
    let reg = Registry::with_env(env(&[("RFFI_KERNELS_DISABLE", "add, matmul")]));
    reg.register_backend(cpu_fallback()).unwrap();
    let e = add(&reg).unwrap_err();
    assert_eq!(e.kind(), "RuntimeError");
    assert_eq!(
        e.message(),
        "kernels.add is disabled by RFFI_KERNELS_DISABLE=add, matmul"
    );
    reg.set_disabled(Some(&["mul"])).unwrap();
    assert_eq!(
        add(&reg).unwrap(),
        1.0,
        "the API list replaces the environment's"
    );
    {
        let _s = reg.scope().disable(&["add"]).unwrap().enter();
        assert!(add(&reg)
            .unwrap_err()
            .message()
            .contains("disabled by a kernels scope"));
    }
    assert_eq!(add(&reg).unwrap(), 1.0, "the scope's list is gone with it");
    {
        let _s = reg.scope().only(&["sub,mul"]).unwrap().enter();
        assert!(add(&reg)
            .unwrap_err()
            .message()
            .contains("not in a kernels scope's include list"));
    }
    reg.set_only(Some(&["exp"])).unwrap();
    assert!(add(&reg)
        .unwrap_err()
        .message()
        .contains("not in set_only()"));
    reg.set_only(None).unwrap();
    let ops = reg.list_ops();
    let add_info = ops
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "add")
        .unwrap();
    assert_eq!(add_info["enabled"], true);
    let mul_info = ops
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "mul")
        .unwrap();
    assert_eq!(mul_info["enabled"], false);
    assert_eq!(mul_info["why"], "disabled by set_disabled()");
    assert!(reg
        .set_disabled(Some(&["ad"]))
        .unwrap_err()
        .message()
        .contains("unknown op `ad`"));

    let reg = Registry::with_env(env(&[("RFFI_KERNELS_ONLY", "sub")]));
    reg.register_backend(cpu_fallback()).unwrap();
    assert_eq!(
        add(&reg).unwrap_err().message(),
        "kernels.add is not in RFFI_KERNELS_ONLY=sub"
    );
}

#[test]
fn a_typo_in_an_op_list_fails_every_call() {
    let reg = Registry::with_env(env(&[("RFFI_KERNELS_DISABLE", "addd")]));
    reg.register_backend(cpu_fallback()).unwrap();
    let e = add(&reg).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert_mentions(
        &e,
        "RFFI_KERNELS_DISABLE: unknown op `addd`; valid ops: add,",
    );
    assert_eq!(reg.describe()["errors"][0].as_str().unwrap(), e.message());
}

#[test]
fn scopes_are_per_thread_and_unwind_in_order() {
    let reg = Arc::new(Registry::with_env(env(&[])));
    reg.register_backend(cpu_fallback()).unwrap();
    let outer = reg.push_scope(Some("add"), None, None).unwrap();
    let _inner = reg.push_scope(None, Some("exp"), None).unwrap();
    let r2 = reg.clone();
    std::thread::spawn(move || assert_eq!(add(&r2).unwrap(), 1.0, "other threads are unaffected"))
        .join()
        .unwrap();
    assert!(add(&reg).is_err());
    // Popping the outer token closes the inner scope too.
    reg.pop_scope(outer).unwrap();
    assert_eq!(add(&reg).unwrap(), 1.0);
    assert!(reg
        .pop_scope(outer)
        .unwrap_err()
        .message()
        .contains("does not name an open scope"));
}

#[test]
fn declared_unsupported_ops_are_enforced() {
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(cpu_fallback()).unwrap();
    reg.register_backend(
        filler("fast", 10, 2.0, &[F32]).unsupported(Op::Add, "no adder on this chip"),
    )
    .unwrap();
    assert_eq!(
        add(&reg).unwrap(),
        1.0,
        "add falls through to the next backend"
    );
    // Other ops still use it.
    let x = tensor(&[0.0; 2], &[2]);
    let r = reg.call(Op::Exp, &[Any::from(&x).view()]).unwrap();
    assert_eq!(
        r.try_as::<Tensor>().unwrap().to_vec::<f32>().unwrap(),
        [2.0, 2.0]
    );

    // Without a fallback, the declaration is the error.
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(filler("only", 10, 2.0, &[F32]).fallback().probe(|| {
        Ok(Availability {
            unsupported: vec![(Op::Add, "found no adder".into())],
            ..Availability::default()
        })
    }))
    .unwrap();
    let e = add(&reg).unwrap_err();
    assert_mentions(&e, "only: does not support add: found no adder");
    let ops = reg.list_ops();
    let add_info = ops
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "add")
        .unwrap();
    assert_eq!(add_info["implementations"][0]["usable"], false);
    assert_eq!(
        reg.describe()["backends"][0]["unsupported_ops"]["add"],
        "found no adder"
    );
}

#[test]
fn unsupported_dtypes_fall_through_or_error_with_the_supported_list() {
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(cpu_fallback()).unwrap();
    reg.register_backend(filler("fast", 10, 2.0, &[F32]))
        .unwrap();
    let a = Tensor::from_slice(&[0.0f64; 2], &[2]).unwrap();
    let r = reg
        .call(Op::Exp, &[Any::from(&a).view()])
        .unwrap()
        .try_as::<Tensor>()
        .unwrap();
    assert_eq!(
        r.to_vec::<f64>().unwrap(),
        [1.0, 1.0],
        "float64 went to the CPU backend"
    );
    let i = Tensor::from_slice(&[0i8; 2], &[2]).unwrap();
    let e = reg.call(Op::Exp, &[Any::from(&i).view()]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(
        e.message(),
        "kernels.exp: no implementation for int8 tensors on cpu:0 (fast supports float32; cpu \
         supports float32, float64)"
    );
}

/// A tensor on a CUDA device that is never dereferenced (the fake backends only log).
fn fake_cuda(index: i32, shape: &[i64], addr: usize) -> Tensor {
    let mut shape = shape.to_vec();
    let dl = DLTensor {
        data: addr as *mut _,
        device: Device::cuda(index).raw(),
        ndim: shape.len() as i32,
        dtype: F32.raw(),
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    // SAFETY: a valid DLTensor whose shape outlives the call; the data is never read.
    unsafe { Tensor::from_dltensor_borrowed(NonNull::from(&dl)) }.unwrap()
}

type Log = Arc<Mutex<Vec<String>>>;

fn fake_gpu(log: &Log) -> Backend {
    let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
    Backend::new("fakegpu", &[kDLCUDA])
        .priority(100)
        .probe(|| {
            Ok(Availability {
                devices: vec![
                    DeviceInfo {
                        device_type: kDLCUDA,
                        index: 0,
                        arch: Some("sm_90".into()),
                        name: "A".into(),
                    },
                    DeviceInfo {
                        device_type: kDLCUDA,
                        index: 1,
                        arch: Some("sm_80".into()),
                        name: "B".into(),
                    },
                ],
                detail: "2 devices".into(),
                unsupported: Vec::new(),
            })
        })
        .implementations(move |_| {
            let (g, h) = (l1.clone(), l1.clone());
            Ok(vec![
                Implementation::new(Op::Add, kDLCUDA, &[F32], move |c| {
                    g.lock()
                        .unwrap()
                        .push(format!("generic add on {}", c.device));
                    Ok(())
                }),
                Implementation::new(Op::Add, kDLCUDA, &[F32], move |c| {
                    h.lock()
                        .unwrap()
                        .push(format!("hopper add on {}", c.device));
                    if c.out.shape() == [13] {
                        return Err(rffi_core::Error::runtime_error("kernel failed"));
                    }
                    Ok(())
                })
                .for_arch("sm_90"),
            ])
        })
        .device_guard(move |d| {
            l2.lock().unwrap().push(format!("enter {d}"));
            let l = l3.clone();
            struct Restore(Log);
            impl Drop for Restore {
                fn drop(&mut self) {
                    self.0.lock().unwrap().push("restore".into());
                }
            }
            Ok(Box::new(Restore(l)) as rffi_kernels::GuardToken)
        })
}

#[test]
fn arch_specific_implementations_outrank_generic_ones_under_the_device_guard() {
    let log: Log = Arc::default();
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(cpu_fallback()).unwrap();
    reg.register_backend(fake_gpu(&log)).unwrap();
    let call = |index: i32, n: i64| {
        let a = fake_cuda(index, &[n], 0x1000);
        let b = fake_cuda(index, &[n], 0x2000);
        let o = fake_cuda(index, &[n], 0x3000);
        reg.call(
            Op::Add,
            &views(&[Any::from(&a), Any::from(&b), Any::from(&o)]),
        )
    };
    assert!(
        call(0, 4).unwrap().is_none(),
        "destination-passing returns None"
    );
    call(1, 4).unwrap();
    assert!(call(0, 13).is_err());
    assert_eq!(
        *log.lock().unwrap(),
        [
            "enter cuda:0",
            "hopper add on cuda:0",
            "restore",
            "enter cuda:1",
            "generic add on cuda:1",
            "restore",
            "enter cuda:0",
            "hopper add on cuda:0",
            "restore",
        ],
        "the guard wraps every kernel and is restored after a failure too"
    );
    // No fake-GPU implementation of exp, and the CPU backend does not serve CUDA memory.
    let a = fake_cuda(0, &[4], 0x1000);
    let e = reg.call(Op::Exp, &[Any::from(&a).view()]).unwrap_err();
    assert_mentions(&e, "fakegpu: no implementation of exp for cuda (sm_90)");
    // Choosing the CPU backend leaves nothing for CUDA tensors, and says so.
    reg.set_backend(Some("cpu")).unwrap();
    let e = call(0, 4).unwrap_err();
    assert_mentions(&e, "kernels backend `cpu` (chosen by set_backend()) does not serve cuda; backends serving it: fakegpu");
}

#[test]
fn tensors_on_different_devices_are_an_error_naming_both() {
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(cpu_fallback()).unwrap();
    let a = tensor(&[0.0; 4], &[4]);
    let b = fake_cuda(1, &[4], 0x1000);
    let e = reg
        .call(Op::Add, &views(&[Any::from(&a), Any::from(&b)]))
        .unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert_eq!(
        e.message(),
        "kernels.add: tensors are on different devices: a (argument #0) is on cpu:0 but b \
         (argument #1) is on cuda:1"
    );
    let o = fake_cuda(0, &[4], 0x1000);
    let e = reg
        .call(Op::Exp, &views(&[Any::from(&a), Any::from(&o)]))
        .unwrap_err();
    assert_mentions(&e, "out (argument #1) is on cuda:0");
}

fn tuned_backend() -> Backend {
    Backend::new("tuned", &[kDLCPU])
        .fallback()
        .probe(|| {
            Ok(Availability {
                devices: vec![DeviceInfo { device_type: kDLCPU, index: 0, arch: Some("zen4".into()), name: "cpu".into() }],
                ..Availability::default()
            })
        })
        .tune_file("default.json", r#"{"exp": [{"value": 10}], "add": [{"value": 20}]}"#)
        .tune_file(
            "zen4.json",
            r#"{"exp": [{"gen": {"value": [30, 31, 32]}, "where": "value != 30", "when": "n >= 4"}, {"value": 40}]}"#,
        )
        .implementations(|_| {
            let k = |c: &OpCall<'_>| {
                let n = c.out.numel();
                let v = c.tune.param(c.op.name(), "value", &[("n", n)], -1)?;
                // SAFETY: a fresh CPU output.
                unsafe { c.out.as_mut_slice::<f32>() }?.fill(v as f32);
                Ok(())
            };
            Ok(vec![
                Implementation::new(Op::Exp, kDLCPU, &[F32], k),
                Implementation::new(Op::Add, kDLCPU, &[F32], k),
                Implementation::new(Op::Relu, kDLCPU, &[F32], k),
            ])
        })
}

fn run1(reg: &Registry, op: Op, n: usize) -> f32 {
    let x = tensor(&vec![0.0; n], &[n as i64]);
    let args = if op == Op::Add {
        vec![Any::from(&x), Any::from(&x)]
    } else {
        vec![Any::from(&x)]
    };
    reg.call(op, &views(&args))
        .unwrap()
        .try_as::<Tensor>()
        .unwrap()
        .to_vec::<f32>()
        .unwrap()[0]
}

#[test]
fn tuning_configs_arch_then_backend_then_builtin() {
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(tuned_backend()).unwrap();
    assert_eq!(
        run1(&reg, Op::Exp, 8),
        31.0,
        "arch file, first generated config that applies"
    );
    assert_eq!(
        run1(&reg, Op::Exp, 2),
        40.0,
        "arch file, the next entry when `when` fails"
    );
    assert_eq!(
        run1(&reg, Op::Add, 2),
        20.0,
        "backend file when the arch file lacks the key"
    );
    assert_eq!(
        run1(&reg, Op::Relu, 2),
        -1.0,
        "built-in default when no file has the key"
    );

    let dir = std::env::temp_dir().join(format!("rffi-kernels-tune-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("tuned")).unwrap();
    std::fs::write(
        dir.join("tuned/default.json"),
        r#"{"exp": [{"value": 50}]}"#,
    )
    .unwrap();
    let reg = Registry::with_env(env(&[("RFFI_KERNELS_TUNE_DIR", dir.to_str().unwrap())]));
    reg.register_backend(tuned_backend()).unwrap();
    assert_eq!(
        run1(&reg, Op::Exp, 8),
        50.0,
        "RFFI_KERNELS_TUNE_DIR replaces the built-in files"
    );
    assert_eq!(run1(&reg, Op::Add, 8), -1.0);
    assert!(reg.describe()["backends"][0]["tune"]
        .as_str()
        .unwrap()
        .contains("rffi-kernels-tune"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_broken_tuning_file_is_reported_when_the_backend_runs() {
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(
        filler("cpu", 0, 1.0, &[F32])
            .fallback()
            .tune_file("default.json", r#"{"add": 3}"#),
    )
    .unwrap();
    let e = add(&reg).unwrap_err();
    assert_mentions(
        &e,
        "tuning files of backend `cpu`: built-in tune/cpu/default.json: `add` must be a list",
    );
}

#[test]
fn allocation_uses_the_environment_and_destination_passing_returns_none() {
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(cpu_fallback()).unwrap();
    let a = tensor(&[0.0; 6], &[2, 3]);
    let r = reg
        .call(Op::Sum, &[Any::from(&a).view(), Any::from(-1i64).view()])
        .unwrap();
    assert_eq!(r.try_as::<Tensor>().unwrap().shape(), [2]);
    let r = reg.call(Op::Sum, &[Any::from(&a).view()]).unwrap();
    assert_eq!(r.try_as::<Tensor>().unwrap().shape(), [] as [i64; 0]);
    let out = tensor(&[0.0; 6], &[2, 3]);
    let r = reg
        .call(Op::Exp, &views(&[Any::from(&a), Any::from(&out)]))
        .unwrap();
    assert!(r.is_none());
    assert_eq!(out.to_vec::<f32>().unwrap(), [1.0; 6]);
}

#[test]
fn registering_a_name_twice_is_an_error() {
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(cpu_fallback()).unwrap();
    let e = reg.register_backend(cpu_fallback()).unwrap_err();
    assert_eq!(e.kind(), "KeyError");
}

#[test]
fn describe_names_the_step_and_the_order() {
    let reg = Registry::with_env(env(&[("RFFI_KERNELS_BACKEND", "fast")]));
    reg.register_backend(cpu_fallback()).unwrap();
    reg.register_backend(filler("fast", 10, 2.0, &[F32]))
        .unwrap();
    reg.register_backend(filler("medium", 5, 3.0, &[F32]))
        .unwrap();
    let d = reg.describe();
    let sel = &d["selection"]["cpu"];
    assert_eq!(sel["chosen"], "fast");
    assert_eq!(sel["step"], "chosen by RFFI_KERNELS_BACKEND");
    assert_eq!(sel["order"], serde_json::json!(["fast", "cpu"]));
    assert_eq!(sel["rejected"][0]["backend"], "medium");
    assert_eq!(d["settings"]["backend_source"], "RFFI_KERNELS_BACKEND");
    assert_eq!(d["backends"][0]["name"], "fast");
    assert_eq!(d["backends"][2]["fallback"], true);
}

#[test]
fn a_backend_registered_after_calls_takes_over_the_next_call() {
    // Resolutions are remembered between calls; registering a backend must make them stale.
    let reg = Registry::with_env(env(&[]));
    reg.register_backend(cpu_fallback()).unwrap();
    assert_eq!(add(&reg).unwrap(), 1.0);
    assert_eq!(add(&reg).unwrap(), 1.0);
    reg.register_backend(filler("fast", 10, 2.0, &[F32]))
        .unwrap();
    assert_eq!(add(&reg).unwrap(), 2.0);
    reg.set_disabled(Some(&["add"])).unwrap();
    assert!(add(&reg).is_err());
    reg.set_disabled(None).unwrap();
    assert_eq!(add(&reg).unwrap(), 2.0);
}
