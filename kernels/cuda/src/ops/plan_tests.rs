//! The variant each shape class gets on an H200 (132 SMs, sm_90) with the built-in tuning
//! files, and that every kernel a plan can name exists in the CUDA source. No GPU needed.

use super::{elementwise, norm, reduce, softmax, Tuned};
use crate::source::{dt_of, module_source, Family};
use rffi_core::DataType;
use rffi_kernels::{Op, TuneTable, TuneView};

pub(super) const SMS: i64 = 132;
/// Shared memory a block may take on an H200 (227 KiB).
pub(super) const SMEM: i64 = 232448;

pub(super) fn table() -> TuneTable {
    let files = vec![
        (
            "default.json".to_owned(),
            include_str!("../../../tune/cuda/default.json").to_owned(),
        ),
        (
            "sm_90.json".to_owned(),
            include_str!("../../../tune/cuda/sm_90.json").to_owned(),
        ),
    ];
    TuneTable::from_files(&files, "built-in".into()).unwrap()
}

/// A table of one `default.json` (no arch layer).
pub(super) fn config_table(json: &str) -> TuneTable {
    let files = [("default.json".to_owned(), json.to_owned())];
    TuneTable::from_files(&files, "test".into()).unwrap()
}

/// Softmax rows back to back and contiguous on an sm_90 with clusters, `aligned` whole 16-byte
/// packs or not.
fn softmax_rows(rows: i64, len: i64, vec: i64, aligned: bool) -> softmax::Class {
    softmax::Class {
        rows,
        len,
        vec,
        aligned_rows: aligned,
        contiguous: true,
        packed: true,
        quad_aligned: true,
        smem_block: SMEM,
        clusters: true,
    }
}

fn softmax_kernel(t: &TuneTable, rows: i64, len: i64, itemsize: i64, aligned: bool) -> String {
    softmax_kernel_of(t, rows, len, itemsize, aligned, false)
}

fn softmax_kernel_of(
    t: &TuneTable,
    rows: i64,
    len: i64,
    itemsize: i64,
    aligned: bool,
    packed: bool,
) -> String {
    let view = TuneView::new(t, Some("sm_90"));
    let vars = [
        ("cols", len),
        ("rows", rows),
        ("itemsize", itemsize),
        ("sms", SMS),
    ];
    let tuned = Tuned::select(&view, "softmax", &vars).unwrap();
    let c = softmax::Class {
        rows,
        len,
        vec: 16 / itemsize,
        aligned_rows: aligned,
        contiguous: true,
        packed,
        quad_aligned: false,
        smem_block: SMEM,
        clusters: true,
    };
    let p = softmax::plan(&c, SMS, &tuned);
    match &p.write {
        Some(w) => format!("{} + {} x{}", p.main.kernel, w.kernel, p.chunks),
        None => format!("{} {}", p.main.kernel, p.main.block),
    }
}

#[test]
fn softmax_rows_back_to_back_use_tiles() {
    let t = table();
    // (rows, len, itemsize) -> kernel and block size: 16 KiB of whole rows a tile, for rows up
    // to 128 elements (float32 rows of 16 to 64: lane groups, measured faster) and float32 rows
    // of 257 to 1024 (16-bit ones: a warp per row or lane groups).
    let cases: &[(i64, i64, i64, &str)] = &[
        (1 << 20, 2, 4, "softmax_tileh_1_2 128"),
        (1 << 20, 7, 2, "softmax_tileh_1_8 128"),
        (1 << 20, 7, 4, "softmax_tileh_1_8 128"),
        (1 << 20, 32, 2, "softmax_tileh_4_8 128"),
        (1 << 20, 32, 4, "softmax_group_8_4 256"),
        (1 << 20, 100, 2, "softmax_tileh_16_8 128"),
        (1 << 20, 100, 4, "softmax_tileh_16_8 128"),
        (1 << 20, 257, 4, "softmax_tileh_32_16 128"),
        (1 << 16, 1000, 4, "softmax_tileh_32_32 128"),
        (1 << 16, 1024, 4, "softmax_tileh_32_32 128"),
        (1 << 20, 256, 4, "softmax_group_32_8 256"),
        (1 << 16, 1024, 2, "softmax_group_32_32 256"),
        (1 << 20, 257, 2, "softmax_group_32_16 256"),
    ];
    for &(rows, len, size, want) in cases {
        let got = softmax_kernel_of(&t, rows, len, size, false, true);
        assert_eq!(got, want, "{rows} x {len}, itemsize {size}");
    }
    // With tiles up to 1024 elements: the lanes a row and elements a lane of longer rows.
    let wide = TuneTable::from_files(
        &[(
            "default.json".to_owned(),
            r#"{"softmax": [{"tile_max": 1024}]}"#.to_owned(),
        )],
        "test".into(),
    )
    .unwrap();
    let cases: &[(i64, i64, i64, &str)] = &[
        (1 << 20, 257, 4, "softmax_tile_32_16 256"),
        (1 << 16, 1000, 4, "softmax_tile_32_32 256"),
        (1 << 16, 1024, 2, "softmax_tile_32_32 256"),
        (1 << 16, 1025, 4, "softmax_online 512"),
    ];
    for &(rows, len, size, want) in cases {
        let got = softmax_kernel_of(&wide, rows, len, size, false, true);
        assert_eq!(got, want, "{rows} x {len}, itemsize {size}");
    }
    // 32 KiB tiles (the built-in default without `sm_90.json`) of rows of 100 in float32.
    let view = TuneView::new(&t, None);
    let tuned = Tuned::select(&view, "softmax", &[("cols", 100), ("itemsize", 4)]).unwrap();
    let c = softmax::Class {
        rows: 1000,
        len: 100,
        vec: 4,
        aligned_rows: true,
        contiguous: true,
        packed: true,
        // The quad tiles could take these rows; no built-in config chooses them.
        quad_aligned: true,
        smem_block: SMEM,
        clusters: true,
    };
    let p = softmax::plan(&c, SMS, &tuned);
    // 81 rows fit; 80 are five whole rounds of 16 rows (16 lanes a row, 256 threads).
    assert_eq!((p.tile_rows, p.main.grid.0), (80, 13));
    // Rows of 7: 1170 fit, 1024 (four rounds of 256) would leave 1/8 unused: kept.
    let c7 = softmax::Class { len: 7, ..c };
    assert_eq!(softmax::plan(&c7, SMS, &tuned).tile_rows, 1170);
    // Half-size tiles (`sm_90.json`): 128 threads, 16 KiB; rows of 1000 in float32: 4 a tile.
    let view = TuneView::new(&t, Some("sm_90"));
    let tuned = Tuned::select(&view, "softmax", &[("cols", 1000), ("itemsize", 4)]).unwrap();
    let c = softmax::Class { len: 1000, ..c };
    let p = softmax::plan(&c, SMS, &tuned);
    assert_eq!(
        (p.main.kernel, p.main.block, p.tile_rows, p.main.grid.0),
        ("softmax_tileh_32_32", 128, 4, 250)
    );
    assert!(p.why.contains("(16 KiB)"), "{}", p.why);
    // Rows of 100 in bfloat16: quads of 4 elements, 16 elements a lane (sm_90.json): 8 lanes
    // of 4 quads; 81 rows fit, 80 are ten whole rounds of 8 rows (128 threads).
    let tuned = Tuned::select(&view, "softmax", &[("cols", 100), ("itemsize", 2)]).unwrap();
    let c = softmax::Class {
        len: 100,
        vec: 8,
        quad_aligned: true,
        ..c
    };
    let p = softmax::plan(&c, SMS, &tuned);
    assert_eq!((p.main.kernel, p.tile_rows), ("softmax_tileq_8_4", 80));
    let c = softmax::Class {
        quad_aligned: false,
        ..c
    };
    let p = softmax::plan(&c, SMS, &tuned);
    assert_eq!((p.main.kernel, p.tile_rows), ("softmax_tileh_16_8", 80));
}

#[test]
fn softmax_variant_per_row_length() {
    let t = table();
    // (rows, len, itemsize, every row aligned) -> kernel and block size.
    let cases: &[(i64, i64, i64, bool, &str)] = &[
        (262144, 1, 4, true, "softmax_group_1_1 256"),
        (262144, 7, 2, false, "softmax_group_2_4 256"),
        // Aligned rows that give a lane fewer than 2 packs in a warp: G lanes of 2 packs a row.
        (262144, 32, 4, true, "softmax_lanes_4_2 256"),
        (262144, 100, 4, true, "softmax_lanes_16_2 256"),
        (262144, 256, 2, true, "softmax_lanes_16_2 256"),
        (262144, 256, 4, true, "softmax_warp_2 256"),
        (65536, 1000, 4, true, "softmax_warp_8 256"),
        (65536, 1000, 2, true, "softmax_warp_4 256"),
        (65536, 1000, 2, false, "softmax_group_32_32 256"),
        (65536, 1024, 2, true, "softmax_warp_4 256"),
        (65536, 4096, 4, true, "softmax_block_8 128"),
        (65536, 4096, 2, true, "softmax_block_4 128"),
        (4096, 16376, 2, true, "softmax_block_4 512"),
        (4096, 32000, 2, true, "softmax_smem 512"),
        // float32 rows of 32000 take an SM's shared memory alone: registers first.
        (2097, 32000, 4, true, "softmax_block_8 1024"),
        (2097, 32000, 4, false, "softmax_smem 512"),
        (8192, 50257, 2, false, "softmax_smem 512"),
        (8192, 50257, 4, false, "softmax_smem 512"),
        (64, 50257, 2, false, "softmax_smem 512"),
        // Rows longer than a block's shared memory: over a cluster where two blocks of it fit
        // an SM, else read twice.
        (1024, 128256, 2, true, "softmax_cluster_4 512"),
        (523, 128256, 4, true, "softmax_cluster_8 512"),
        (256, 262144, 4, true, "softmax_cluster_part_8 512"),
        (256, 1 << 20, 4, true, "softmax_online 1024"),
        (
            4,
            262144,
            4,
            true,
            "softmax_split_stats + softmax_split_write x64",
        ),
        (
            8,
            128256,
            2,
            false,
            "softmax_split_stats + softmax_split_write x32",
        ),
    ];
    for &(rows, len, size, aligned, want) in cases {
        assert_eq!(
            softmax_kernel(&t, rows, len, size, aligned),
            want,
            "{rows} x {len}, itemsize {size}"
        );
    }
    // Rows back to back: float32 rows of 16385 to 32768 and of more than 100000 pipelined
    // through registers; 16-bit rows and float32 rows of 50257 (a cluster of 2 was slower)
    // as above; too few rows to give every SM a block: split.
    let packed = [
        (2097, 32000, 4, true, "softmax_pipe_1 1024"),
        (523, 128256, 4, true, "softmax_pipe_4 1024"),
        (256, 262144, 4, true, "softmax_pipe_8 1024"),
        (1335, 50257, 4, false, "softmax_smem 512"),
        (4194, 32000, 2, true, "softmax_smem 512"),
        (1046, 128256, 2, true, "softmax_cluster_4 512"),
        (
            8,
            262144,
            4,
            true,
            "softmax_split_stats + softmax_split_write x33",
        ),
    ];
    for (rows, len, size, aligned, want) in packed {
        assert_eq!(
            softmax_kernel_of(&t, rows, len, size, aligned, true),
            want,
            "{rows} x {len}, itemsize {size}, back to back"
        );
    }
}

#[test]
fn softmax_rows_staged_in_shared_memory_fit_the_device() {
    let t = table();
    let view = TuneView::new(&t, Some("sm_90"));
    let tuned = Tuned::select(&view, "softmax", &[("cols", 50257), ("itemsize", 2)]).unwrap();
    // bfloat16 rows of 50257 (odd: rows at every alignment) take the row and a pack.
    let c = softmax::Class {
        rows: 8192,
        len: 50257,
        vec: 8,
        aligned_rows: false,
        contiguous: true,
        packed: true,
        quad_aligned: false,
        smem_block: SMEM,
        clusters: true,
    };
    let p = softmax::plan(&c, SMS, &tuned);
    assert_eq!(
        (p.main.kernel, p.shared, p.main.grid.0),
        ("softmax_smem", (50257 + 8) * 2, 8192)
    );
    assert!(p.why.contains("99 KiB of 227, two an SM"), "{}", p.why);
    // A device with 96 KiB a block and no clusters, or rows that are not contiguous: read
    // twice.
    for c in [
        softmax::Class {
            smem_block: 96 * 1024,
            clusters: false,
            ..c
        },
        softmax::Class {
            contiguous: false,
            ..c
        },
    ] {
        let p = softmax::plan(&c, SMS, &tuned);
        assert_eq!((p.main.kernel, p.shared), ("softmax_online", 0));
    }
}

#[test]
fn softmax_rows_pipelined_where_a_config_asks() {
    let t = config_table(r#"{"softmax": [{"pipe": 1, "cluster": 1}]}"#);
    let view = TuneView::new(&t, None);
    let tuned = Tuned::select(&view, "softmax", &[]).unwrap();
    let class = |rows, len, vec| softmax_rows(rows, len, vec, len % vec == 0);
    // (rows, len, elements a pack) -> kernel, threads, shared bytes a block: the fewest blocks
    // a row of which each holds its chunk at 32 values a thread (float32 8 packs, 16-bit 4),
    // at most 1024 threads; the plan's grid is every row's blocks (the launch caps it at what
    // the device holds at once).
    let cases = [
        (2097, 32000, 4, "softmax_pipe_1", 1024, 8000 * 16),
        (1335, 50257, 4, "softmax_pipe_2", 800, 6282 * 16),
        (523, 128256, 4, "softmax_pipe_4", 1024, 8016 * 16),
        (256, 262144, 4, "softmax_pipe_8", 1024, 8192 * 16),
        (4194, 32000, 8, "softmax_pipe_1", 1024, 4000 * 16),
        (1046, 128256, 8, "softmax_pipe_4", 1024, 4008 * 16),
        (512, 262144, 8, "softmax_pipe_8", 1024, 4096 * 16),
    ];
    for (rows, len, vec, kernel, threads, shared) in cases {
        let p = softmax::plan(&class(rows, len, vec), SMS, &tuned);
        assert_eq!(
            (
                p.main.kernel,
                p.main.block,
                p.shared as i64,
                p.main.grid.0 as i64
            ),
            (kernel, threads, shared, rows * p.chunks),
            "{rows} x {len}"
        );
        assert_eq!(p.kind, softmax::Kind::Pipe(p.chunks as u32));
        assert!(p.why.contains("persistent grid"), "{}", p.why);
    }
    // Rows that would not give every SM a block (split), that are not back to back, float64, a
    // device without clusters for rows longer than one block holds, and rows shorter than
    // `pipe_cols` (16384): not pipelined.
    let other = |c: softmax::Class| softmax::plan(&c, SMS, &tuned).main.kernel;
    assert_eq!(other(class(16, 128256, 4)), "softmax_split_stats");
    let strided = softmax::Class {
        packed: false,
        ..class(1024, 128256, 4)
    };
    assert_eq!(other(strided), "softmax_cluster_8");
    assert_eq!(other(class(1024, 65536, 2)), "softmax_cluster_8");
    let alone = softmax::Class {
        clusters: false,
        ..class(1024, 65536, 4)
    };
    assert_eq!(other(alone), "softmax_online");
    assert_eq!(
        other(softmax::Class {
            clusters: false,
            ..class(1024, 32768, 4)
        }),
        "softmax_pipe_1"
    );
    assert_eq!(other(class(1024, 8192, 4)), "softmax_block_4");
}

#[test]
fn softmax_rows_over_a_cluster_where_a_config_asks() {
    let t = config_table(r#"{"softmax": [{"cluster": 1}]}"#);
    let view = TuneView::new(&t, None);
    let tuned = Tuned::select(&view, "softmax", &[]).unwrap();
    let class = |rows, len, vec| softmax_rows(rows, len, vec, true);
    // (rows, len, elements a pack) -> kernel, shared bytes a block, grid: rows too long for a
    // block's shared memory over the fewest blocks of which two fit an SM (bfloat16 rows of
    // 128256: 4 of 32 KiB + 2 packs).
    let cases = [
        (1024, 128256, 8, "softmax_cluster_4", (32064 + 16) * 2, 4096),
        (512, 262144, 8, "softmax_cluster_8", (32768 + 16) * 2, 4096),
        (523, 128256, 4, "softmax_cluster_8", (16032 + 8) * 4, 4184),
    ];
    for (rows, len, vec, kernel, shared, grid) in cases {
        let p = softmax::plan(&class(rows, len, vec), SMS, &tuned);
        assert_eq!(
            (p.main.kernel, p.shared as i64, p.main.grid.0 as i64),
            (kernel, shared, grid),
            "{rows} x {len}"
        );
    }
    // No clusters on the device; rows of which 8 blocks fit only one an SM (float32 rows of
    // 262144: 8 of 128 KiB); rows longer still: read twice.
    let p = softmax::plan(
        &softmax::Class {
            clusters: false,
            ..class(1024, 128256, 8)
        },
        SMS,
        &tuned,
    );
    assert_eq!(p.main.kernel, "softmax_online");
    for (len, vec) in [(262144, 4), (1 << 22, 8)] {
        let p = softmax::plan(&class(256, len, vec), SMS, &tuned);
        assert_eq!(p.main.kernel, "softmax_online", "{len}");
    }
    // `cluster_part`: those chunks of 8 blocks staged in part, as much as two blocks an SM
    // hold (float32 and bfloat16 rows of 1 MiB: 128 KiB chunks, 111.5 KiB staged); rows whose
    // chunks are more than twice that are still read twice.
    let t = config_table(r#"{"softmax": [{"cluster": 1, "cluster_part": 1}]}"#);
    let view = TuneView::new(&t, None);
    let part = Tuned::select(&view, "softmax", &[]).unwrap();
    let half = (SMEM / 2 - 2048) / 16 * 16;
    for (len, vec) in [(262144, 4), (262147, 4), (524288, 8)] {
        let p = softmax::plan(&class(256, len, vec), SMS, &part);
        assert_eq!(
            (p.main.kernel, p.shared as i64, p.main.grid.0),
            ("softmax_cluster_part_8", half, 2048),
            "{len}"
        );
        assert!(p.why.contains("reads the rest"), "{}", p.why);
    }
    for (len, vec) in [(600000, 4), (1 << 22, 8)] {
        let p = softmax::plan(&class(256, len, vec), SMS, &part);
        assert_eq!(p.main.kernel, "softmax_online", "{len}");
    }
    // Chunks that fit whole are planned as without the key.
    let p = softmax::plan(&class(512, 262144, 8), SMS, &part);
    assert_eq!(
        (p.main.kernel, p.shared as i64),
        ("softmax_cluster_8", (32768 + 16) * 2)
    );
    // Rows a block stages or holds stay there: two an SM (bfloat16 rows of 32000, float32
    // rows of 16384), or alone (float32 rows of 32000 in registers, 50257 staged).
    for (len, vec, kernel) in [
        (32000, 8, "softmax_smem"),
        (16384, 4, "softmax_smem"),
        (32000, 4, "softmax_block_8"),
        (50257, 4, "softmax_smem"),
    ] {
        let p = softmax::plan(&class(4096, len, vec), SMS, &tuned);
        assert_eq!(p.main.kernel, kernel, "{len}");
    }
}

fn reduce_plan(t: &TuneTable, op: Op, c: reduce::Class) -> reduce::Plan {
    let view = TuneView::new(t, Some("sm_90"));
    let vars = [("rows", c.nout), ("cols", c.count), ("sms", SMS)];
    let tuned = Tuned::select(&view, "reduce", &vars).unwrap();
    reduce::plan(op, &c, SMS, &tuned)
}

#[test]
fn reduction_walk_per_shape_class() {
    let t = table();
    let class = |nout, count, rs, ks| reduce::Class {
        nout,
        count,
        nr: 1,
        rs,
        ks,
        col_pack: 1,
        itemsize: 4,
    };
    // A full reduction of 256M elements: one output split over the SMs, the chunks combined by
    // the last block to finish one (sm_90.json: `single_pass`).
    let p = reduce_plan(&t, Op::Sum, class(1, 1 << 28, 1, None));
    assert_eq!(p.main.kernel, "sum_rows_block");
    assert_eq!(p.chunks, 4 * SMS);
    assert!(p.single_pass && p.combine.is_none(), "{p:?}");
    // Last-axis reductions by length.
    assert_eq!(
        reduce_plan(&t, Op::Max, class(1 << 20, 3, 1, Some(3)))
            .main
            .kernel,
        "max_rows_1"
    );
    assert_eq!(
        reduce_plan(&t, Op::Mean, class(1 << 16, 50, 1, Some(50)))
            .main
            .kernel,
        "mean_rows_4"
    );
    let p = reduce_plan(&t, Op::Argmax, class(4096, 1000, 1, Some(1000)));
    assert_eq!((p.main.kernel, p.chunks), ("argmax_rows_32", 1));
    let p = reduce_plan(&t, Op::Sum, class(4096, 4096, 1, Some(4096)));
    assert_eq!((p.main.kernel, p.chunks), ("sum_rows_32", 1));
    let p = reduce_plan(&t, Op::Sum, class(4096, 65536, 1, Some(65536)));
    assert_eq!((p.main.kernel, p.chunks), ("sum_rows_block", 1));
    // Few long rows are split.
    let p = reduce_plan(&t, Op::Sum, class(8, 1 << 20, 1, Some(1 << 20)));
    assert!(p.chunks > 1 && p.chunk % 64 == 0, "{p:?}");
    // Leading-axis reductions walk columns; few columns split the reduced axis over grid.y.
    let p = reduce_plan(&t, Op::Sum, class(1 << 20, 64, 1 << 20, Some(1)));
    assert!(
        p.columns && p.main.kernel == "sum_cols" && p.combine.is_none(),
        "{p:?}"
    );
    let p = reduce_plan(&t, Op::Sum, class(4096, 4096, 4096, Some(1)));
    assert!(
        p.columns && p.chunks == 16 && p.main.grid == (16, 16),
        "{p:?}"
    );
    let p = reduce_plan(
        &t,
        Op::Sum,
        reduce::Class {
            col_pack: 8,
            ..class(4096, 65536, 4096, Some(1))
        },
    );
    // 512 packs of outputs: 16 blocks of 32 packs x 8 slices; 4 blocks an SM over 16 columns
    // of blocks would be 33 chunks; at least 8 x 256 rows each makes 32.
    assert!(
        p.main.kernel == "sum_cols_tile" && p.main.grid == (16, 32) && p.main.block == 256,
        "{p:?}"
    );
    // Fewer than 32 packs of outputs: a thread per pack.
    let p = reduce_plan(
        &t,
        Op::Sum,
        reduce::Class {
            col_pack: 8,
            ..class(128, 65536, 128, Some(1))
        },
    );
    assert!(
        p.main.kernel == "sum_cols_vec" && p.main.grid.0 == 1,
        "{p:?}"
    );
    let p = reduce_plan(&t, Op::Min, class(16, 1 << 20, 16, Some(1)));
    assert!(
        p.columns && p.chunks > 1 && p.main.grid.1 as i64 == p.chunks,
        "{p:?}"
    );
    assert_eq!(p.combine.unwrap().kernel, "min_combine");
}

#[test]
fn elementwise_variants() {
    let t = table();
    let view = TuneView::new(&t, Some("sm_90"));
    use elementwise::Form;
    let params = |op| {
        let vars = super::grid::tune_vars(op, 1, SMS);
        elementwise::Params::of(&Tuned::select(&view, "elementwise", &vars).unwrap())
    };
    // The erf form of gelu (arith 16) keeps 8 packs a thread; the others take 1.
    assert_eq!(params("gelu").unary_packs, 8);
    assert_eq!(params("gelu_tanh").unary_packs, 1);
    let tuned = params("exp");
    // Packed forms: a block per tile of 256 packs (unary, a pack a thread in sm_90.json) or
    // 4 x 256 (binary, a number operand); strided forms: at most 8 blocks an SM.
    assert_eq!(tuned.unary_packs, 1);
    let (l, why) = elementwise::plan("gelu", false, 1 << 28, Form::Vec, 8, SMS, tuned);
    assert!(
        why.text().contains("a block per tile of work"),
        "{}",
        why.text()
    );
    assert!(why.text().contains("1 a thread per step"), "{}", why.text());
    assert_eq!((l.kernel, l.grid.0, l.block), ("gelu_vec1", 1 << 17, 256));
    let (l, why) = elementwise::plan("add", false, 1 << 28, Form::Vec, 8, SMS, tuned);
    assert!(why.text().contains("4 a thread per step"), "{}", why.text());
    assert_eq!((l.kernel, l.grid.0), ("add_vec", 1 << 15));
    // A number operand keeps 4, before the tensor too (`sub(1, x)`: `rsub`).
    let (l, _) = elementwise::plan("mul", true, 1 << 28, Form::Vec, 8, SMS, tuned);
    assert_eq!((l.kernel, l.grid.0), ("mul_scalar_vec", 1 << 15));
    let (l, _) = elementwise::plan("rdiv", true, 1 << 28, Form::Vec, 8, SMS, tuned);
    assert_eq!((l.kernel, l.grid.0), ("rdiv_scalar_vec", 1 << 15));
    let (l, _) = elementwise::plan("rsub", true, 1 << 20, Form::Halves, 8, SMS, tuned);
    assert_eq!(l.kernel, "rsub_scalar_halves");
    // 4 and 8 packs a thread (8 in default.json).
    for (packs, kernel, grid) in [(4, "exp_vec", 1 << 15), (8, "exp_vec8", 1 << 14)] {
        let p = elementwise::Params {
            unary_packs: packs,
            ..tuned
        };
        let (l, why) = elementwise::plan("exp", false, 1 << 28, Form::Vec, 8, SMS, p);
        assert_eq!((l.kernel, l.grid.0), (kernel, grid));
        assert!(
            why.text().contains(&format!("{packs} a thread per step")),
            "{}",
            why.text()
        );
    }
    let (l, why) = elementwise::plan("gelu", false, 1 << 28, Form::Strided32, 8, SMS, tuned);
    assert_eq!((l.kernel, l.grid.0), ("gelu_strided32", 8 * 132));
    assert!(why.text().contains("at most 1 wave"), "{}", why.text());
    // One element a thread a round (default.json)...
    let one = elementwise::Params {
        strided_rounds: 1,
        ..tuned
    };
    let (l, _) = elementwise::plan("add", true, 1000, Form::Strided32, 4, SMS, one);
    assert_eq!((l.kernel, l.grid.0), ("add_scalar_strided32", 4));
    // ... or four (sm_90.json): a quarter of the threads up to the cap.
    assert_eq!(tuned.strided_rounds, 4);
    let (l, why) = elementwise::plan("add", true, 1000, Form::Strided32, 4, SMS, tuned);
    assert_eq!((l.kernel, l.grid.0), ("add_scalar_strided32", 1));
    assert!(
        why.text().contains("4 elements a thread a round"),
        "{}",
        why.text()
    );
    assert!(
        why.text().contains("a grid's width apart"),
        "{}",
        why.text()
    );
    // ... from a tile of consecutive elements a block (a candidate): the same grid.
    let tiles = elementwise::Params {
        strided_tile: 1,
        ..tuned
    };
    let (l, why) = elementwise::plan("mul", false, 1 << 20, Form::Strided32, 4, SMS, tiles);
    assert_eq!((l.kernel, l.grid.0), ("mul_strided32", 1024));
    assert!(
        why.text()
            .contains("a block's from a tile of consecutive elements"),
        "{}",
        why.text()
    );
    let (l, why) = elementwise::plan("mul", false, 1 << 20, Form::Strided32, 4, SMS, one);
    assert_eq!(l.grid.0, 8 * 132);
    assert!(!why.text().contains("tile"), "{}", why.text());
    let (l, _) = elementwise::plan("mul", false, 1 << 20, Form::Strided32, 4, SMS, tuned);
    assert_eq!((l.kernel, l.grid.0), ("mul_strided32", 1024));
    let (l, _) = elementwise::plan("mul", false, 1 << 28, Form::Strided32, 4, SMS, tuned);
    assert_eq!(l.grid.0, 8 * 132);
    // Rows in halves of packs (sm_90.json): units of vec / 2 outputs, 4 a thread, no cap.
    assert_eq!(tuned.halves, 1);
    let (l, why) = elementwise::plan("mul", true, 1 << 24, Form::Halves, 4, SMS, tuned);
    assert_eq!((l.kernel, l.grid.0), ("mul_scalar_halves", 1 << 13));
    assert!(why.text().contains("units of 2 outputs"), "{}", why.text());
    let (l, _) = elementwise::plan("add", false, 1 << 24, Form::Halves, 8, SMS, tuned);
    assert_eq!((l.kernel, l.grid.0), ("add_halves", 1 << 12));
    let (l, _) = elementwise::plan("copy", false, 1 << 24, Form::Halves, 8, SMS, tuned);
    assert_eq!(l.kernel, "copy_halves");
    let (l, _) = elementwise::plan("copy", false, 1 << 33, Form::Strided, 4, SMS, tuned);
    assert_eq!(l.kernel, "copy_strided");
    let (l, _) = elementwise::plan("mul", false, 1 << 26, Form::Bcast, 4, SMS, tuned);
    assert_eq!(l.kernel, "mul_bcast");
}

#[test]
fn broadcast_forms() {
    use elementwise::broadcast_form;
    let p = [0u64, 0, 0];
    let dbg = |b| format!("{b:?}");
    // [R, C] + [C]: a row; [R, 1] * [R, C]: a column; a 0-d operand: one value.
    let bc = broadcast_form(&[8, 64], &[&[64, 1], &[0, 1], &[64, 1]], &p, 4).unwrap();
    assert!(dbg(bc).contains("ma: 0, mb: 1"), "{bc:?}");
    let bc = broadcast_form(&[8, 64], &[&[1, 0], &[64, 1], &[64, 1]], &p, 4).unwrap();
    assert!(dbg(bc).contains("ma: 2, mb: 0, sa: 1"), "{bc:?}");
    let bc = broadcast_form(&[512], &[&[1], &[0], &[1]], &p, 8).unwrap();
    assert!(
        dbg(bc).contains("rows: 1, cv: 64") && dbg(bc).contains("mb: 3"),
        "{bc:?}"
    );
    // Rows of part packs, a transposed operand, a misaligned row, nothing broadcast: no.
    assert!(broadcast_form(&[8, 6], &[&[6, 1], &[0, 1], &[6, 1]], &p, 4).is_none());
    assert!(broadcast_form(&[8, 64], &[&[1, 8], &[0, 1], &[64, 1]], &p, 4).is_none());
    assert!(broadcast_form(&[8, 64], &[&[64, 1], &[0, 1], &[64, 1]], &[0, 4, 0], 4).is_none());
    assert!(broadcast_form(&[8, 64], &[&[64, 1], &[64, 1], &[64, 1]], &p, 4).is_none());
}

#[test]
fn tiled_forms() {
    use elementwise::tiled_form;
    let dbg = |t| format!("{t:?}");
    // a.T + b (a transposed, b compact) into a compact output: a through shared memory.
    let t = tiled_form(&[64, 96], &[&[1, 64], &[96, 1], &[96, 1]]).unwrap();
    assert!(dbg(t).contains("r: 64, c: 96"), "{t:?}");
    assert!(dbg(t).contains("via: [1, 0]"), "{t:?}");
    // A transposed copy: one input, the output's strides in the last slot.
    let t = tiled_form(&[40, 33], &[&[1, 40], &[33, 1]]).unwrap();
    assert!(
        dbg(t).contains("sr: [1, 0, 33], sc: [40, 0, 1], via: [1, 0]"),
        "{t:?}"
    );
    // Nothing transposed, a dim under a tile's side, more than two dims, a strided output: no.
    assert!(tiled_form(&[64, 96], &[&[96, 1], &[96, 1], &[96, 1]]).is_none());
    assert!(tiled_form(&[16, 96], &[&[1, 16], &[96, 1], &[96, 1]]).is_none());
    assert!(tiled_form(&[4, 64, 96], &[&[1, 4, 256], &[1, 4, 256], &[6144, 96, 1]]).is_none());
    assert!(tiled_form(&[64, 96], &[&[1, 64], &[96, 1], &[192, 2]]).is_none());
    let t = table();
    let vars = super::grid::tune_vars("add", 1 << 26, SMS);
    let tuned = Tuned::select(&TuneView::new(&t, Some("sm_90")), "elementwise", &vars).unwrap();
    let tuned = elementwise::Params::of(&tuned);
    let (l, why) = elementwise::plan(
        "add",
        false,
        1 << 26,
        elementwise::Form::Tiled,
        4,
        SMS,
        tuned,
    );
    assert_eq!((l.kernel, l.block, l.grid.0), ("add_tiled", 256, 8 * 132));
    assert!(why.text().contains("32 x 32 tiles"), "{}", why.text());
}

#[test]
fn every_planned_kernel_is_in_the_source() {
    let dt = dt_of(DataType::bfloat16()).unwrap();
    let src = |f| module_source(&dt, f);
    let softmax_src = src(Family::Softmax);
    for name in softmax::kernel_names() {
        // Instances are macro calls: `softmax_group_8_4` is `SOFTMAX_GROUP(8, 4, bound)`.
        let parts: Vec<&str> = name.split('_').collect();
        let found = match parts[1] {
            "group" => softmax_src.contains(&format!("SOFTMAX_GROUP({}, {}, ", parts[2], parts[3])),
            "warp" => softmax_src.contains(&format!("SOFTMAX_WARP({}, ", parts[2])),
            "lanes" => softmax_src.contains(&format!("SOFTMAX_LANES({}, {})", parts[2], parts[3])),
            "block" => softmax_src.contains(&format!("SOFTMAX_BLOCK({})", parts[2])),
            "pipe" => {
                softmax_src.contains(&format!("SOFTMAX_PIPE({})", parts[2]))
                    || softmax_src.contains(&format!(" {name}("))
            }
            "cluster" => {
                softmax_src.contains(&format!("SOFTMAX_CLUSTER({})", parts[2]))
                    || softmax_src.contains(&format!(" {name}("))
            }
            "tileq" => src(Family::SoftmaxQuads)
                .contains(&format!("SOFTMAX_TILEQ({}, {})", parts[2], parts[3])),
            "tile" | "tileh" => {
                softmax_src.contains(&format!("SOFTMAX_TILE({}, {})", parts[2], parts[3]))
                    && softmax_src.contains("void __launch_bounds__(256) softmax_tile_##G")
                    && softmax_src.contains("void __launch_bounds__(128) softmax_tileh_##G")
            }
            _ => softmax_src.contains(&format!(" {name}(")),
        };
        assert!(found, "{name}");
    }
    let norm_src = src(Family::Norm);
    for name in norm::kernel_names() {
        let (op, variant) = name
            .split_once("_norm_")
            .map(|(a, b)| (format!("{a}_norm"), b))
            .unwrap();
        if let Some(cn) = variant.strip_prefix("pipe_") {
            let found = norm_src.contains(&format!(" {name}("))
                || norm_src.contains(&format!(
                    "NORM_PIPES({op}, {}, {cn})",
                    (op == "rms_norm") as u8
                ));
            assert!(found && norm_src.contains("NAME##_pipe_##CN("), "{name}");
            continue;
        }
        let macro_name = if variant.starts_with("cluster") {
            "NORM_CLUSTERS"
        } else {
            "NORM_VARIANTS"
        };
        assert!(norm_src.contains(&format!("{macro_name}({op}, ")), "{name}");
        assert!(norm_src.contains(&format!("NAME##_{variant}(")), "{name}");
    }
    let reduce_src = src(Family::Reduce(0));
    for (i, op) in crate::source::REDUCTIONS.iter().enumerate() {
        assert!(
            reduce_src.contains(&format!("REDUCE_OP({op}, {i})")),
            "{op}"
        );
    }
    assert!(reduce_src.contains("#define RED 0"));
    for v in [
        "rows_1",
        "rows_4",
        "rows_32",
        "rows_block",
        "cols",
        "cols_vec",
        "cols_tile",
        "combine",
    ] {
        assert!(reduce_src.contains(&format!("NAME##_{v}(")), "{v}");
    }
    let ew = src(Family::Elementwise);
    assert!(ew.contains("NAME##_tiled(u64 pa, u64 pb, u64 po, Tl L)"));
    assert!(ew.contains("NAME##_tiled(u64 pa, u64 po, Tl L)"));
    assert!(ew.contains("NAME##_vec8(u64 pa, u64 po, u64 n)"));
    assert!(ew.contains("NAME##_vec1(u64 pa, u64 po, u64 n)"));
    for name in ["relu", "exp", "gelu", "gelu_tanh", "softmax1", "copy"] {
        assert!(ew.contains(&format!("UNARY({name}, ")), "{name}");
        for packs in [1, 8] {
            assert_eq!(
                elementwise::kernel_packs(name, packs),
                Some(format!("{name}_vec{packs}").as_str())
            );
        }
        assert_eq!(elementwise::kernel_packs(name, 4), None);
    }
    assert_eq!(elementwise::kernel_packs("add", 8), None);
}

#[test]
fn elementwise_kernel_names_per_module() {
    let floats = elementwise::kernel_names(true);
    let ints = elementwise::kernel_names(false);
    for name in [
        "add_bcast",
        "gelu_tanh_vec8",
        "rsub_scalar_vec",
        "rdiv_scalar_halves",
    ] {
        assert!(floats.contains(&name), "{name}");
    }
    for name in ["add_tiled", "copy_vec1", "rsub_scalar_strided"] {
        assert!(ints.contains(&name), "{name}");
    }
    // Unary ops read one tensor: no broadcast form; integers have no div, relu or exp.
    assert!(!floats.contains(&"relu_bcast"));
    for name in ["div_vec", "rdiv_scalar_vec", "exp_vec"] {
        assert!(!ints.contains(&name), "{name}");
    }
    assert_eq!(ints.len(), 3 * 6 + 5 + 2 + 4 * 4);
}
