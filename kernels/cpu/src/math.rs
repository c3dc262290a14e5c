//! Vectorizable math: `exp` for float32 written without a libm call, so loops over it compile to
//! SIMD code (libm's `expf` is a scalar call per element and would cost ~10x).

/// e^x for float32, within 2 ulp of the correctly rounded result over the whole range; exact 0 below
/// the smallest normal result (so `exp(-inf) == 0`), +inf above the largest, NaN for NaN.
///
/// Cody-Waite range reduction `x = n ln2 + r`, `|r| <= ln2/2`, then the Cephes degree-6
/// polynomial for e^r and a scale by 2^n built from its exponent bits. Branch-free: the special
/// ranges are selects, which vectorize.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const HI: f32 = 88.376_26;
    const LO: f32 = -87.336_54;
    const LOG2E: f32 = core::f32::consts::LOG2_E;
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer (no libm `round`).
    const ROUND: f32 = 12_582_912.0;
    // Not `clamp`: it panics-checks its bounds and handles NaN in a way that does not vectorize;
    // NaN passes through these compares unchanged.
    #[allow(clippy::manual_clamp)]
    let xc = if x > HI {
        HI
    } else if x < LO {
        LO
    } else {
        x
    };
    let t = xc * LOG2E + ROUND;
    let n = t - ROUND;
    let r = xc - n * C1 - n * C2;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let er = p * r * r + r + 1.0;
    // `t`'s low mantissa bits hold n (it is 1.5 * 2^23 + n), and n is in [-126, 127] after the
    // clamp, so the low 9 bits of `bits(t) + 127` are the biased exponent of 2^n. Integer
    // arithmetic only: a float-to-int conversion would keep the loop from vectorizing.
    let scale = f32::from_bits(t.to_bits().wrapping_add(127) << 23);
    let y = er * scale;
    if x > HI {
        f32::INFINITY
    } else if x < LO {
        0.0
    } else {
        y
    }
}

/// Defines `$name(args)` that runs `$body` compiled for AVX-512, for AVX2 + FMA, or for the
/// baseline, whichever the CPU has (checked at run time; the check is cached by std).
macro_rules! multiversion {
    ($vis:vis fn $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
        $vis fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn body($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx2,fma")]
                fn avx512($($arg: $ty),*) { body($($arg),*) }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) { body($($arg),*) }
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                {
                    // SAFETY: the CPU has the features the function was compiled for.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}
pub(crate) use multiversion;

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn exp_is_accurate_over_the_range() {
        let mut worst = 0;
        let mut x = -87.0f32;
        while x < 88.3 {
            let want = (x as f64).exp() as f32;
            worst = worst.max(ulps(exp_f32(x), want));
            x += 0.000_731;
        }
        assert!(worst <= 2, "worst error {worst} ulp");
    }

    #[test]
    fn exp_special_values() {
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(-1000.0), 0.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
    }
}
