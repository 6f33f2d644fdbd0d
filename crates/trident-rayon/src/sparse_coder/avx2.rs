//! The f32 Batch-OMP step fused with the next step's argmax, in AVX2
//! intrinsics: [`super::avx512`]'s scheme with 8-lane vectors, for the many
//! laptop and desktop CPUs without AVX-512.
//!
//! Blocks are 64 entries (8 vectors), not the generic step's 128: AVX2 has
//! 16 vector registers, and 16 accumulators left none for the rows being
//! subtracted. The block size does not change any entry's operations (each
//! is the same chain of multiply-adds in order of `t`), so codes are the
//! same bits as on the other copies; the tests comparing compiled copies
//! check that.

use std::arch::x86_64::*;

use super::kernel::Step;

/// [`super::avx512::step_argmax`] on AVX2 + FMA.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
///
/// # Panics
/// When the operands' lengths do not fit ([`Step::checked_kp`]).
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn step_argmax(s: &mut Step<'_, f32>) -> (usize, f32) {
    let kp = s.checked_kp();
    let mut m = Max::new();
    let whole = kp / 64 * 64;
    for b in (0..whole).step_by(64) {
        // SAFETY: `b + 64 <= kp`, and `checked_kp` bounds every access.
        unsafe { block::<8>(b, s, &mut m) };
    }
    for b in (whole..kp).step_by(32) {
        // SAFETY: `b + 32 <= kp`, as above.
        unsafe { block::<4>(b, s, &mut m) };
    }
    m.reduce()
}

/// Running per-lane maxima of `cabs` and the vector index (entry / 8) of
/// their first occurrence (as integer bits), in two chains (even and odd
/// vectors).
struct Max {
    value: [__m256; 2],
    vector: [__m256i; 2],
}

impl Max {
    #[target_feature(enable = "avx2")]
    #[inline]
    fn new() -> Self {
        Self {
            value: [_mm256_set1_ps(-1.0); 2],
            vector: [_mm256_set1_epi32(-1); 2],
        }
    }

    /// Takes vector `v` of `cabs` (its values `x`) into chain `v % 2`:
    /// strictly larger only, so each lane keeps its first occurrence (and
    /// NaN, never larger, is never taken).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn take(&mut self, v: usize, x: __m256) {
        let h = v % 2;
        let gt = _mm256_cmp_ps::<_CMP_GT_OQ>(x, self.value[h]);
        self.value[h] = _mm256_blendv_ps(self.value[h], x, gt);
        self.vector[h] = _mm256_blendv_epi8(
            self.vector[h],
            _mm256_set1_epi32(v as i32),
            _mm256_castps_si256(gt),
        );
    }

    /// The largest value over both chains and all lanes, and the smallest
    /// entry index holding it (`vector * 8 + lane`), reduced in scalar code
    /// (16 candidates).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn reduce(&self) -> (usize, f32) {
        let mut values = [0f32; 16];
        let mut vectors = [0u32; 16];
        for h in 0..2 {
            // SAFETY: each store writes 8 values inside its array.
            unsafe {
                _mm256_storeu_ps(values.as_mut_ptr().add(8 * h), self.value[h]);
                _mm256_storeu_si256(vectors.as_mut_ptr().add(8 * h).cast(), self.vector[h]);
            }
        }
        let best = values
            .iter()
            .fold(-1.0f32, |m, &v| if v > m { v } else { m });
        let mut index = u32::MAX as usize;
        for (s, (&v, &vec)) in values.iter().zip(&vectors).enumerate() {
            if v == best && vec != u32::MAX {
                index = index.min(vec as usize * 8 + s % 8);
            }
        }
        (index, best)
    }
}

/// [`step_argmax`] for the entries `b..b + 8 V`: the block of `u_k` stays
/// in `V` registers while every row of `U` is subtracted from it, in order
/// of `t`.
///
/// # Safety
/// AVX2 and FMA; `b + 8 V <= kp`, with `s`'s lengths checked
/// ([`Step::checked_kp`]).
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn block<const V: usize>(b: usize, s: &mut Step<'_, f32>, m: &mut Max) {
    let kp = s.uk.len();
    // SAFETY: the caller's bounds: every pointer below stays within its
    // slice (`b + 8 V <= kp`, rows `t < ws.len()` of `prev`).
    unsafe {
        let mut acc: [__m256; V] =
            std::array::from_fn(|l| _mm256_loadu_ps(s.grow.as_ptr().add(b + 8 * l)));
        for (t, &w) in s.ws.iter().enumerate() {
            let nw = _mm256_set1_ps(-w);
            let row = s.prev.as_ptr().add(t * kp + b);
            for (l, a) in acc.iter_mut().enumerate() {
                *a = _mm256_fmadd_ps(nw, _mm256_loadu_ps(row.add(8 * l)), *a);
            }
        }
        let (negc, neg1) = (_mm256_set1_ps(-s.c), _mm256_set1_ps(-1.0));
        let magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX));
        for (l, &u) in acc.iter().enumerate() {
            let e = b + 8 * l;
            _mm256_storeu_ps(s.uk.as_mut_ptr().add(e), u);
            let pa = s.alpha.as_mut_ptr().add(e);
            let a = _mm256_fmadd_ps(negc, u, _mm256_loadu_ps(pa));
            _mm256_storeu_ps(pa, a);
            let pc = s.cabs.as_mut_ptr().add(e);
            let chosen = _mm256_cmp_ps::<_CMP_EQ_OQ>(_mm256_loadu_ps(pc), neg1);
            let x = _mm256_blendv_ps(_mm256_and_ps(a, magnitude), neg1, chosen);
            _mm256_storeu_ps(pc, x);
            m.take(e / 8, x);
        }
    }
}
