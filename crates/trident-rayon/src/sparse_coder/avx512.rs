//! The f32 Batch-OMP step fused with the next step's argmax, in AVX-512
//! intrinsics.
//!
//! The generic loop runs `Float::step` (the new row of `U`,
//! `alpha`, `cabs`) and then `argmax`, which reads `cabs` twice more (its
//! largest value, then the first index holding it). Here the largest value
//! and its first index are tracked per lane while `cabs` is written, so a
//! step ends with a 16-lane reduction instead of two more passes. (Fusing
//! the generic Rust the same way was slower: the compiler kept the running
//! maxima in memory. Intrinsics keep them in registers.)
//!
//! The arithmetic is the generic step's, operation for operation (the same
//! multiply-adds in the same order, `|alpha|`, chosen atoms kept at -1), and
//! the argmax is exact, so codes are the same bits as on the other copies;
//! the tests comparing compiled copies check that.

use std::arch::x86_64::*;

use super::kernel::Step;

/// `u_k = grow - sum_t ws_t prev_t`, `alpha -= c u_k`, `cabs = |alpha|`
/// except where `cabs` is -1 (atoms already chosen, which stay -1), then
/// the largest entry of the new `cabs` and the smallest index holding it.
/// When every entry is -1 the index is unspecified (the caller stops at
/// such a value before using it).
///
/// # Safety
/// The CPU must have AVX-512F and FMA.
///
/// # Panics
/// When the operands' lengths do not fit ([`Step::checked_kp`]).
#[target_feature(enable = "avx512f,fma")]
pub(super) unsafe fn step_argmax(s: &mut Step<'_, f32>) -> (usize, f32) {
    let kp = s.checked_kp();
    let mut m = Max::new();
    let whole = kp / 128 * 128;
    for b in (0..whole).step_by(128) {
        // SAFETY: `b + 128 <= kp`, and `checked_kp` bounds every access.
        unsafe { block::<8>(b, s, &mut m) };
    }
    for b in (whole..kp).step_by(32) {
        // SAFETY: `b + 32 <= kp`, as above.
        unsafe { block::<2>(b, s, &mut m) };
    }
    m.reduce()
}

/// Running per-lane maxima of `cabs` and the vector index (entry / 16) of
/// their first occurrence, in two chains (even and odd vectors), so that
/// consecutive compares do not wait on each other.
struct Max {
    value: [__m512; 2],
    vector: [__m512i; 2],
}

impl Max {
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn new() -> Self {
        Self {
            value: [_mm512_set1_ps(-1.0); 2],
            vector: [_mm512_set1_epi32(-1); 2],
        }
    }

    /// Takes vector `v` of `cabs` (its values `x`) into chain `v % 2`:
    /// strictly larger only, so each lane keeps its first occurrence (and
    /// NaN, never larger, is never taken).
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn take(&mut self, v: usize, x: __m512) {
        let h = v % 2;
        let gt = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, self.value[h]);
        self.value[h] = _mm512_mask_mov_ps(self.value[h], gt, x);
        self.vector[h] = _mm512_mask_mov_epi32(self.vector[h], gt, _mm512_set1_epi32(v as i32));
    }

    /// The largest value over both chains and all lanes, and the smallest
    /// entry index holding it (`vector * 16 + lane`).
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn reduce(&self) -> (usize, f32) {
        let [v0, v1] = self.value;
        let [i0, i1] = self.vector;
        // Per lane, chain 1 where it is larger, or equal at an earlier
        // vector (equal values above -1 both come from hits).
        let later = _mm512_cmp_epu32_mask::<_MM_CMPINT_LT>(i1, i0);
        let take = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v1, v0)
            | (_mm512_cmp_ps_mask::<_CMP_EQ_OQ>(v1, v0) & later);
        let value = _mm512_mask_mov_ps(v0, take, v1);
        let vector = _mm512_mask_mov_epi32(i0, take, i1);
        let best = _mm512_reduce_max_ps(value);
        let hit = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(value, _mm512_set1_ps(best));
        let lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
        let index = _mm512_add_epi32(_mm512_slli_epi32::<4>(vector), lanes);
        (_mm512_mask_reduce_min_epu32(hit, index) as usize, best)
    }
}

/// [`step_argmax`] for the entries `b..b + 16 V`: the block of `u_k` stays
/// in `V` registers while every row of `U` is subtracted from it, in order
/// of `t` (the generic step's block and order: 8 vectors is its 128).
///
/// # Safety
/// AVX-512F and FMA; `b + 16 V <= kp`, with `s`'s lengths checked
/// ([`Step::checked_kp`]).
#[target_feature(enable = "avx512f,fma")]
#[inline]
unsafe fn block<const V: usize>(b: usize, s: &mut Step<'_, f32>, m: &mut Max) {
    let kp = s.uk.len();
    // SAFETY: the caller's bounds: every pointer below stays within its
    // slice (`b + 16 V <= kp`, rows `t < ws.len()` of `prev`).
    unsafe {
        let mut acc: [__m512; V] =
            std::array::from_fn(|l| _mm512_loadu_ps(s.grow.as_ptr().add(b + 16 * l)));
        for (t, &w) in s.ws.iter().enumerate() {
            let nw = _mm512_set1_ps(-w);
            let row = s.prev.as_ptr().add(t * kp + b);
            for (l, a) in acc.iter_mut().enumerate() {
                *a = _mm512_fmadd_ps(nw, _mm512_loadu_ps(row.add(16 * l)), *a);
            }
        }
        let (negc, neg1) = (_mm512_set1_ps(-s.c), _mm512_set1_ps(-1.0));
        for (l, &u) in acc.iter().enumerate() {
            let e = b + 16 * l;
            _mm512_storeu_ps(s.uk.as_mut_ptr().add(e), u);
            let pa = s.alpha.as_mut_ptr().add(e);
            let a = _mm512_fmadd_ps(negc, u, _mm512_loadu_ps(pa));
            _mm512_storeu_ps(pa, a);
            let pc = s.cabs.as_mut_ptr().add(e);
            let chosen = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(_mm512_loadu_ps(pc), neg1);
            let x = _mm512_mask_mov_ps(_mm512_abs_ps(a), chosen, neg1);
            _mm512_storeu_ps(pc, x);
            m.take(e / 16, x);
        }
    }
}
