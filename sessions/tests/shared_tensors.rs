//! Tensors `empty` makes in shared memory (each worker's, mapped by the controller too): host
//! copies, fetches of tensors, failures raised at a copy, and every mapping freed with the DRef
//! and at shutdown, with nothing left in /dev/shm. Fetches and copies are checked on connected
//! workers too (the `socket` kind: the bytes travel in the frames).

mod common;

use common::sessions;
use rffi_core::{Any, Array, DataType, Device, Tensor};

/// Mappings of session tensors of exactly `bytes` bytes in process `pid` (tests running at the
/// same time use other sizes).
fn tensor_maps(pid: i32, bytes: usize) -> usize {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    maps.lines()
        .filter(|l| l.contains("/memfd:rffi-tensor"))
        .filter(|l| {
            let range = l.split_whitespace().next().unwrap();
            let (a, b) = range.split_once('-').unwrap();
            let size =
                usize::from_str_radix(b, 16).unwrap() - usize::from_str_radix(a, 16).unwrap();
            size == bytes
        })
        .count()
}

fn shm_files_of_this_process() -> usize {
    let pid = std::process::id().to_string();
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("rffi-") && name.contains(&pid)
        })
        .count()
}

fn floats(t: &Any) -> Vec<f32> {
    t.try_as::<Tensor>().unwrap().to_vec::<f32>().unwrap()
}

#[test]
fn empty_tensors_are_shared_and_freed_with_the_dref_and_at_shutdown() {
    let me = std::process::id() as i32;
    // On this host only: connected workers make their tensors alone.
    for (i, (kind, s)) in sessions(3).into_iter().take(2).enumerate() {
        // A size no other test uses: 75 or 76 pages.
        let elems = (75 + i) * 1024;
        let bytes = elems * 4;
        let t = s
            .empty(&[elems as i64], DataType::float(32), Device::cpu())
            .unwrap();
        s.sync().unwrap();
        let pids = s.worker_pids();
        // The controller maps all three; thread workers map theirs in this process too.
        let here = if kind == "thread" { 6 } else { 4 };
        assert_eq!(tensor_maps(me, bytes), here, "{kind}");
        for &p in &pids {
            assert_eq!(tensor_maps(p, bytes), 1, "{kind}: worker pid {p}");
        }

        let host: Vec<f32> = (0..elems).map(|k| k as f32).collect();
        let host = Tensor::from_slice(&host, &[elems as i64]).unwrap();
        s.copy_to_worker_0(&host, &t).unwrap();
        assert_eq!(floats(&t.fetch(0).unwrap())[elems - 1], (elems - 1) as f32);
        assert!(floats(&t.fetch(2).unwrap()).iter().all(|x| *x == 0.0));
        let out = Tensor::alloc_cpu(&[elems as i64], DataType::float(32)).unwrap();
        s.copy_from_worker_0(&out, &t).unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap(), host.to_vec::<f32>().unwrap());

        // Released: the controller's mappings go at once, the workers' with the next command.
        drop(t);
        assert_eq!(tensor_maps(me, bytes), here - 3, "{kind}");
        s.get_global_func("testing.nop").unwrap();
        s.sync().unwrap();
        assert_eq!(tensor_maps(me, bytes), 0, "{kind}");
        for &p in &pids {
            assert_eq!(tensor_maps(p, bytes), 0, "{kind}: worker pid {p}");
        }

        // Shutdown frees what is still held.
        let _kept = s
            .empty(&[elems as i64], DataType::float(32), Device::cpu())
            .unwrap();
        s.sync().unwrap();
        assert_eq!(tensor_maps(me, bytes), here, "{kind}");
        s.shutdown();
        assert_eq!(tensor_maps(me, bytes), 0, "{kind}");
        assert_eq!(shm_files_of_this_process(), 0, "{kind}");
    }
}

#[test]
fn tensors_fetched_from_workers_come_back_as_host_tensors() {
    for (kind, s) in sessions(2) {
        let echo = s.get_global_func("testing.echo").unwrap();
        let host = Tensor::from_slice(&[1.5f32, 2.5, 3.5], &[3]).unwrap();
        // A worker's own tensor (its private copy of the argument), alone and in an array.
        let r = echo.call(&[(&host).into()]).unwrap();
        let got = r.fetch(1).unwrap();
        assert_eq!(floats(&got), [1.5, 2.5, 3.5], "{kind}");
        assert_eq!(got.try_as::<Tensor>().unwrap().shape(), [3]);
        let both = echo
            .call(&[Array::new(vec![(&host).into(), 7i64.into()]).into()])
            .unwrap();
        let arr: Array = both.fetch(0).unwrap().try_as().unwrap();
        assert_eq!(
            floats(&arr.get(0).unwrap().to_owned().unwrap()),
            [1.5, 2.5, 3.5],
            "{kind}"
        );
        assert_eq!(arr.get(1).unwrap().try_as::<i64>().unwrap(), 7);
        // A fetched tensor is a copy: changing it changes nothing on the worker.
        let t = got.try_as::<Tensor>().unwrap();
        // SAFETY: no other slice of `t` is alive.
        unsafe { t.as_mut_slice::<f32>().unwrap()[0] = 0.0 };
        assert_eq!(floats(&r.fetch(1).unwrap())[0], 1.5, "{kind}");
        // Shared tensors: the zero-size one is a worker's own, still fetchable.
        let z = s.empty(&[0], DataType::float(32), Device::cpu()).unwrap();
        assert!(floats(&z.fetch(1).unwrap()).is_empty(), "{kind}");
        s.sync().unwrap();
    }
}

#[test]
fn a_pending_failure_is_raised_at_a_shared_copy_and_the_session_goes_on() {
    for (kind, s) in sessions(2) {
        let t = s.empty(&[4], DataType::float(32), Device::cpu()).unwrap();
        s.get_global_func("testing.raise_error")
            .unwrap()
            .call(&["ValueError".into(), "before the copy".into()])
            .unwrap();
        let host = Tensor::from_slice(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let e = s.copy_to_worker_0(&host, &t).unwrap_err();
        assert_eq!(e.kind(), "ValueError", "{kind}");
        assert!(
            e.message().contains("worker 0") && e.message().contains("before the copy"),
            "{kind}: {}",
            e.message()
        );
        // Worker 1's copy of the failure comes with the next sync; then all is well.
        assert_eq!(s.sync().unwrap_err().kind(), "ValueError");
        s.copy_to_worker_0(&host, &t).unwrap();
        assert_eq!(floats(&t.fetch(0).unwrap()), [1., 2., 3., 4.], "{kind}");
        // Sizes must match, and the error names both.
        let small = Tensor::alloc_cpu(&[3], DataType::float(32)).unwrap();
        let e = s.copy_from_worker_0(&small, &t).unwrap_err();
        assert!(
            e.message().contains("12 bytes") && e.message().contains("has 16"),
            "{}",
            e.message()
        );
        s.sync().unwrap();
    }
}
