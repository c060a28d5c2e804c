//! `exp` and `log1p` in f64 as straight-line code (no calls, no branches: selects only), so a
//! loop over a fixed-size array of lanes vectorises. std's versions are a libm call per value,
//! which is most of a small binary fit (one of each per row and evaluation).
//!
//! The algorithms are fdlibm's `exp` and musl's `log1p` (fdlibm's reduction and polynomials),
//! both within 1 ulp; only their branches became selects. Their constants are written with
//! the digits fdlibm and musl publish, so they can be checked against those sources.
#![allow(clippy::excessive_precision)]

const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
/// fdlibm's `invln2` (1.44269504088896338700) is this same double.
const INV_LN2: f64 = std::f64::consts::LOG2_E;
/// 1.5 · 2⁵²: adding it rounds to an integer and leaves that integer in the low mantissa bits.
const SHIFTER: f64 = 6_755_399_441_055_744.0;

const P1: f64 = 1.666_666_666_666_660_190_37e-1;
const P2: f64 = -2.777_777_777_701_559_338_42e-3;
const P3: f64 = 6.613_756_321_437_934_361_17e-5;
const P4: f64 = -1.653_390_220_546_525_153_90e-6;
const P5: f64 = 4.138_136_797_057_238_460_39e-8;

/// eˣ for every f64 (overflow to inf, underflow through the subnormals to 0, NaN stays NaN).
#[inline(always)]
pub(crate) fn exp(x: f64) -> f64 {
    // Beyond these the result is inf / 0 anyway; clamping keeps the exponent arithmetic in
    // range. NaN passes through (`f64::clamp` keeps it).
    let x = x.clamp(-746.0, 710.0);
    let t = x * INV_LN2 + SHIFTER;
    let kf = t - SHIFTER;
    // k + 2048 ≥ 0 as an integer (t and SHIFTER share their exponent, so the bits differ by k).
    let kk = t
        .to_bits()
        .wrapping_sub(SHIFTER.to_bits())
        .wrapping_add(2048);
    let hi = x - kf * LN2_HI;
    let lo = kf * LN2_LO;
    let r = hi - lo;
    let rr = r * r;
    let c = r - rr * (P1 + rr * (P2 + rr * (P3 + rr * (P4 + rr * P5))));
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    // 2^k as two normal factors, so a subnormal result is rounded once, by the last product.
    let h = kk >> 1;
    let s1 = f64::from_bits(h.wrapping_sub(1) << 52);
    let s2 = f64::from_bits(kk.wrapping_sub(h).wrapping_sub(1) << 52);
    y * s1 * s2
}

const LG1: f64 = 6.666_666_666_666_735_130e-1;
const LG2: f64 = 3.999_999_999_940_941_908e-1;
const LG3: f64 = 2.857_142_874_366_239_149e-1;
const LG4: f64 = 2.222_219_843_214_978_396e-1;
const LG5: f64 = 1.818_357_216_161_805_012e-1;
const LG6: f64 = 1.531_383_769_920_937_332e-1;
const LG7: f64 = 1.479_819_860_511_658_591e-1;
/// musl's `hx < 0x3fda827a` on the high word: below this (√2 − 1), 1 + x needs no reduction.
const SQRT2_M1: f64 = f64::from_bits(0x3fda_827a_0000_0000);
/// 2⁵² + 1023: subtracting it from the float whose mantissa bits hold `k + 1023` gives k.
const K_MAGIC: f64 = 4_503_599_627_370_496.0 + 1023.0;

/// ln(1 + x) for finite x ≥ 0 (the probe's arguments are exponentials).
#[inline(always)]
pub(crate) fn log1p(x: f64) -> f64 {
    let small = x < SQRT2_M1;
    let u = 1.0 + x;
    let ub = u.to_bits();
    // Reduce u to 2^k · m with m in [√2/2, √2).
    let hu = (ub >> 32) + (0x3ff0_0000 - 0x3fe6_a09e);
    let kb = hu >> 20; // k + 1023
    let kf = f64::from_bits(0x4330_0000_0000_0000 | kb) - K_MAGIC;
    // The rounding error of 1 + x, as a correction of log(u); none once it cannot matter.
    let c = if kb >= 1023 + 2 {
        1.0 - (u - x)
    } else {
        x - (u - 1.0)
    } / u;
    let c = if kb < 1023 + 54 { c } else { 0.0 };
    let m = f64::from_bits((((hu & 0x000f_ffff) + 0x3fe6_a09e) << 32) | (ub & 0xffff_ffff));
    let (f, c, dk) = if small {
        (x, 0.0, 0.0)
    } else {
        (m - 1.0, c, kf)
    };
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    s * (hfsq + r) + (dk * LN2_LO + c) - hfsq + f + dk * LN2_HI
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place (both finite and of the same sign, or equal).
    fn ulps(a: f64, b: f64) -> u64 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0;
        }
        assert!(
            a.is_finite() && b.is_finite() && a.signum() == b.signum(),
            "{a} vs {b}"
        );
        a.to_bits().abs_diff(b.to_bits())
    }

    /// A deterministic spread of values in [lo, hi]: an even grid plus pseudo-random points.
    fn sweep(lo: f64, hi: f64) -> impl Iterator<Item = f64> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        (0..200_000).map(move |i| {
            if i % 2 == 0 {
                lo + (hi - lo) * i as f64 / 200_000.0
            } else {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                lo + (hi - lo) * (state >> 11) as f64 / (1u64 << 53) as f64
            }
        })
    }

    #[test]
    fn exp_is_within_one_ulp_of_std() {
        let edges = [
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            f64::MIN_POSITIVE,
            0.5 * std::f64::consts::LN_2,
            -0.5 * std::f64::consts::LN_2,
            1.0,
            -2.0,
            2.0,
            -18.0,
            -37.0,
            709.782,
            709.7827128933840,
            -708.39,
            -709.0,
            -740.0,
            -745.1332191019411,
            -745.2,
            -800.0,
            1000.0,
            -1e300,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let mut worst = (0, 0.0);
        for x in edges
            .into_iter()
            .chain(sweep(-745.5, 709.8))
            .chain(sweep(-40.0, 20.0))
            .chain(sweep(-1e-6, 1e-6))
        {
            let d = ulps(exp(x), x.exp());
            if d > worst.0 {
                worst = (d, x);
            }
        }
        assert!(worst.0 <= 1, "exp({}) is {} ulps off", worst.1, worst.0);
        assert_eq!(exp(710.0), f64::INFINITY);
        assert_eq!(exp(-746.0), 0.0);
        assert!(exp(f64::NAN).is_nan());
    }

    #[test]
    fn log1p_is_within_one_ulp_of_std() {
        let edges = [
            0.0,
            5e-324,
            1e-310,
            1e-300,
            1e-20,
            f64::EPSILON / 2.0,
            f64::EPSILON,
            SQRT2_M1,
            f64::from_bits(SQRT2_M1.to_bits() - 1),
            f64::from_bits(SQRT2_M1.to_bits() + 1),
            1.0,
            2.0,
            3.0,
            7.38905609893065,
            1e10,
            9.007199254740992e15,
            1.8014398509481984e16,
            1e300,
            f64::MAX,
        ];
        let mut worst = (0, 0.0);
        for x in edges
            .into_iter()
            .chain(sweep(0.0, 8.0))
            .chain(sweep(0.0, 1e-3))
            .chain(sweep(0.0, 1e20))
            .chain((0..2000).map(|i| 10f64.powf(-300.0 + 0.3 * i as f64)))
        {
            let d = ulps(log1p(x), x.ln_1p());
            if d > worst.0 {
                worst = (d, x);
            }
        }
        assert!(worst.0 <= 1, "log1p({}) is {} ulps off", worst.1, worst.0);
    }
}
