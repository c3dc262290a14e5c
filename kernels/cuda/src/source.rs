//! The CUDA C++ source of the kernels (`src/cu/*.cuh`: `common`, the dtype's prelude, `packs`,
//! then the family's files: softmax's are `softmax`, `softmax_staged`, `softmax_tile`, `pipe`
//! and `softmax_pipe`, the norms' `norm`, `pipe` and `norm_pipe`), one module per dtype and
//! family of ops, compiled with NVRTC at first use: a call to `add` compiles the elementwise kernels of its
//! dtype only.
//!
//! Self-contained: float16 and bfloat16 are stored as 16-bit integers and converted with PTX
//! `cvt` (float16; bfloat16 from sm_80) or bit arithmetic (bfloat16 before sm_80), so NVRTC
//! needs no CUDA headers. Every entry point takes raw device pointers (data + byte offset, as
//! u64 from the host) and element strides, so tensors from any framework work in place.

use rffi_core::DataType;

/// Most dims a strided launch takes after collapsing (`Lay` in the source).
pub const MAX_DIMS: usize = 8;

/// A group of kernels compiled together (one NVRTC module per dtype and family): a first call
/// compiles only its family (and, for reductions, only its op).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    Elementwise,
    /// One reduction: 0 sum, 1 mean, 2 max, 3 min, 4 argmax (`RED` in `cu/reduce.cuh`).
    Reduce(u8),
    Softmax,
    Norm,
    /// The candidate softmax tiles computed in quads (`softmax_tileq_*`, chosen only where a
    /// config sets `tile_quads`): a module apart, so that the softmax module a first call
    /// compiles does not grow by them.
    SoftmaxQuads,
}

/// The reductions' names, in `Family::Reduce` order.
pub const REDUCTIONS: [&str; 5] = ["sum", "mean", "max", "min", "argmax"];

impl Family {
    pub const ALL: [Family; 9] = [
        Family::Elementwise,
        Family::Reduce(0),
        Family::Reduce(1),
        Family::Reduce(2),
        Family::Reduce(3),
        Family::Reduce(4),
        Family::Softmax,
        Family::Norm,
        Family::SoftmaxQuads,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::Elementwise => "elementwise",
            Family::Reduce(0) => "reduce_sum",
            Family::Reduce(1) => "reduce_mean",
            Family::Reduce(2) => "reduce_max",
            Family::Reduce(3) => "reduce_min",
            Family::Reduce(_) => "reduce_argmax",
            Family::Softmax => "softmax",
            Family::Norm => "norm",
            Family::SoftmaxQuads => "softmax_quads",
        }
    }

    pub fn parse(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }

    fn body(self) -> &'static str {
        match self {
            Family::Elementwise => include_str!("cu/elementwise.cuh"),
            Family::Reduce(_) => include_str!("cu/reduce.cuh"),
            Family::Softmax | Family::SoftmaxQuads => concat!(
                include_str!("cu/softmax.cuh"),
                include_str!("cu/softmax_staged.cuh"),
                include_str!("cu/softmax_tile.cuh"),
                include_str!("cu/pipe.cuh"),
                include_str!("cu/softmax_pipe.cuh")
            ),
            Family::Norm => concat!(
                include_str!("cu/norm.cuh"),
                include_str!("cu/pipe.cuh"),
                include_str!("cu/norm_pipe.cuh")
            ),
        }
    }

    /// Whether `dt` has this family (integers have the elementwise kernels only).
    pub fn serves(self, dt: &Dt) -> bool {
        dt.is_float || self == Family::Elementwise
    }
}

/// What the host needs to know about a dtype's module.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Dt {
    /// Suffix of the module name.
    pub name: &'static str,
    /// Storage bytes.
    pub size: usize,
    /// Elements per 16-byte vector load.
    pub vec: usize,
    pub is_float: bool,
    /// The compute type's C name (what a scalar operand is passed as).
    pub compute: Compute,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Compute {
    F32,
    F64,
    I32,
    I64,
}

impl Dt {
    /// Bytes of the compute type (float32 for 16-bit storage).
    pub fn compute_size(&self) -> usize {
        match self.compute {
            Compute::F64 | Compute::I64 => 8,
            Compute::F32 | Compute::I32 => 4,
        }
    }
}

/// The dtypes with a CUDA module (those `dt_of` knows), in its order.
pub const DTYPES: [DataType; 6] = [
    DataType::float(32),
    DataType::float(64),
    DataType::float(16),
    DataType::bfloat16(),
    DataType::int(32),
    DataType::int(64),
];

pub fn dt_of(d: DataType) -> Option<Dt> {
    let (name, size, is_float, compute) = if d == DataType::float(32) {
        ("f32", 4, true, Compute::F32)
    } else if d == DataType::float(64) {
        ("f64", 8, true, Compute::F64)
    } else if d == DataType::float(16) {
        ("f16", 2, true, Compute::F32)
    } else if d == DataType::bfloat16() {
        ("bf16", 2, true, Compute::F32)
    } else if d == DataType::int(32) {
        ("i32", 4, false, Compute::I32)
    } else if d == DataType::int(64) {
        ("i64", 8, false, Compute::I64)
    } else {
        return None;
    };
    Some(Dt {
        name,
        size,
        vec: 16 / size,
        is_float,
        compute,
    })
}

/// The dtype's prelude: storage type T, compute type C, accumulator ACC, conversions, and the
/// math the kernels use (FEXP: accurate `expf` for float32, the fast `__expf` for 16-bit
/// results, whose rounding hides its error; for float16 with subnormals flushed, which no float16
/// result can show). HALF: 1 float16, 2 bfloat16, 0 otherwise (the word-wise helpers of packs.cuh).
fn prelude(dt: &Dt) -> &'static str {
    match dt.name {
        "f32" => {
            "typedef float T; typedef float C; typedef float ACC;\n#define IS_FLOAT 1\n#define IS_F64 0\n#define HALF 0\n\
             __device__ __forceinline__ C ld(T v) { return v; }\n\
             __device__ __forceinline__ T st(C v) { return v; }\n\
             #define FEXP(x) expf(x)\n#define FDIV(x, y) ((x) / (y))\n#define RSQRT(x) rsqrtf(x)\n\
             #define NEG_INF (-__int_as_float(0x7f800000))\n"
        }
        "f64" => {
            "typedef double T; typedef double C; typedef double ACC;\n#define IS_FLOAT 1\n#define IS_F64 1\n#define HALF 0\n\
             __device__ __forceinline__ C ld(T v) { return v; }\n\
             __device__ __forceinline__ T st(C v) { return v; }\n\
             #define FEXP(x) exp(x)\n#define FDIV(x, y) ((x) / (y))\n#define RSQRT(x) (1.0 / sqrt(x))\n\
             #define NEG_INF (-__longlong_as_double(0x7ff0000000000000LL))\n"
        }
        "f16" => {
            "typedef u16 T; typedef float C; typedef float ACC;\n#define IS_FLOAT 1\n#define IS_F64 0\n#define HALF 1\n\
             __device__ __forceinline__ C ld(T v) { return h2f(v); }\n\
             __device__ __forceinline__ T st(C v) { return f2h(v); }\n\
             #define FEXP(x) ex2_ftz((x) * 1.4426950408889634f)\n#define FDIV(x, y) __fdividef(x, y)\n#define RSQRT(x) rsqrtf(x)\n\
             #define NEG_INF (-__int_as_float(0x7f800000))\n"
        }
        "bf16" => {
            "typedef u16 T; typedef float C; typedef float ACC;\n#define IS_FLOAT 1\n#define IS_F64 0\n#define HALF 2\n\
             __device__ __forceinline__ C ld(T v) { return b2f(v); }\n\
             __device__ __forceinline__ T st(C v) { return f2b(v); }\n\
             #define FEXP(x) __expf(x)\n#define FDIV(x, y) __fdividef(x, y)\n#define RSQRT(x) rsqrtf(x)\n\
             #define NEG_INF (-__int_as_float(0x7f800000))\n"
        }
        "i32" => {
            "typedef int T; typedef int C; typedef unsigned int U;\n#define IS_FLOAT 0\n#define HALF 0\n\
             __device__ __forceinline__ C ld(T v) { return v; }\n\
             __device__ __forceinline__ T st(C v) { return v; }\n"
        }
        "i64" => {
            "typedef long long T; typedef long long C; typedef unsigned long long U;\n\
             #define IS_FLOAT 0\n#define HALF 0\n\
             __device__ __forceinline__ C ld(T v) { return v; }\n\
             __device__ __forceinline__ T st(C v) { return v; }\n"
        }
        other => unreachable!("no CUDA module for {other}"),
    }
}

/// The source of the module of `family` for `dt`.
pub fn module_source(dt: &Dt, family: Family) -> String {
    // Integers wrap (through unsigned arithmetic: signed overflow is undefined in C++).
    let arith = if dt.is_float {
        "#define ADD(x, y) ((x) + (y))\n#define SUB(x, y) ((x) - (y))\n#define MUL(x, y) ((x) * (y))\n"
    } else {
        "#define ADD(x, y) ((C)((U)(x) + (U)(y)))\n#define SUB(x, y) ((C)((U)(x) - (U)(y)))\n\
         #define MUL(x, y) ((C)((U)(x) * (U)(y)))\n"
    };
    let red = match family {
        Family::Reduce(r) => format!("#define RED {r}\n"),
        Family::SoftmaxQuads => "#define SOFTMAX_QUADS 1\n".to_owned(),
        _ => String::new(),
    };
    format!(
        "{}\n{}#define VEC {}\n{arith}{red}{}\n{}\n{}",
        include_str!("cu/common.cuh"),
        prelude(dt),
        dt.vec,
        include_str!("cu/packs.cuh"),
        family.body(),
        crate::ops::layout_asserts(family)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_has_a_module() {
        for d in DTYPES {
            let dt = dt_of(d).unwrap();
            let src = module_source(&dt, Family::Elementwise);
            assert!(src.contains(&format!("#define VEC {}", dt.vec)));
            assert_eq!(src.contains("#define IS_FLOAT 1"), dt.is_float);
            for f in Family::ALL {
                assert_eq!(f.serves(&dt), dt.is_float || f == Family::Elementwise);
            }
        }
        assert!(dt_of(DataType::int(8)).is_none());
    }

    #[test]
    fn modules_assert_the_host_layout_of_their_structs() {
        let dt = dt_of(DataType::float(32)).unwrap();
        let asserts = |f| {
            module_source(&dt, f)
                .lines()
                .filter_map(|l| l.strip_prefix("static_assert(sizeof("))
                .map(|l| l.split(')').next().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            asserts(Family::Elementwise),
            ["Lay", "Lay32", "Bc", "Tl", "Hv"]
        );
        assert_eq!(asserts(Family::Reduce(0)), ["Lay", "Lay32", "RLay"]);
        assert_eq!(asserts(Family::Norm), ["Lay", "Lay32"]);
        let src = module_source(&dt, Family::Elementwise);
        let lay32 = std::mem::size_of::<crate::ops::Lay32>();
        assert!(src.contains(&format!("sizeof(Lay32) == {lay32} && alignof(Lay32) == 4")));
    }
}
