//! The variant each shape class gets on an H200 (132 SMs, sm_90) with the built-in tuning
//! files (reductions and elementwise ops here, softmax in `softmax/plan_tests.rs`, the norms in
//! `norm_plan_tests.rs`), the tables those tests share, and that every kernel a plan can name
//! exists in the CUDA source. No GPU needed.

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
    assert!(!why.text().contains("next tile"), "{}", why.text());
    // The prefetching tiles (`tiled_prefetch`, a candidate): the same grid.
    let next = elementwise::Params {
        tiled_prefetch: 1,
        ..tuned
    };
    for (name, kernel) in [("add", "add_tiledp"), ("exp", "exp_tiledp")] {
        let (l, why) =
            elementwise::plan(name, false, 1 << 26, elementwise::Form::Tiled, 4, SMS, next);
        assert_eq!((l.kernel, l.block, l.grid.0), (kernel, 256, 8 * 132));
        assert!(
            why.text().contains("the next tile's loads"),
            "{}",
            why.text()
        );
    }
    // Other forms do not change.
    let (l, _) = elementwise::plan("add", false, 1 << 26, elementwise::Form::Vec, 4, SMS, next);
    assert_eq!(l.kernel, "add_vec");
}

#[test]
fn every_planned_kernel_is_in_the_source() {
    let dt = dt_of(DataType::bfloat16()).unwrap();
    let src = |f| module_source(&dt, f);
    let softmax_src = src(Family::Softmax);
    for name in softmax::kernel_names(dt.size as i64) {
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
    assert_eq!(ints.len(), 3 * 7 + 6 + 2 + 4 * 4);
}
