//! The kernels a tuning config key selects (`norm_tile`, `argmax_rows_key8`,
//! `softmax_tileq_G_N`): a config without the key never chooses them, one that sets it does, for
//! exactly the shapes each handles; the built-in sm_90 configs set them for 16-bit types, where
//! the H200 run of 2026-12-05 showed them faster (sm_90.json's comment), and not for float32.
//! No GPU needed.

use super::{norm, reduce, softmax, Tuned};
use crate::source::{dt_of, module_source, Family};
use rffi_core::DataType;
use rffi_kernels::{Op, TuneTable, TuneView};

const SMS: i64 = 132;
/// Shared memory a block may take on an H200 (227 KiB).
const SMEM: i64 = 232448;

/// The built-in `default.json` with `sm_90` given by `arch` (None: the built-in sm_90.json).
fn table(arch: Option<&str>) -> TuneTable {
    let files = vec![
        (
            "default.json".to_owned(),
            include_str!("../../../tune/cuda/default.json").to_owned(),
        ),
        (
            "sm_90.json".to_owned(),
            arch.unwrap_or(include_str!("../../../tune/cuda/sm_90.json"))
                .to_owned(),
        ),
    ];
    TuneTable::from_files(&files, "test".into()).unwrap()
}

fn norm_plan(
    t: &TuneTable,
    rows: i64,
    len: i64,
    itemsize: i64,
    wvec: bool,
) -> (norm::Kind, super::Launch) {
    let vars = [
        ("cols", len),
        ("rows", rows),
        ("itemsize", itemsize),
        ("sms", SMS),
    ];
    let view = TuneView::new(t, Some("sm_90"));
    let tuned = Tuned::select(&view, "norm", &vars).unwrap();
    let c = norm::Class {
        rows,
        len,
        vec: 16 / itemsize,
        aligned_rows: true,
        contiguous: true,
        wvec,
        wcontig: true,
        clusters: true,
        packed: true,
        smem_block: SMEM,
    };
    let (kind, l, _) = norm::plan(Op::LayerNorm, &c, SMS, &tuned);
    (kind, l)
}

#[test]
fn norm_weight_shift_only_where_a_config_sets_it() {
    let builtin = table(None);
    let with = table(Some(
        r#"{ "norm": [ { "threads": 512, "packs": 2, "weight_shift": 1 } ] }"#,
    ));
    // Odd lengths (rows at every alignment phase): bfloat16 4097 = 512 packs after the peel, 2
    // a thread; float32 4097 = 1024 packs, 2 a thread.
    for (itemsize, block) in [(2, 256), (4, 512)] {
        let (kind, l) = norm_plan(&with, 4096, 4097, itemsize, true);
        assert_eq!(
            (kind, l.kernel, l.block),
            (norm::Kind::Packed, "layer_norm_block_shift_2", block)
        );
        // Not in the built-in configs.
        let (_, l) = norm_plan(&builtin, 4096, 4097, itemsize, true);
        assert!(
            l.kernel.starts_with("layer_norm_block_any_"),
            "{}",
            l.kernel
        );
    }
    let view = TuneView::new(&with, Some("sm_90"));
    let tuned = Tuned::select(&view, "norm", &[("cols", 4096), ("itemsize", 2)]).unwrap();
    let class = |aligned_rows, wvec, wcontig| norm::Class {
        rows: 4096,
        len: 4096,
        vec: 8,
        aligned_rows,
        contiguous: true,
        wvec,
        wcontig,
        clusters: true,
        packed: true,
        smem_block: SMEM,
    };
    // x's rows off alignment, or a weight off x's: shifted packs; a strided weight: element
    // by element; aligned rows with weight and bias as packs: the block of packs.
    for (aligned, wvec, wcontig, kernel) in [
        (false, true, true, "layer_norm_block_shift_2"),
        (true, false, true, "layer_norm_block_shift_2"),
        (true, false, false, "layer_norm_block_any_2"),
        (true, true, true, "layer_norm_block_2"),
    ] {
        let (_, l, why) = norm::plan(Op::LayerNorm, &class(aligned, wvec, wcontig), SMS, &tuned);
        assert_eq!(l.kernel, kernel, "{aligned} {wvec} {wcontig}");
        assert_eq!(why.contains("shifted"), kernel.contains("shift"), "{why}");
    }
}

#[test]
fn norm_tile_only_where_a_config_sets_it() {
    // The built-in configs (and any without `tile`): no tiles, 16-bit or float32.
    let without = table(Some(r#"{ "norm": [ { "threads": 512, "packs": 2 } ] }"#));
    let builtin = table(None);
    for len in [1024, 4096, 8192] {
        for (t, itemsize) in [(&without, 2), (&builtin, 2), (&builtin, 4)] {
            let (kind, l) = norm_plan(t, 65536, len, itemsize, true);
            assert_ne!(l.kernel, "layer_norm_tile", "{len} x {itemsize}: {kind:?}");
        }
    }
    let t = table(Some(
        r#"{ "norm": [ { "threads": 512, "packs": 2, "tile": 1 } ] }"#,
    ));
    // bfloat16 rows of 1024 / 4096 / 8192: 128 / 512 / 1024 packs, a warp per 128 packs; a
    // persistent grid of 2 blocks an SM (fewer when there are fewer passes).
    for (len, wr) in [(1024, 1), (4096, 4), (8192, 8)] {
        let (kind, l) = norm_plan(&t, 65536, len, 2, true);
        assert_eq!(kind, norm::Kind::Tile(wr, 0), "{len}");
        assert_eq!(
            (l.kernel, l.block, l.grid.0),
            ("layer_norm_tile", 256, 2 * 132)
        );
    }
    let (_, l) = norm_plan(&t, 24, 8192, 2, true);
    assert_eq!(l.grid.0, 24, "a pass per row of 8 warps");
    let (_, l) = norm_plan(&t, 24, 1024, 2, true);
    assert_eq!(l.grid.0, 3, "8 rows a pass");
    // float32 rows of 4096 (1024 packs) fit; rows of 512 bfloat16 (64 packs) are the shortest.
    assert_eq!(norm_plan(&t, 4096, 4096, 4, true).0, norm::Kind::Tile(8, 0));
    assert_eq!(norm_plan(&t, 4096, 512, 2, true).0, norm::Kind::Tile(1, 0));
    // Not for rows too short or too long, odd lengths, or weight and bias not as packs.
    for (len, itemsize, wvec) in [
        (256, 2, true),
        (16384, 2, true),
        (4097, 2, true),
        (4096, 2, false),
    ] {
        let (kind, l) = norm_plan(&t, 4096, len, itemsize, wvec);
        assert!(
            !matches!(kind, norm::Kind::Tile(..)),
            "{len} {itemsize} {wvec}: {}",
            l.kernel
        );
    }
    // The blocks an SM come from the config.
    let t = table(Some(
        r#"{ "norm": [ { "tile": 1, "tile_blocks_per_sm": 3 } ] }"#,
    ));
    assert_eq!(norm_plan(&t, 65536, 4096, 2, true).1.grid.0, 3 * 132);
}

fn argmax_plan(t: &TuneTable, nout: i64, count: i64, rs: i64, itemsize: i64) -> reduce::Plan {
    rows_plan(t, Op::Argmax, nout, count, rs, itemsize)
}

/// The plan of `op` over `nout` runs of `count` elements (stride `rs`) under the sm_90 layer.
fn rows_plan(t: &TuneTable, op: Op, nout: i64, count: i64, rs: i64, itemsize: i64) -> reduce::Plan {
    let view = TuneView::new(t, Some("sm_90"));
    let vars = [("rows", nout), ("cols", count), ("sms", SMS)];
    let tuned = Tuned::select(&view, "reduce", &vars).unwrap();
    let c = reduce::Class {
        nout,
        count,
        nr: 1,
        rs,
        ks: Some(count * rs),
        col_pack: 1,
        itemsize,
    };
    reduce::plan(op, &c, SMS, &tuned)
}

#[test]
fn argmax_keys_only_where_a_config_sets_them() {
    let without = table(Some(
        r#"{ "reduce": [ { "threads": 512, "group_max": 16384 } ] }"#,
    ));
    assert_eq!(
        argmax_plan(&without, 65536, 4096, 1, 2).main.kernel,
        "argmax_rows_32"
    );
    // The built-in configs (sm_90.json): the running maximum a lane.
    let builtin = table(None);
    assert_eq!(
        argmax_plan(&builtin, 65536, 4096, 1, 2).main.kernel,
        reduce::ARGMAX_RUN
    );
    assert_eq!(
        argmax_plan(&builtin, 65536, 4096, 1, 4).main.kernel,
        "argmax_rows_32"
    );
    let t = table(Some(
        r#"{ "reduce": [ { "threads": 512, "group_max": 16384, "argmax_key": 1 } ] }"#,
    ));
    let p = argmax_plan(&t, 65536, 4096, 1, 2);
    assert_eq!(
        (
            p.main.kernel,
            p.main.grid.0,
            p.main.block,
            p.chunks,
            p.combine
        ),
        (reduce::ARGMAX_KEY, 8192, 256, 1, None)
    );
    // argmax_key 2: the running maximum a lane, on the same rows.
    let run = table(Some(
        r#"{ "reduce": [ { "threads": 512, "group_max": 16384, "argmax_key": 2 } ] }"#,
    ));
    let p = argmax_plan(&run, 65536, 4096, 1, 2);
    assert_eq!(
        (p.main.kernel, p.main.grid.0, p.chunks),
        (reduce::ARGMAX_RUN, 8192, 1)
    );
    assert!(p.why.contains("running maximum"), "{}", p.why);
    for (t, kernel) in [(&t, reduce::ARGMAX_KEY), (&run, reduce::ARGMAX_RUN)] {
        // Rows up to 65536 elements, whatever group_max says: the key holds a 16-bit index.
        assert_eq!(argmax_plan(t, 4096, 65536, 1, 2).main.kernel, kernel);
        // Not for longer rows, float32, strided runs, or too few rows for a warp each on every
        // SM.
        for (nout, count, rs, itemsize) in [
            (4096, 65537, 1, 2),
            (65536, 4096, 1, 4),
            (65536, 4096, 2, 2),
            (8 * SMS - 1, 4096, 1, 2),
        ] {
            let p = argmax_plan(t, nout, count, rs, itemsize);
            assert_ne!(p.main.kernel, kernel, "{nout} x {count} ({rs}, {itemsize})");
        }
    }
    // The kernels are in the argmax module only.
    let dt = dt_of(DataType::bfloat16()).unwrap();
    for k in [reduce::ARGMAX_KEY, reduce::ARGMAX_RUN] {
        let name = format!(" {k}(u64 px, u64 po, u64 pp, RLay L");
        assert!(module_source(&dt, Family::Reduce(4)).contains(&name), "{k}");
    }
    assert!(module_source(&dt, Family::Reduce(4)).contains("#define RED 4"));
}

fn softmax_plan(t: &TuneTable, len: i64, itemsize: i64, quad_aligned: bool) -> softmax::Plan {
    let view = TuneView::new(t, Some("sm_90"));
    let vars = [
        ("cols", len),
        ("rows", 1 << 20),
        ("itemsize", itemsize),
        ("sms", SMS),
    ];
    let tuned = Tuned::select(&view, "softmax", &vars).unwrap();
    let c = softmax::Class {
        rows: 1 << 20,
        len,
        vec: 16 / itemsize,
        aligned_rows: len * itemsize % 16 == 0,
        contiguous: true,
        packed: true,
        quad_aligned,
        smem_block: SMEM,
        clusters: true,
    };
    softmax::plan(&c, SMS, &tuned)
}

#[test]
fn softmax_quad_tiles_only_where_a_config_sets_them() {
    let without = table(Some(
        r#"{ "softmax": [ { "tile_bytes": 16384, "tile_max": 128 } ] }"#,
    ));
    assert_eq!(
        softmax_plan(&without, 100, 2, true).main.kernel,
        "softmax_tileh_16_8"
    );
    let builtin = table(None);
    assert_eq!(
        softmax_plan(&builtin, 100, 2, true).main.kernel,
        "softmax_tileq_8_4"
    );
    assert_eq!(
        softmax_plan(&builtin, 100, 4, true).main.kernel,
        "softmax_tileh_16_8"
    );
    let quads = |elems: i64| {
        table(Some(&format!(
            r#"{{ "softmax": [ {{ "tile_bytes": 16384, "tile_max": 1024, "tile_quads": 1, "tile_quad_elems": {elems} }} ] }}"#
        )))
    };
    // bfloat16 rows of 100 = 25 quads: 8 elements a lane is 16 lanes of 2 quads (8 rows a
    // round of 128 threads, 80 rows a tile); 16 elements 8 lanes of 4; 32, 4 lanes of 8 (rounds
    // of 32 rows: 64 would leave more than 1/16 of the 81 rows' tile unused, so 81).
    for (elems, kernel, per) in [
        (8, "softmax_tileq_16_2", 80),
        (16, "softmax_tileq_8_4", 80),
        (32, "softmax_tileq_4_8", 81),
    ] {
        let p = softmax_plan(&quads(elems), 100, 2, true);
        assert_eq!(
            (p.main.kernel, p.main.block, p.tile_rows, p.kind),
            (kernel, 128, per, softmax::Kind::Tile),
            "{elems}"
        );
        assert!(p.why.contains("quads of 4 elements a lane"), "{}", p.why);
    }
    let t = quads(8);
    // Rows of 4 (one quad: a lane, 2 quads' registers), 1024 (256 quads: a warp of 8), float32.
    assert_eq!(
        softmax_plan(&t, 4, 2, true).main.kernel,
        "softmax_tileq_1_2"
    );
    assert_eq!(
        softmax_plan(&t, 1024, 2, true).main.kernel,
        "softmax_tileq_32_8"
    );
    assert_eq!(
        softmax_plan(&t, 100, 4, true).main.kernel,
        "softmax_tileq_16_2"
    );
    // Not for rows of a length not a multiple of 4, pointers off a quad boundary, float64, or
    // longer rows: the scalar tiles or the other variants.
    for (len, itemsize, aligned) in [
        (102, 2, true),
        (100, 2, false),
        (100, 8, true),
        (1028, 2, true),
    ] {
        let k = softmax_plan(&t, len, itemsize, aligned).main.kernel;
        assert!(
            !k.starts_with("softmax_tileq"),
            "{len} {itemsize} {aligned}: {k}"
        );
    }
}

#[test]
fn norm_clusters_only_where_a_config_sets_them() {
    let builtin = table(None);
    let with = table(Some(
        r#"{ "norm": [ { "threads": 512, "packs": 2, "cluster": 1 } ] }"#,
    ));
    // (rows, len, itemsize) -> kernel and block with the key: the fewest blocks of at most 512
    // threads of 4 packs (bfloat16 65536: 8192 packs, 4 x 512; float32 65536: 16384 packs,
    // 8 x 512; bfloat16 32768 2 x 512; 24576: 2 x 384), a block's grid per row times CN.
    // The built-in configs: float32 rows over a cluster, except rows of 65536 on, pipelined
    // (sm_90.json: bfloat16 rows of 32768 were slower over a cluster).
    let cases = [
        (
            4096,
            65536,
            2,
            "layer_norm_cluster_4",
            512,
            "layer_norm_pipe_1",
        ),
        (
            4096,
            32768,
            2,
            "layer_norm_cluster_2",
            512,
            "layer_norm_block_4",
        ),
        (
            4096,
            24576,
            2,
            "layer_norm_cluster_2",
            384,
            "layer_norm_block_4",
        ),
        (
            4096,
            65536,
            4,
            "layer_norm_cluster_8",
            512,
            "layer_norm_pipe_2",
        ),
        (
            4096,
            49152,
            4,
            "layer_norm_cluster_8",
            384,
            "layer_norm_cluster_8",
        ),
        (
            64,
            131072,
            2,
            "layer_norm_cluster_8",
            512,
            "layer_norm_rows",
        ),
    ];
    for (rows, len, itemsize, kernel, block, builtin_kernel) in cases {
        let (kind, l) = norm_plan(&with, rows, len, itemsize, true);
        let cn: u32 = kernel.rsplit('_').next().unwrap().parse().unwrap();
        assert_eq!(
            (kind, l.kernel, l.block, l.grid.0),
            (norm::Kind::Packed, kernel, block, rows as u32 * cn),
            "{len} x {itemsize}"
        );
        let (_, l) = norm_plan(&builtin, rows, len, itemsize, true);
        assert_eq!(l.kernel, builtin_kernel, "{len} x {itemsize}, built-in");
    }
    // Rows a block of at most 512 threads holds, weight or bias not packs, and rows too long
    // for 8 blocks keep the other variants.
    for (len, itemsize, wvec) in [(16384, 2, true), (65536, 2, false), (262144, 2, true)] {
        let (_, l) = norm_plan(&with, 64, len, itemsize, wvec);
        assert!(!l.kernel.contains("cluster"), "{len}: {}", l.kernel);
    }
}

#[test]
fn softmax_lane_grids_capped_only_where_a_config_sets_it() {
    // float32 rows of 32 (lanes of 2 packs in sm_90.json) and of 256 (a warp a row): a block
    // per 64 rows (4 lanes a row) without a cap.
    let builtin = table(None);
    let p = softmax_plan(&builtin, 32, 4, true);
    assert_eq!(
        (p.main.kernel, p.main.grid.0),
        ("softmax_lanes_4_2", 1 << 14)
    );
    let capped = table(Some(
        r#"{ "softmax": [ { "tile_max": 0, "group_blocks_per_sm": 8 } ] }"#,
    ));
    for (len, kernel) in [(32, "softmax_group_8_4"), (256, "softmax_warp_2")] {
        let p = softmax_plan(&capped, len, 4, true);
        assert_eq!(
            (p.main.kernel, p.main.grid.0, p.main.block),
            (kernel, 8 * SMS as u32, 256),
            "{len}"
        );
        assert!(p.why.contains("grid at most 1056 blocks"), "{}", p.why);
    }
}

#[test]
fn softmax_rows_a_warp_only_where_a_config_sets_lane_packs() {
    // Without the key: bfloat16 rows of 256 a warp a row (one pack a lane), float32 rows of 32
    // in lane groups of elements; sm_90.json sets 2.
    let without = table(Some(r#"{ "softmax": [ { "tile_max": 0, "packs": 8 } ] }"#));
    assert_eq!(
        softmax_plan(&without, 256, 2, true).main.kernel,
        "softmax_warp_1"
    );
    assert_eq!(
        softmax_plan(&without, 32, 4, true).main.kernel,
        "softmax_group_8_4"
    );
    let builtin = table(None);
    assert_eq!(
        softmax_plan(&builtin, 256, 2, true).main.kernel,
        "softmax_lanes_16_2"
    );
    // (len, itemsize, lane_packs) -> kernel, grid for 2^20 rows of 256 threads / G rows a block.
    let cases = [
        (256, 2, 2, "softmax_lanes_16_2", 16),
        (256, 2, 4, "softmax_lanes_8_4", 8),
        (32, 4, 2, "softmax_lanes_4_2", 4),
        (32, 4, 4, "softmax_lanes_4_2", 4),
        (256, 4, 4, "softmax_lanes_16_4", 16),
        (64, 2, 2, "softmax_lanes_4_2", 4),
        (128, 4, 2, "softmax_lanes_16_2", 16),
    ];
    for (len, itemsize, packs, kernel, lanes) in cases {
        let t = table(Some(&format!(
            r#"{{ "softmax": [ {{ "tile_max": 0, "lane_packs": {packs} }} ] }}"#
        )));
        let p = softmax_plan(&t, len, itemsize, true);
        assert_eq!(
            (p.main.kernel, p.main.grid.0, p.main.block),
            (kernel, (1u32 << 20) / (256 / lanes), 256),
            "{len} x {itemsize} bytes, lane_packs {packs}"
        );
        assert!(
            p.why.contains(&format!("{} rows a warp", 32 / lanes)),
            "{}",
            p.why
        );
    }
    // Rows a warp already gives `lane_packs` packs a lane (float32 rows of 256, 2 packs), rows
    // not of whole aligned packs and rows too long for the table keep their variants.
    let t = table(Some(
        r#"{ "softmax": [ { "tile_max": 0, "lane_packs": 2 } ] }"#,
    ));
    assert_eq!(softmax_plan(&t, 256, 4, true).main.kernel, "softmax_warp_2");
    assert_eq!(
        softmax_plan(&t, 250, 2, true).main.kernel,
        "softmax_group_32_8"
    );
    assert_eq!(softmax_plan(&t, 800, 2, true).main.kernel, "softmax_warp_4");
}

#[test]
fn norm_tile_stages_where_a_config_sets_them() {
    let three = table(Some(
        r#"{ "norm": [ { "threads": 512, "packs": 2, "tile": 1, "tile_stages": 3 } ] }"#,
    ));
    // Three stages of 16 KiB in dynamic shared memory (more than the 48 KiB a launch gets
    // without asking, with the static sums).
    for (len, wr) in [(1024, 1), (4096, 4), (8192, 8)] {
        let (kind, l) = norm_plan(&three, 65536, len, 2, true);
        assert_eq!(kind, norm::Kind::Tile(wr, 3 * 16384), "{len}");
        assert_eq!((l.kernel, l.block), ("layer_norm_tile3", 256));
    }
    let two = table(Some(
        r#"{ "norm": [ { "threads": 512, "packs": 2, "tile": 1 } ] }"#,
    ));
    let (kind, l) = norm_plan(&two, 65536, 4096, 2, true);
    assert_eq!(
        (kind, l.kernel),
        (norm::Kind::Tile(4, 0), "layer_norm_tile")
    );
}

#[test]
fn norm_tile_weights_from_l1_where_a_config_sets_them() {
    // The tiles hold weight and bias in registers, two blocks an SM.
    let tiles = table(Some(
        r#"{ "norm": [ { "threads": 512, "packs": 2, "tile": 1 } ] }"#,
    ));
    let (kind, l) = norm_plan(&tiles, 65536, 4096, 2, true);
    assert_eq!(
        (kind, l.kernel, l.grid.0),
        (norm::Kind::Tile(4, 0), "layer_norm_tile", 2 * SMS as u32)
    );
    // `tile_l1` B: the L1 kernel of B blocks an SM (1 or 2 ask for 3), grid B an SM; two static
    // stages; few rows still one block a pass.
    for (b, want) in [(3, 3), (4, 4), (1, 3)] {
        let t = table(Some(&format!(
            r#"{{ "norm": [ {{ "threads": 512, "packs": 2, "tile": 1, "tile_l1": {b} }} ] }}"#
        )));
        for (len, wr) in [(1024, 1), (8192, 8)] {
            let (kind, l) = norm_plan(&t, 65536, len, 2, true);
            assert_eq!(kind, norm::Kind::Tile(wr, 0), "{len}");
            assert_eq!(
                (l.kernel, l.grid.0, l.block),
                (
                    format!("layer_norm_tile_l1_{want}").as_str(),
                    want * SMS as u32,
                    256
                ),
                "tile_l1 {b}, {len}"
            );
        }
        let (_, l) = norm_plan(&t, 40, 8192, 2, true);
        assert_eq!(l.grid.0, 40);
    }
}

#[test]
fn single_pass_reductions_where_a_config_sets_it() {
    let plan = |t: &TuneTable, op: Op, nout: i64, count: i64| rows_plan(t, op, nout, count, 1, 4);
    let without = table(Some(
        r#"{ "reduce": [ { "threads": 512, "group_max": 16384, "split_min": 16384, "blocks_per_sm": 4 } ] }"#,
    ));
    let single = table(Some(
        r#"{ "reduce": [ { "threads": 512, "group_max": 16384, "split_min": 16384, "blocks_per_sm": 4, "single_pass": 1 } ] }"#,
    ));
    // A full sum of 64M elements and 8 rows of 16M: chunked either way; one launch with the key
    // (as in sm_90.json).
    for (op, nout, count) in [(Op::Sum, 1, 1 << 26), (Op::Argmax, 8, 1 << 24)] {
        assert!(plan(&table(None), op, nout, count).single_pass);
        let two = plan(&without, op, nout, count);
        assert!(
            two.chunks > 1 && two.combine.is_some() && !two.single_pass,
            "{two:?}"
        );
        let one = plan(&single, op, nout, count);
        assert_eq!(
            (one.main.kernel, one.chunks, one.combine, one.single_pass),
            (two.main.kernel, two.chunks, None, true)
        );
        assert!(one.why.contains("by the last block"), "{}", one.why);
    }
    // Unchunked reductions are one launch already.
    let p = plan(&single, Op::Sum, 65536, 4096);
    assert_eq!((p.chunks, p.single_pass), (1, false));
    // Memory kept for the stream only for a single pass, and only where a config asks.
    assert!(!plan(&single, Op::Sum, 1, 1 << 26).kept_scratch);
    let kept = table(Some(
        r#"{ "reduce": [ { "threads": 512, "group_max": 16384, "split_min": 16384, "blocks_per_sm": 4, "single_pass": 1, "kept_scratch": 1 } ] }"#,
    ));
    assert!(plan(&kept, Op::Sum, 1, 1 << 26).kept_scratch);
    assert!(!plan(&kept, Op::Sum, 65536, 4096).kept_scratch);
    let two = table(Some(
        r#"{ "reduce": [ { "threads": 512, "group_max": 16384, "split_min": 16384, "blocks_per_sm": 4, "kept_scratch": 1 } ] }"#,
    ));
    assert!(!plan(&two, Op::Sum, 1, 1 << 26).kept_scratch);
}

#[test]
fn reduction_rows_eight_packs_where_a_config_sets_it() {
    let plan = |t: &TuneTable, op: Op, nout: i64, count: i64| rows_plan(t, op, nout, count, 1, 4);
    let eight = table(Some(
        r#"{ "reduce": [ { "threads": 512, "group_max": 16384, "split_min": 16384, "blocks_per_sm": 4, "single_pass": 1, "rows_packs": 8 } ] }"#,
    ));
    // The block-per-output walk (the full sum, rows longer than group_max) only; the built-in
    // configs keep 4 packs.
    for (op, nout, count, kernel) in [
        (Op::Sum, 1, 1 << 26, "sum_rows_block8"),
        (Op::Argmax, 8, 1 << 24, "argmax_rows_block8"),
        (Op::Max, 4096, 65536, "max_rows_block8"),
    ] {
        let p = plan(&eight, op, nout, count);
        let four = plan(&table(None), op, nout, count);
        assert_eq!(
            (p.main.kernel, p.chunks, p.single_pass),
            (kernel, four.chunks, four.single_pass)
        );
        assert_eq!(four.main.kernel, kernel.trim_end_matches('8'));
    }
    assert_eq!(plan(&eight, Op::Sum, 4096, 4096).main.kernel, "sum_rows_32");
    // Its registers allow blocks of at most 512 threads.
    let wide = table(Some(
        r#"{ "reduce": [ { "threads": 1024, "group_max": 16384, "rows_packs": 8 } ] }"#,
    ));
    let p = plan(&wide, Op::Sum, 1, 1 << 26);
    assert_eq!((p.main.kernel, p.main.block), ("sum_rows_block8", 512));
}
