//! Loading parameters sharded at load time: the built-in steps, safetensors files (single and
//! indexed), plans of one and two steps, every error, and `load_params` on both session kinds.

use rffi_core::{register_global, Any, Error, Result, Tensor};
use rffi_session::shard::{load_local, load_local_path, ShardInfo, Via, Weights};
use rffi_session::{ProcessSession, Session, ThreadSession, WorkerProgram};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

// A user step: doubles a float32 tensor into the output (same shape).
register_global!("shard_test.double", |src: Tensor,
                                       dst: Tensor|
 -> Result<()> {
    let v = src.to_vec::<f32>()?;
    // SAFETY: `dst` is the loader's fresh output, aliased by nothing during this call.
    let d = unsafe { dst.as_mut_slice::<f32>()? };
    if d.len() != v.len() {
        return Err(Error::value_error("shard_test.double: sizes differ"));
    }
    d.iter_mut().zip(v).for_each(|(o, x)| *o = 2.0 * x);
    Ok(())
});

/// Writes a safetensors file of float32 tensors (format: u64 header length, JSON header, data).
fn write_st(path: &Path, tensors: &[(&str, &[i64], Vec<f32>)]) {
    let mut header = Vec::new();
    let mut data = Vec::new();
    for (name, shape, values) in tensors {
        let start = data.len();
        values
            .iter()
            .for_each(|x| data.extend_from_slice(&x.to_le_bytes()));
        header.push(format!(
            r#""{name}":{{"dtype":"F32","shape":{shape:?},"data_offsets":[{start},{}]}}"#,
            data.len()
        ));
    }
    write_raw_st(path, &format!("{{{}}}", header.join(",")), &data);
}

fn arange(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rffi-shard-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `w` (4, 6), `b` (6,), `qkv` (12, 2): q_heads 2, kv_heads 2, head_dim 2.
fn weights(dir: &Path) -> PathBuf {
    let p = dir.join("model.safetensors");
    write_st(
        &p,
        &[
            ("w", &[4, 6], arange(24)),
            ("b", &[6], arange(6)),
            ("qkv", &[12, 2], arange(24)),
        ],
    );
    p
}

const PLAN: &str = r#"{
  "w": [["rffi.shard.split", [[2, 4, 3], "float32"], 2, 1]],
  "qkv": [["rffi.shard.qkv", [[2, 6, 2], "float32"], 2, 2, 2]]
}"#;

fn get(params: &[(String, Tensor)], name: &str) -> Tensor {
    params.iter().find(|(n, _)| n == name).unwrap().1.clone()
}

#[test]
fn split_and_qkv_shard_by_rank() {
    let dir = tmpdir("local");
    let w = Weights::open(weights(&dir)).unwrap();
    let info = ShardInfo::parse(PLAN).unwrap();
    for rank in 0..2 {
        let p = load_local(&w, &info, rank, 2, false).unwrap();
        let wt = get(&p, "w");
        assert_eq!(wt.shape(), &[4, 3]);
        let want: Vec<f32> = (0..4)
            .flat_map(|r| (0..3).map(move |c| (r * 6 + rank * 3 + c) as f32))
            .collect();
        assert_eq!(wt.to_vec::<f32>().unwrap(), want);
        assert_eq!(
            get(&p, "b").to_vec::<f32>().unwrap(),
            arange(6),
            "replicated"
        );
        // Rows: q heads 0-1, 2-3; k heads 4-5, 6-7; v heads 8-9, 10-11.
        let q = get(&p, "qkv");
        assert_eq!(q.shape(), &[6, 2]);
        let rows = [[0, 1, 4, 5, 8, 9], [2, 3, 6, 7, 10, 11]][rank];
        let want: Vec<f32> = rows
            .iter()
            .flat_map(|r| [(r * 2) as f32, (r * 2 + 1) as f32])
            .collect();
        assert_eq!(q.to_vec::<f32>().unwrap(), want);
        // The same through the global functions (two steps: no direct copy from the file).
        let chain = ShardInfo::parse(
            r#"{"qkv": [["rffi.shard.qkv", [[2, 6, 2], "float32"], 2, 2, 2],
                        ["shard_test.double", [[2, 6, 2], "float32"]]],
                "w": [["rffi.shard.split", [[2, 4, 3], "float32"], 2, 1],
                      ["shard_test.double", [[2, 4, 3], "float32"]]]}"#,
        )
        .unwrap();
        let c = load_local(&w, &chain, rank, 2, false).unwrap();
        let twice = |t: Tensor| {
            t.to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|x| x * 2.0)
                .collect::<Vec<_>>()
        };
        assert_eq!(get(&c, "qkv").to_vec::<f32>().unwrap(), twice(q));
        assert_eq!(get(&c, "w").to_vec::<f32>().unwrap(), twice(wt));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_chain_of_two_steps_and_an_index_of_two_files() {
    let dir = tmpdir("index");
    write_st(&dir.join("a.safetensors"), &[("w", &[4, 2], arange(8))]);
    write_st(&dir.join("b.safetensors"), &[("b", &[3], arange(3))]);
    std::fs::write(
        dir.join("model.safetensors.index.json"),
        r#"{"metadata": {}, "weight_map": {"w": "a.safetensors", "b": "b.safetensors"}}"#,
    )
    .unwrap();
    let info = ShardInfo::parse(
        r#"{"w": [["rffi.shard.split", [[4, 1, 2], "float32"], 4],
                  ["shard_test.double", [[4, 1, 2], "float32"]]]}"#,
    )
    .unwrap();
    for rank in 0..4 {
        // The directory finds the index.
        let p = load_local_path(dir.to_str().unwrap(), &info, rank, 4, false).unwrap();
        let w = get(&p, "w");
        assert_eq!(w.shape(), &[1, 2]);
        let r = rank as f32;
        assert_eq!(w.to_vec::<f32>().unwrap(), vec![4.0 * r, 4.0 * r + 2.0]);
        assert_eq!(get(&p, "b").to_vec::<f32>().unwrap(), arange(3));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

fn load_err(path: &Path, plan: &str, world: usize) -> Error {
    let info = match ShardInfo::parse(plan) {
        Ok(i) => i,
        Err(e) => return e,
    };
    match load_local_path(path.to_str().unwrap(), &info, 0, world, false) {
        Ok(_) => panic!("expected an error for {plan}"),
        Err(e) => e,
    }
}

#[test]
fn errors_name_the_parameter_and_the_step() {
    let dir = tmpdir("errors");
    let p = weights(&dir);
    let cases: &[(&str, usize, &str, &str)] = &[
        (r#"{"w": [["no.such", [[2, 4, 3], "float32"]]]}"#, 2, "KeyError",
         "parameter `w`, step 0 (`no.such`): no registry function `no.such`"),
        (r#"{"w": [["rffi.shard.split", [[2, 4, 4], "float32"], 2, 1]]}"#, 2, "ValueError",
         "parameter `w`, step 0 (`rffi.shard.split`): rffi.shard.split: output shape [2, 4, 4] should be [2, 4, 3]"),
        (r#"{"w": [["rffi.shard.split", [[2, 4, 3], "float16"], 2, 1]]}"#, 2, "ValueError",
         "output dtype float16 differs from the input's float32"),
        (r#"{"w": [["rffi.shard.split", [[2, 4, 3], "float32"], 2, 1]]}"#, 3, "ValueError",
         "parameter `w`, step 0 (`rffi.shard.split`): the last output's shape [2, 4, 3] must lead with the worker count 3"),
        (r#"{"nope": [["rffi.shard.split", [[2, 3], "float32"], 2]]}"#, 2, "KeyError",
         "parameter `nope`: named in shard_info but not in the weights"),
        (r#"{"w": [["rffi.shard.split", [[2, 4, 3]], 2]]}"#, 2, "ValueError",
         "parameter `w`, step 0: the second item must be [out_shape, out_dtype]"),
        (r#"{"w": [["rffi.shard.split""#, 2, "ValueError", "shard_info: malformed JSON"),
    ];
    for (plan, world, kind, msg) in cases {
        let e = load_err(&p, plan, *world);
        assert_eq!(e.kind(), *kind, "{plan}: {}", e.message());
        assert!(e.message().contains(msg), "{plan}: {}", e.message());
    }
    let e = load_err(&dir.join("missing.safetensors"), "{}", 2);
    assert!(
        e.message().contains("missing.safetensors"),
        "{}",
        e.message()
    );
    // A truncated file: the header promises more bytes than there are.
    let bytes = std::fs::read(&p).unwrap();
    let cut = dir.join("cut.safetensors");
    std::fs::write(&cut, &bytes[..bytes.len() - 4]).unwrap();
    let e = load_err(&cut, "{}", 2);
    assert!(
        e.message().contains("not a valid safetensors file"),
        "{}",
        e.message()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

fn err_of<T>(r: Result<T>) -> Error {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

fn worker_program() -> WorkerProgram {
    WorkerProgram {
        program: env!("CARGO_BIN_EXE_rffi-worker").into(),
        args: vec![],
    }
}

/// The session test plugin (`session_test.sum`), built for this profile.
fn plugin() -> String {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "build",
            "-q",
            "-p",
            "rffi-session-test-plugin",
            "--target-dir",
        ])
        // With an explicit target (`CARGO_BUILD_TARGET`, inherited by this cargo, as in `make
        // sanitize`), the profile directory is `<target-dir>/<triple>/<profile>`.
        .arg(
            dir.ancestors()
                .nth(if std::env::var_os("CARGO_BUILD_TARGET").is_some() {
                    2
                } else {
                    1
                })
                .unwrap(),
        )
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "building the test plugin");
        dir.join("librffi_session_test_plugin.so")
    })
    .display()
    .to_string()
}

#[test]
fn load_params_on_both_session_kinds() {
    let dir = tmpdir("session");
    let path = weights(&dir);
    let path = path.to_str().unwrap();
    let info = ShardInfo::parse(PLAN).unwrap();
    let sessions: Vec<(&str, Session)> = vec![
        ("thread", ThreadSession::new(2).unwrap()),
        (
            "process",
            ProcessSession::with_program(2, &worker_program()).unwrap(),
        ),
    ];
    for (kind, s) in sessions {
        let m = s.load_module(&plugin()).unwrap();
        let sum = m.get_function("session_test.sum").unwrap();
        let params = s.load_params(path, &info, false).unwrap();
        assert_eq!(
            params.keys().collect::<Vec<_>>(),
            ["b", "qkv", "w"],
            "{kind}"
        );
        let w = &params["w"];
        for rank in 0..2 {
            // Column block `rank` of arange(24).reshape(4, 6).
            let want: f64 = (0..4)
                .flat_map(|r| (0..3).map(move |c| (r * 6 + rank * 3 + c) as f64))
                .sum();
            let got = sum.call(&[Any::from(w)]).unwrap().fetch(rank).unwrap();
            assert_eq!(got.try_as::<f64>().unwrap(), want, "{kind} rank {rank}");
            let b = sum
                .call(&[Any::from(&params["b"])])
                .unwrap()
                .fetch(rank)
                .unwrap();
            assert_eq!(b.try_as::<f64>().unwrap(), 15.0, "{kind} rank {rank}");
        }
        let host = Tensor::from_slice(&[0f32; 12], &[4, 3]).unwrap();
        s.copy_from_worker_0(&host, w).unwrap();
        assert_eq!(host.to_vec::<f32>().unwrap()[..4], [0.0, 1.0, 2.0, 6.0]);

        // A failure on the workers is raised by load_params; the session stays usable.
        let bad = ShardInfo::parse(r#"{"w": [["no.such", [[2], "float32"]]]}"#).unwrap();
        let e = err_of(s.load_params(path, &bad, false));
        assert!(
            e.message().contains("parameter `w`, step 0 (`no.such`)"),
            "{kind}: {}",
            e.message()
        );
        let e = err_of(s.load_params("/no/such.safetensors", &info, false));
        assert!(
            e.message().contains("/no/such.safetensors"),
            "{kind}: {}",
            e.message()
        );
        assert_eq!(
            s.load_params(path, &info, false).unwrap().len(),
            3,
            "{kind}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Weight files each worker of `s` has opened so far.
fn files_opened(s: &Session) -> Vec<i64> {
    let f = s.get_global_func("rffi.shard.files_opened").unwrap();
    let r = f.call(&[]).unwrap();
    (0..s.num_workers())
        .map(|rank| r.fetch(rank).unwrap().try_as::<i64>().unwrap())
        .collect()
}

#[test]
fn load_params_through_the_communicator_reads_on_worker_0_only() {
    let dir = tmpdir("via-ccl");
    let path = weights(&dir);
    let path = path.to_str().unwrap();
    // Four workers: `w` by rows, `qkv` (2 query and 2 kv heads) replicated.
    let plan4 = r#"{"w": [["rffi.shard.split", [[4, 1, 6], "float32"], 4, 0]]}"#;
    for (n, plan) in [(2, PLAN), (4, plan4)] {
        let info = ShardInfo::parse(plan).unwrap();
        let sessions: Vec<(&str, Session)> = vec![
            ("thread", ThreadSession::new(n).unwrap()),
            (
                "process",
                ProcessSession::with_program(n, &worker_program()).unwrap(),
            ),
        ];
        for (kind, s) in sessions {
            let sum = s.load_module(&plugin()).unwrap();
            let sum = sum.get_function("session_test.sum").unwrap();
            let e = err_of(s.load_params_via(path, &info, false, Via::Ccl));
            assert!(e.message().contains("no communicator"), "{}", e.message());
            let read = s.load_params(path, &info, false).unwrap();
            s.init_ccl("shm", &[]).unwrap();
            // With shared memory `Via::Auto` reads on every worker (the faster path there).
            let before = files_opened(&s);
            s.load_params(path, &info, false).unwrap();
            let after = files_opened(&s);
            assert_eq!(after, before.iter().map(|b| b + 1).collect::<Vec<_>>());
            let before = after;
            let got = s.load_params_via(path, &info, false, Via::Ccl).unwrap();
            let after = files_opened(&s);
            assert_eq!(after[0], before[0] + 1, "{kind} {n}: worker 0 reads");
            assert_eq!(after[1..], before[1..], "{kind} {n}: the others do not");
            assert_eq!(got.keys().collect::<Vec<_>>(), ["b", "qkv", "w"]);
            for (name, p) in &got {
                for rank in 0..n {
                    let total = |d| sum.call(&[Any::from(d)]).unwrap().fetch(rank).unwrap();
                    let (a, b) = (total(p), total(&read[name]));
                    assert_eq!(a.try_as::<f64>().unwrap(), b.try_as::<f64>().unwrap());
                }
            }
            // Worker 0's failure reaches every worker; the communicator stays usable.
            let bad = ShardInfo::parse(r#"{"w": [["no.such", [[2], "float32"]]]}"#).unwrap();
            let e = err_of(s.load_params_via(path, &bad, false, Via::Ccl));
            assert!(
                e.message().contains("parameter `w`, step 0"),
                "{}",
                e.message()
            );
            let again = s.load_params_via(path, &info, false, Via::Read).unwrap();
            assert_eq!(again.len(), 3);
            assert_eq!(files_opened(&s)[1], after[1] + 1, "{kind} {n}: read path");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Writes a safetensors file with the header text `header` (padded) and `data` bytes after it.
fn write_raw_st(path: &Path, header: &str, data: &[u8]) {
    let mut h = header.as_bytes().to_vec();
    while h.len() % 8 != 0 {
        h.push(b' ');
    }
    let mut bytes = (h.len() as u64).to_le_bytes().to_vec();
    bytes.extend(h);
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
}

/// Weight files written by someone else: every malformed header is a ValueError naming the file
/// (and the tensor, where one is at fault), found when the weights are opened.
#[test]
fn malformed_weight_headers_are_errors_naming_the_file() {
    let dir = tmpdir("hostile");
    let p = dir.join("bad.safetensors");
    let cases: &[(&str, usize, &str)] = &[
        // Sizes past the end of the file.
        (r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#, 8, "not a valid safetensors file"),
        // Overlapping ranges.
        (r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#, 12, "not a valid safetensors file"),
        // A shape whose bytes disagree with its range, and a negative dimension.
        (r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#, 8, "not a valid safetensors file"),
        (r#"{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}"#, 8, "not a valid safetensors file"),
        // A dimension past 2^63-1 next to a zero one (no bytes, so the ranges agree).
        (r#"{"a":{"dtype":"F32","shape":[0,18446744073709551615],"data_offsets":[0,0]}}"#, 0,
         "`a`: dimension 18446744073709551615 of shape [0, 18446744073709551615] is larger than 2^63-1"),
        (r#"{"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}"#, 2, "`a`: dtype F8_E4M3 is not supported"),
        ("not json", 0, "not a valid safetensors file"),
    ];
    for (header, n, msg) in cases {
        write_raw_st(&p, header, &vec![0u8; *n]);
        let e = err_of(Weights::open(&p));
        assert_eq!(e.kind(), "ValueError", "{header}: {}", e.message());
        assert!(e.message().starts_with("weights `"), "{}", e.message());
        assert!(e.message().contains("bad.safetensors"), "{}", e.message());
        assert!(e.message().contains(msg), "{header}: {}", e.message());
    }
    // A header length of 2^60 in a short file.
    let mut bytes = (1u64 << 60).to_le_bytes().to_vec();
    bytes.extend(b"{}      ");
    std::fs::write(&p, bytes).unwrap();
    let e = err_of(Weights::open(&p));
    assert!(
        e.message().contains("not a valid safetensors file"),
        "{}",
        e.message()
    );
    std::fs::remove_dir_all(dir).unwrap();
}
