//! Independent certificates: checks of an answer that do not trust the code
//! that produced it. They certify the reference backend in its own tests, and
//! `verify` may run them on any backend's output (on sizes where their naive
//! cost is affordable).
//!
//! Every certificate returns a [`Certificate`]: `Ok(worst)` where `worst` is
//! the largest error-to-tolerance ratio seen (`<= 1` passes; 0 for exact
//! checks), or `Err(what)` naming the first structural violation or the worst
//! tolerance violation with its ratio.
//!
//! | certificate | computes independently | checks |
//! | --- | --- | --- |
//! | [`gemm`] | naive f64 triple loop | the contract's relative Frobenius error; C's padding untouched |
//! | [`spgemm`] | row-wise f64 accumulation in a `BTreeMap` (no sprs) | identical structure (the contract's rule), values within `tol::spgemm * sum_p abs(A(i,p) B(p,j))` |
//! | [`nearest`], [`knn`], [`closest_pairs`] | brute force over B in f64 | exact distance of each answer within `1e-6` rel + `1e-6` abs of the optimum |
//!
//! The tolerances are `trident_core::tol`'s (listed in `docs/tolerances.md`),
//! the same numbers the testkit's checker uses.
//! | [`omp`], [`omp_codes`] | least squares by SVD along the candidate's own path | greedy choices, coefficients, residual, orthogonality, stop rule |
//! | [`network_flow`] | nothing but sums | capacity, conservation, value == cut capacity, cut == residual reachability |
//! | [`grid_cut`] | a flow by this crate's Dinic, then checked like a network | the same, on the grid's arrays |
//!
//! What they are not: exact-tie referees. Where the contract accepts either of two
//! (near-)equal choices, so do these; comparing a backend with the reference
//! answer bit for bit is `verify`'s business.

use std::collections::BTreeMap;

use nalgebra::{DMatrix, DVector};
use trident_core::tol::{self, Tol};
use trident_core::{
    Coord, CsrMatrix, Dictionary, FlowNetwork, GemmParams, GridCut, GridGraph, MatRef, Neighbor,
    NetworkFlow, Op, Pair, Point, Precision, RadiusNeighbors, Scalar, SparseCodes, StopRule,
};

use crate::max_flow::grid_flows;
use trident_core::omp::{OMP_WINDOW_F64, OmpDict, SignalScale, dot};

/// `Ok(worst error/tolerance ratio, <= 1)` or `Err(what failed)`.
pub type Certificate = std::result::Result<f64, String>;

/// Tracks the worst ratio and what it was for.
struct Worst {
    ratio: f64,
    what: String,
}

impl Worst {
    fn new() -> Self {
        Self {
            ratio: 0.0,
            what: String::new(),
        }
    }

    /// Records `ratio` if it is the worst so far (a NaN is the worst of all).
    fn see(&mut self, ratio: f64, what: impl FnOnce() -> String) {
        if self.ratio.is_nan() {
            return;
        }
        if ratio.is_nan() || ratio > self.ratio {
            self.ratio = ratio;
            self.what = what();
        }
    }

    fn finish(self) -> Certificate {
        if self.ratio <= 1.0 {
            Ok(self.ratio)
        } else {
            Err(format!(
                "{} (error / tolerance = {:.3e})",
                self.what, self.ratio
            ))
        }
    }
}

/// `err / bound`, with `0 / 0 = 0` so that exact answers pass a zero
/// tolerance ([`tol::ratio`]).
fn ratio(err: f64, bound: f64) -> f64 {
    tol::ratio(err, bound)
}

/// Bit equality (NaN payloads and the sign of zero included); widening to
/// f64 is injective on f32 bit patterns up to NaN quieting.
fn same_bits<T: Scalar>(x: T, y: T) -> bool {
    x.to_f64().to_bits() == y.to_f64().to_bits()
}

// ---------------------------------------------------------------- DenseGemm

/// The GEMM tolerance on `||C - C_ref||_F` relative to `||C_ref||_F`
/// ([`tol::gemm`]).
pub fn gemm_tol<T: Scalar>(precision: Precision) -> Tol {
    tol::gemm::<T>(precision)
}

fn op_get<T: Scalar>(x: &MatRef<'_, T>, op: Op, i: usize, j: usize) -> f64 {
    if op.is_transposed() {
        x.get(j, i).to_f64()
    } else {
        x.get(i, j).to_f64()
    }
}

/// Certifies `c_after = alpha op(A) op(B) + beta c_before` against a naive f64
/// triple loop (O(mnk): small sizes). Also checks that every element of
/// `c_after`'s slice outside the `m x n` view (row padding, trailing elements)
/// is bit-identical to `c_before`'s, and that `beta == 0` ignored C.
pub fn gemm<T: Scalar>(
    p: &GemmParams<T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    c_before: MatRef<'_, T>,
    c_after: MatRef<'_, T>,
) -> Certificate {
    let (m, k) = a.op_shape(p.op_a);
    let (kb, n) = b.op_shape(p.op_b);
    if k != kb {
        return Err(format!("op(A) is {m} x {k} but op(B) is {kb} x {n}"));
    }
    for (name, c) in [("c_before", &c_before), ("c_after", &c_after)] {
        if (c.rows(), c.cols()) != (m, n) {
            return Err(format!(
                "{name} is {} x {}, expected {m} x {n}",
                c.rows(),
                c.cols()
            ));
        }
    }
    if c_before.ld() != c_after.ld() || c_before.data().len() != c_after.data().len() {
        return Err("c_before and c_after have different layouts".into());
    }
    let ld = c_after.ld();
    for (idx, (&x, &y)) in c_before.data().iter().zip(c_after.data()).enumerate() {
        let inside = idx / ld.max(1) < m && idx % ld.max(1) < n;
        if !inside && !same_bits(x, y) {
            return Err(format!(
                "c.data[{idx}] lies outside the {m} x {n} view (ld {ld}) but changed from {x} to {y}"
            ));
        }
    }
    let (alpha, beta) = (p.alpha.to_f64(), p.beta.to_f64());
    let tol = gemm_tol::<T>(p.precision);
    // alpha == 0 or k == 0: no product is formed (C = beta C, even where
    // A B overflows). The ends of the range (docs/semantics.md): an entry
    // whose products or sums pass T's largest value may be non-finite, and
    // each product may lose T's smallest normal value to underflow.
    let product = alpha != 0.0 && k != 0;
    let (max, tiny) = trident_core::tol::range::<T>();
    let slack = if product {
        alpha.abs() * k as f64 * tiny + tiny
    } else {
        0.0
    };
    let (mut errs, mut wants) = (Vec::new(), Vec::new());
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut mag) = (0.0f64, 0.0f64);
            if product {
                for q in 0..k {
                    let x = op_get(&a, p.op_a, i, q) * op_get(&b, p.op_b, q, j);
                    s += x;
                    mag += x.abs();
                }
            }
            let cb = if p.beta != T::ZERO {
                beta * c_before.get(i, j).to_f64()
            } else {
                0.0
            };
            let want = if product { alpha * s } else { 0.0 } + cb;
            let got = c_after.get(i, j);
            if mag.max(alpha.abs() * mag).max(cb.abs()) > max {
                if got.is_finite() && !tol.accepts(want, got.to_f64()) {
                    return Err(format!(
                        "C({i}, {j}) = {got} beyond the range's reach, expected {want} or non-finite"
                    ));
                }
                continue;
            }
            if !got.is_finite() {
                return Err(format!(
                    "C({i}, {j}) = {got} is not finite (expected {want})"
                ));
            }
            errs.push(((got.to_f64() - want).abs() - slack).max(0.0));
            wants.push(want);
        }
    }
    let (err, norm) = (tol::norm2(&errs), tol::norm2(&wants));
    let mut w = Worst::new();
    w.see(ratio(err, tol.bound(norm)), || {
        format!(
            "||C - C_ref||_F = {:.3e} against ||C_ref||_F = {:.3e} ({m} x {n} x {k}, {:?})",
            err, norm, p.precision
        )
    });
    w.finish()
}

// ---------------------------------------------------------------- SparseGemm

/// Certifies `c = a * b`: the stored structure must be exactly the set of
/// `(i, j)` with at least one product `A(i,p) B(p,j)` (explicit zeros and
/// cancellation included), and each value within [`tol::spgemm`] times the sum of
/// the products' magnitudes of an f64 accumulation (exact where that sum is 0).
pub fn spgemm<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>, c: &CsrMatrix<T>) -> Certificate {
    if a.cols() != b.rows() {
        return Err(format!(
            "A is {} x {}, B is {} x {}",
            a.rows(),
            a.cols(),
            b.rows(),
            b.cols()
        ));
    }
    if (c.rows(), c.cols()) != (a.rows(), b.cols()) {
        return Err(format!(
            "C is {} x {}, expected {} x {}",
            c.rows(),
            c.cols(),
            a.rows(),
            b.cols()
        ));
    }
    let rel = tol::spgemm::<T>();
    let (max, tiny) = tol::range::<T>();
    let slack = tiny * a.cols() as f64;
    let mut w = Worst::new();
    for i in 0..a.rows() {
        // column -> (sum of products, sum of |products|)
        let mut row: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
        let (ai, av) = a.row(i);
        for (&p, &apv) in ai.iter().zip(av) {
            let (bi, bv) = b.row(p as usize);
            for (&j, &bpv) in bi.iter().zip(bv) {
                let prod = apv.to_f64() * bpv.to_f64();
                let e = row.entry(j).or_insert((0.0, 0.0));
                e.0 += prod;
                e.1 += prod.abs();
            }
        }
        let (ci, cv) = c.row(i);
        if ci.len() != row.len() || !ci.iter().zip(row.keys()).all(|(x, y)| x == y) {
            let want: Vec<u32> = row.keys().copied().collect();
            let at = ci.iter().zip(&want).position(|(x, y)| x != y);
            return Err(format!(
                "row {i}: structure differs: {} entries stored, {} expected; first difference at position {}",
                ci.len(),
                want.len(),
                at.map_or_else(|| ci.len().min(want.len()).to_string(), |p| p.to_string())
            ));
        }
        for ((&j, &(want, mag)), &got) in row.iter().zip(cv) {
            let got = got.to_f64();
            // The ends of the range (docs/semantics.md): beyond T's largest
            // value a non-finite entry is the answer of T's arithmetic.
            if mag > max && !got.is_finite() {
                continue;
            }
            w.see(ratio((got - want).abs(), rel * mag + slack), || {
                format!("C({i}, {j}) = {got:e}, expected {want:e} (sum of |products| {mag:e})")
            });
        }
    }
    w.finish()
}

// ---------------------------------------------------------------- NearestPairs

fn near_tol<T: Coord>(d: f64) -> f64 {
    Tol::nearest::<T>().bound(d)
}

/// All distances from `q` to B, sorted by `(d2, j)`.
fn brute_sorted<T: Coord>(q: &Point<T>, b: &[Point<T>]) -> Vec<(f64, u32)> {
    let mut d: Vec<(f64, u32)> = b
        .iter()
        .enumerate()
        .map(|(j, p)| (T::exact_d2(q, p), j as u32))
        .collect();
    d.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    d
}

fn brute_nearest<T: Coord>(q: &Point<T>, b: &[Point<T>]) -> (f64, u32) {
    let mut best = (f64::INFINITY, u32::MAX);
    for (j, p) in b.iter().enumerate() {
        let d = T::exact_d2(q, p);
        if d < best.0 {
            best = (d, j as u32);
        }
    }
    best
}

/// Checks one returned neighbour: index in range, its exact distance within
/// tolerance of `want`, its reported `d2` within tolerance of its exact distance.
fn check_neighbor<T: Coord>(
    w: &mut Worst,
    what: &str,
    q: &Point<T>,
    b: &[Point<T>],
    index: u32,
    d2: T,
    want: f64,
) -> Result<f64, String> {
    let Some(p) = b.get(index as usize) else {
        return Err(format!(
            "{what}: index {index} out of range for |B| = {}",
            b.len()
        ));
    };
    let exact = T::exact_d2(q, p);
    w.see(ratio((exact - want).abs(), near_tol::<T>(want)), || {
        format!("{what}: B[{index}] is at d2 = {exact:e}, the optimum is {want:e}")
    });
    w.see(
        ratio((d2.to_f64() - exact).abs(), near_tol::<T>(exact)),
        || format!("{what}: reported d2 = {d2}, exact distance to B[{index}] is {exact:e}"),
    );
    Ok(exact)
}

/// Certifies `nearest(a, b, out)` by brute force (O(|A| |B|)).
pub fn nearest<T: Coord>(a: &[Point<T>], b: &[Point<T>], out: &[Neighbor<T>]) -> Certificate {
    if out.len() != a.len() {
        return Err(format!(
            "out has {} entries for |A| = {}",
            out.len(),
            a.len()
        ));
    }
    let mut w = Worst::new();
    for (i, (q, nb)) in a.iter().zip(out).enumerate() {
        let (want, _) = brute_nearest(q, b);
        check_neighbor(&mut w, &format!("a[{i}]"), q, b, nb.index, nb.d2, want)?;
    }
    w.finish()
}

/// Certifies `knn(a, b, k, out)` by brute force: per query, k distinct
/// indices whose exact distances match the true k smallest, rank by rank.
pub fn knn<T: Coord>(a: &[Point<T>], b: &[Point<T>], k: usize, out: &[Neighbor<T>]) -> Certificate {
    if Some(out.len()) != a.len().checked_mul(k) {
        return Err(format!(
            "out has {} entries for |A| = {} and k = {k}",
            out.len(),
            a.len()
        ));
    }
    if k > b.len() {
        return Err(format!("k = {k} exceeds |B| = {}", b.len()));
    }
    let mut w = Worst::new();
    for (i, q) in a.iter().enumerate() {
        let truth = brute_sorted(q, b);
        let got = &out[i * k..(i + 1) * k];
        let mut idx: Vec<u32> = got.iter().map(|n| n.index).collect();
        idx.sort_unstable();
        if let Some(d) = idx.windows(2).find(|p| p[0] == p[1]) {
            return Err(format!("a[{i}]: B[{}] returned twice", d[0]));
        }
        for (r, nb) in got.iter().enumerate() {
            check_neighbor(
                &mut w,
                &format!("a[{i}] rank {r}"),
                q,
                b,
                nb.index,
                nb.d2,
                truth[r].0,
            )?;
        }
    }
    w.finish()
}

/// Certifies `closest_pairs(a, b, k)`: `min(k, |A|)` pairs with distinct A
/// indices, each B its A point's nearest (within tolerance), and the r-th
/// pair's distance matching the r-th smallest nearest-neighbour distance.
pub fn closest_pairs<T: Coord>(
    a: &[Point<T>],
    b: &[Point<T>],
    k: usize,
    pairs: &[Pair<T>],
) -> Certificate {
    let want_len = k.min(a.len());
    if pairs.len() != want_len {
        return Err(format!(
            "{} pairs, expected min(k, |A|) = {want_len}",
            pairs.len()
        ));
    }
    let nn: Vec<f64> = a.iter().map(|q| brute_nearest(q, b).0).collect();
    let mut sorted = nn.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    let mut seen = vec![false; a.len()];
    let mut w = Worst::new();
    for (r, p) in pairs.iter().enumerate() {
        let Some(q) = a.get(p.a as usize) else {
            return Err(format!(
                "pair {r}: a = {} out of range for |A| = {}",
                p.a,
                a.len()
            ));
        };
        if std::mem::replace(&mut seen[p.a as usize], true) {
            return Err(format!("pair {r}: a = {} appears twice", p.a));
        }
        let what = format!("pair {r} (a = {})", p.a);
        let exact = check_neighbor(&mut w, &what, q, b, p.b, p.d2, nn[p.a as usize])?;
        w.see(
            ratio((exact - sorted[r]).abs(), near_tol::<T>(sorted[r])),
            || {
                format!(
                    "{what}: d2 = {exact:e}, the rank-{r} nearest distance is {:e}",
                    sorted[r]
                )
            },
        );
    }
    w.finish()
}

/// Certifies a radius search by brute force (O(|A| |B|)): row `i` of `got`
/// must hold exactly the points of B (or, with `upper`, the points `j > i`
/// of the same set) whose exact squared distance is at most `r^2`, up to
/// the boundary band of the nearest-pairs tolerance (a pair within it of
/// `r^2` may be in or out), each once, with reported `d2` within tolerance
/// of the exact one, sorted by `(d2, j)`. `rows` lists the rows to check
/// (all of them on small cases, a sample on large ones).
pub fn within<T: Coord>(
    a: &[Point<T>],
    b: &[Point<T>],
    r: T,
    upper: bool,
    rows: &[usize],
    got: &RadiusNeighbors<T>,
) -> Certificate {
    if got.offsets.len() != a.len() + 1
        || got.offsets.first() != Some(&0)
        || got.offsets.windows(2).any(|w| w[0] > w[1])
        || got.offsets.last() != Some(&got.indices.len())
        || got.indices.len() != got.d2.len()
    {
        return Err(format!(
            "malformed result: {} offsets for |A| = {}, {} indices, {} distances",
            got.offsets.len(),
            a.len(),
            got.indices.len(),
            got.d2.len()
        ));
    }
    let r = r.to_f64();
    let r2 = r * r;
    let band = near_tol::<T>(r2);
    let mut w = Worst::new();
    for &i in rows {
        let (idx, d2) = got.row(i);
        let q = &a[i];
        let mut seen = std::collections::HashSet::with_capacity(idx.len());
        let mut prev: Option<(f64, T, u32)> = None;
        for (&j, &d) in idx.iter().zip(d2) {
            let Some(p) = b.get(j as usize) else {
                return Err(format!(
                    "row {i}: index {j} out of range for |B| = {}",
                    b.len()
                ));
            };
            if upper && j as usize <= i {
                return Err(format!("row {i}: j = {j} is not above the row"));
            }
            if !seen.insert(j) {
                return Err(format!("row {i}: B[{j}] returned twice"));
            }
            let exact = T::exact_d2(q, p);
            if exact > r2 + band {
                return Err(format!(
                    "row {i}: B[{j}] at d2 = {exact:e} is beyond r^2 = {r2:e}"
                ));
            }
            w.see(
                ratio((d.to_f64() - exact).abs(), near_tol::<T>(exact)),
                || format!("row {i}: reported d2 = {d}, exact distance to B[{j}] is {exact:e}"),
            );
            if let Some((pe, pd, pj)) = prev
                && (exact < pe - near_tol::<T>(pe) || (exact == pe && d == pd && j < pj))
            {
                return Err(format!(
                    "row {i}: B[{j}] comes after B[{pj}]: not sorted by (d2, j)"
                ));
            }
            prev = Some((exact, d, j));
        }
        for (j, p) in b.iter().enumerate() {
            if upper && j <= i {
                continue;
            }
            let exact = T::exact_d2(q, p);
            if exact < r2 - band && !seen.contains(&(j as u32)) {
                return Err(format!(
                    "row {i}: B[{j}] at d2 = {exact:e} <= r^2 = {r2:e} is missing"
                ));
            }
        }
    }
    w.finish()
}

// ---------------------------------------------------------------- SparseCoder

/// Tolerances of the OMP certificate: [`tol::Omp`], the contract's tie,
/// coefficient and residual figures plus the absolute floors (relative to
/// `||x||` or `||x||^2`) that keep rounding-level quantities from being judged
/// relatively. The residual's orthogonality to the selected atoms is held to
/// `coef_rel`, which is what a coefficient error of that size allows.
pub type OmpTol = tol::Omp;

/// The contract's near-tie threshold for scalar `T` (1e-4 for f32, 1e-10 for f64), for
/// [`crate::OmpStep::is_near_tie`].
pub fn omp_tie_rel<T: Scalar>() -> f64 {
    OmpTol::of::<T>().tie_rel
}

/// Least squares by SVD (a different algorithm from the reference's
/// Gram-Schmidt), with the usual pseudo-inverse cutoff for singular values,
/// then two steps of iterative refinement on the normal equations
/// (`dg = (M^T M)^-1 M^T (x - M g)`). nalgebra's SVD of a tall matrix can be
/// off by ~1e-6 relative even when it is well conditioned (measured: cond 1.6,
/// a 64 x 16 DCT sub-dictionary), which is above the contract's f64 tolerance; the
/// refinement drives `M^T r` to rounding level.
fn ls_svd(d: &OmpDict, sel: &[u32], x: &[f64]) -> Vec<f64> {
    if sel.is_empty() {
        return Vec::new();
    }
    let m = DMatrix::from_fn(d.n(), sel.len(), |i, t| d.atom(sel[t] as usize)[i]);
    let xv = DVector::from_column_slice(x);
    let svd = m.clone().svd(true, true);
    let smax = svd.singular_values.max();
    let cut = smax * d.n().max(sel.len()) as f64 * f64::EPSILON;
    // svd(true, true) computed U and V^T, the only failure of solve().
    #[allow(clippy::expect_used)]
    let mut g: DVector<f64> = svd.solve(&xv, cut).expect("U and V^T were computed");
    if let Some(chol) = (m.transpose() * &m).cholesky() {
        for _ in 0..2 {
            let r = &xv - &m * &g;
            g += chol.solve(&(m.transpose() * r));
        }
    }
    g.iter().copied().collect()
}

fn norm(v: &[f64]) -> f64 {
    dot(v, v).sqrt()
}

/// Certifies one signal's OMP answer (`atoms` in selection order, `coefs`,
/// `residual_norm2`) under `rule`, without trusting the reference: along the
/// answer's own path, each pick's `|<d_j, r>|` must be the maximum over the
/// unselected atoms up to a tie (`tie_rel`); the coefficients must be the least
/// squares fit (SVD); the residual they leave must be orthogonal to the
/// selected atoms and have the reported norm; and the stop must be justified
/// (budget reached, error target met, or residual / correlations zero to
/// within the floors) and not late (no earlier prefix already met the target).
///
/// Everything is judged on the signal scaled by [`SignalScale`] (a power of
/// two, so that `||x||^2` of a signal of `1e200` or `1e-200` is finite and
/// non-zero here as in the backends), with the answer's coefficients and
/// `||r||^2` scaled alike. The ends of `T`'s range (docs/semantics.md): a
/// coefficient may be infinite only where the least-squares value is beyond
/// (or within the coefficient tolerance of) `T`'s largest value, and then the
/// reported `||r||^2` must be `+inf`; a reported `||r||^2` may be infinite
/// where the least-squares one is, likewise; values that round into `T`'s
/// subnormals are allowed their rounding error (the least subnormal, per
/// coefficient). The reported `||r||^2` is that of the coefficients as
/// rounded to `T`, so its comparison with the least-squares one allows
/// [`tol::Omp::rounding`] on top of the residual tolerance.
pub fn omp<T: Scalar>(
    dict: &Dictionary<T>,
    x: &[T],
    rule: StopRule,
    atoms: &[u32],
    coefs: &[T],
    residual_norm2: T,
    tol: &OmpTol,
) -> Certificate {
    if x.len() != dict.n() {
        return Err(format!(
            "signal length {} for atoms of length {}",
            x.len(),
            dict.n()
        ));
    }
    if atoms.len() != coefs.len() {
        return Err(format!(
            "{} atoms but {} coefficients",
            atoms.len(),
            coefs.len()
        ));
    }
    let d = OmpDict::new(dict);
    let (n_atoms, max_atoms) = (d.atoms(), rule.max_atoms(d.n(), d.atoms()));
    if atoms.len() > max_atoms {
        return Err(format!(
            "{} atoms, the rule allows {max_atoms}",
            atoms.len()
        ));
    }
    let mut chosen = vec![false; n_atoms];
    for (t, &j) in atoms.iter().enumerate() {
        if j as usize >= n_atoms {
            return Err(format!(
                "step {t}: atom {j} out of range for {n_atoms} atoms"
            ));
        }
        if std::mem::replace(&mut chosen[j as usize], true) {
            return Err(format!("step {t}: atom {j} selected twice"));
        }
    }
    if coefs.iter().any(|c| c.to_f64().is_nan()) || residual_norm2.to_f64().is_nan() {
        return Err("a coefficient or the residual is NaN".into());
    }
    chosen.fill(false);
    let scale = SignalScale::of(x, OMP_WINDOW_F64);
    let xf: Vec<f64> = x.iter().map(|v| scale.apply(v.to_f64())).collect();
    let xn = norm(&xf);
    let eps = rule.error_target().map(|e| scale.apply2(e));
    let band = |e: f64| tol.res_rel * e + tol.res_abs * xn * xn;
    let tiny = scale.apply(T::MIN_SUBNORMAL.to_f64());
    let tiny2 = scale.apply2(T::MIN_SUBNORMAL.to_f64());
    let mut w = Worst::new();

    // Walk the answer's own prefixes: S_0 = {}, S_1 = {atoms[0]}, ...
    let mut r = xf.clone();
    let mut best_remaining = 0.0;
    for t in 0..=atoms.len() {
        let r2 = dot(&r, &r);
        if t < atoms.len()
            && let Some(e) = eps
            && r2 <= e - band(e)
        {
            return Err(format!(
                "step {t}: ||r||^2 = {r2:e} already met the target {e:e}; OMP should have stopped"
            ));
        }
        let best = (0..n_atoms)
            .filter(|&j| !chosen[j])
            .map(|j| dot(d.atom(j), &r).abs())
            .fold(0.0f64, f64::max);
        if t == atoms.len() {
            best_remaining = best;
            break;
        }
        let j = atoms[t] as usize;
        let c = dot(d.atom(j), &r).abs();
        w.see(ratio(best - c, tol.tie_rel * best + tol.corr_abs * xn), || {
            format!("step {t}: picked atom {j} with |<d_j, r>| = {c:e}, the best unselected has {best:e}")
        });
        chosen[j] = true;
        let g = ls_svd(&d, &atoms[..=t], &xf);
        r = d.residual(&xf, &atoms[..=t], &g);
    }
    let r2_ls = dot(&r, &r);
    let g_ls = ls_svd(&d, atoms, &xf);
    let gn = norm(&g_ls);
    let big = T::MAX.to_f64();
    // Where T cannot hold the value: an infinite coefficient or residual is
    // the answer only when the least-squares value is beyond T's range.
    let overflows = |v: f64, rel: f64| scale.undo(v.abs() * (1.0 + rel)) >= big;
    let overflows2 = |v: f64, rel: f64| scale.undo2(v * (1.0 + rel)) >= big;
    if coefs.iter().any(|c| !c.is_finite()) {
        for (t, (c, &want)) in coefs.iter().zip(&g_ls).enumerate() {
            let c = c.to_f64();
            if !c.is_finite() && (!overflows(want, tol.coef_rel) || c.signum() != want.signum()) {
                return Err(format!(
                    "coefficient {t} is {c}, the least-squares value {:e} fits in {}",
                    scale.undo(want),
                    T::NAME
                ));
            }
        }
        if residual_norm2.to_f64() != f64::INFINITY {
            return Err(format!(
                "a coefficient is infinite but ||r||^2 = {residual_norm2}, not inf"
            ));
        }
    } else {
        // Coefficients against the least-squares fit on the same atoms.
        let g: Vec<f64> = coefs.iter().map(|v| scale.apply(v.to_f64())).collect();
        let diff: Vec<f64> = g.iter().zip(&g_ls).map(|(a, b)| a - b).collect();
        let floor = (atoms.len() as f64).sqrt() * tiny;
        w.see(ratio(norm(&diff), tol.coef_rel * gn + floor), || {
            format!("||g - g_ls|| = {:e} against ||g_ls|| = {gn:e}", norm(&diff))
        });

        // The residual the answer's own coefficients leave.
        let r_own = d.residual(&xf, atoms, &g);
        for &j in atoms {
            let c = dot(d.atom(j as usize), &r_own).abs();
            w.see(ratio(c, tol.coef_rel * xn.max(gn) + floor), || {
                format!("residual not orthogonal to selected atom {j}: |<d_j, r>| = {c:e}")
            });
        }
        let r2 = residual_norm2.to_f64();
        if r2 == f64::INFINITY {
            if !overflows2(r2_ls, tol.res_rel) {
                return Err(format!(
                    "reported ||r||^2 = inf, the least-squares residual {:e} fits in {}",
                    scale.undo2(r2_ls),
                    T::NAME
                ));
            }
        } else {
            let r2 = scale.apply2(r2);
            let rounding = tol.rounding(r2_ls, g_ls.iter().map(|v| v.abs()).sum());
            w.see(
                ratio((r2 - r2_ls).abs(), band(r2_ls) + tiny2 + rounding),
                || {
                    format!(
                        "reported ||r||^2 = {:e}, the least-squares residual has {:e}",
                        scale.undo2(r2),
                        scale.undo2(r2_ls)
                    )
                },
            );
        }
    }

    // An early stop needs a reason.
    if atoms.len() < max_atoms {
        let target_met = eps.is_some_and(|e| r2_ls <= e + band(e));
        let zero_res = r2_ls <= tol.res_abs * xn * xn;
        let zero_corr = best_remaining <= tol.corr_abs * xn;
        if !(target_met || zero_res || zero_corr) {
            return Err(format!(
                "stopped after {} of up to {max_atoms} atoms with ||r||^2 = {:e} and a remaining correlation {:e}",
                atoms.len(),
                scale.undo2(r2_ls),
                scale.undo(best_remaining)
            ));
        }
    }
    w.finish()
}

/// [`omp`] for every signal (row of `signals`) of an `encode` answer, with
/// [`OmpTol::of`]; the worst ratio over all signals. O(L T K n) plus the SVDs:
/// run it on a sample of a large batch.
pub fn omp_codes<T: Scalar>(
    dict: &Dictionary<T>,
    signals: MatRef<'_, T>,
    rule: StopRule,
    codes: &SparseCodes<T>,
) -> Certificate {
    trident_core::validate::sparse_codes(codes, signals.rows(), dict.atoms())
        .map_err(|e| e.to_string())?;
    let tol = OmpTol::of::<T>();
    let mut worst = 0.0f64;
    for i in 0..signals.rows() {
        let (atoms, coefs) = codes.signal(i);
        let r = omp(
            dict,
            signals.row(i),
            rule,
            atoms,
            coefs,
            codes.residual_norm2[i],
            &tol,
        )
        .map_err(|e| format!("signal {i}: {e}"))?;
        worst = worst.max(r);
    }
    Ok(worst)
}

// ---------------------------------------------------------------- MaxFlow

/// Certifies a network answer exactly: `arc_flow` within `[0, cap]` and
/// conserved at every node but s and t, net outflow of s equal to `flow`,
/// `source_side` containing s and not t with cut capacity equal to `flow` (so
/// flow and cut are both optimal, by weak duality), and `source_side` equal to
/// the set reachable from s in the residual graph of `arc_flow` (the canonical
/// cut: the same for every maximum flow). `Ok(0.0)` or `Err`.
pub fn network_flow(g: &FlowNetwork, r: &NetworkFlow) -> Certificate {
    let n = g.nodes();
    let arcs = g.arcs();
    if r.arc_flow.len() != arcs.len() || r.source_side.len() != n {
        return Err(format!(
            "{} arc flows and {} labels for {} arcs and {n} nodes",
            r.arc_flow.len(),
            r.source_side.len(),
            arcs.len()
        ));
    }
    let mut excess = vec![0i128; n];
    for (i, (a, &f)) in arcs.iter().zip(&r.arc_flow).enumerate() {
        if f < 0 || f > a.cap {
            return Err(format!(
                "arc {i} ({} -> {}): flow {f} outside [0, {}]",
                a.from, a.to, a.cap
            ));
        }
        excess[a.from as usize] -= f as i128;
        excess[a.to as usize] += f as i128;
    }
    let (s, t) = (g.source() as usize, g.sink() as usize);
    if let Some(v) = (0..n).find(|&v| v != s && v != t && excess[v] != 0) {
        return Err(format!(
            "node {v}: flow not conserved (excess {})",
            excess[v]
        ));
    }
    if -excess[s] != r.flow as i128 {
        return Err(format!(
            "net outflow of s is {}, reported flow {}",
            -excess[s], r.flow
        ));
    }
    if !r.source_side[s] || r.source_side[t] {
        return Err("the cut must put s on the source side and t on the other".into());
    }
    let cut = g.cut_capacity(&r.source_side);
    if cut != r.flow {
        return Err(format!("cut capacity {cut} != flow {}", r.flow));
    }
    // Residual reachability from the answer's own flows.
    let mut out: Vec<Vec<(usize, bool)>> = vec![Vec::new(); n];
    for (i, a) in arcs.iter().enumerate() {
        out[a.from as usize].push((i, true));
        out[a.to as usize].push((i, false));
    }
    let mut seen = vec![false; n];
    seen[s] = true;
    let mut stack = vec![s];
    while let Some(v) = stack.pop() {
        for &(i, fwd) in &out[v] {
            let a = arcs[i];
            let (w, res) = if fwd {
                (a.to as usize, a.cap - r.arc_flow[i])
            } else {
                (a.from as usize, r.arc_flow[i])
            };
            if res > 0 && !seen[w] {
                seen[w] = true;
                stack.push(w);
            }
        }
    }
    labels_match(&seen, &r.source_side)
}

/// The returned labels must be exactly the set reachable from s (`seen`).
fn labels_match(seen: &[bool], labels: &[bool]) -> Certificate {
    match (0..seen.len()).find(|&v| seen[v] != labels[v]) {
        Some(v) => Err(format!(
            "node {v}: labelled {} but {} from s in the residual graph",
            if labels[v] {
                "source side"
            } else {
                "sink side"
            },
            if seen[v] { "reachable" } else { "unreachable" }
        )),
        None => Ok(0.0),
    }
}

/// Certifies a grid answer exactly. A grid answer carries no flow, so one is
/// computed (this crate's Dinic) and then checked on the grid's own arrays,
/// not trusted: capacities and conservation, value == `r.flow` ==
/// `cut_capacity(r.source_side)`, and `r.source_side` == the nodes reachable
/// from s in that flow's residual graph (t unreachable). `Ok(0.0)` or `Err`.
pub fn grid_cut(g: &GridGraph, r: &GridCut) -> Certificate {
    let n = g.nodes();
    if r.source_side.len() != n {
        return Err(format!("{} labels for {n} nodes", r.source_side.len()));
    }
    let f = grid_flows(g);
    let dirs = g.dirs();
    let mut excess = vec![0i128; n];
    let mut value = 0i128;
    for v in 0..n {
        for (what, fl, cap) in [
            ("source", f.source[v], g.source()[v]),
            ("sink", f.sink[v], g.sink()[v]),
        ] {
            if fl < 0 || fl > cap {
                return Err(format!(
                    "certificate flow: {what}[{v}] = {fl} outside [0, {cap}]"
                ));
            }
        }
        excess[v] += f.source[v] as i128 - f.sink[v] as i128;
        value += f.source[v] as i128;
    }
    for &dir in dirs {
        for v in 0..n {
            let idx = dir as usize * n + v;
            let (fl, cap) = (f.caps[idx], g.caps()[idx]);
            if fl < 0 || fl > cap {
                return Err(format!(
                    "certificate flow: caps[{idx}] = {fl} outside [0, {cap}]"
                ));
            }
            if fl > 0 {
                // GridGraph rejects positive capacities pointing off the grid.
                #[allow(clippy::expect_used)]
                let u = g
                    .neighbor(v, dir)
                    .expect("positive capacity has a neighbour");
                excess[v] -= fl as i128;
                excess[u] += fl as i128;
            }
        }
    }
    if let Some(v) = (0..n).find(|&v| excess[v] != 0) {
        return Err(format!("certificate flow not conserved at node {v}"));
    }
    if value != r.flow as i128 {
        return Err(format!("max flow is {value}, reported {}", r.flow));
    }
    let cut = g.cut_capacity(&r.source_side);
    if cut != r.flow {
        return Err(format!("cut capacity {cut} != flow {}", r.flow));
    }
    // Residual BFS on the grid arrays: s -> v while source arc unsaturated;
    // v -> u over v -> u's leftover plus u -> v's flow (cancellable).
    let mut seen = vec![false; n];
    let mut stack: Vec<usize> = (0..n).filter(|&v| f.source[v] < g.source()[v]).collect();
    for &v in &stack {
        seen[v] = true;
    }
    while let Some(v) = stack.pop() {
        if f.sink[v] < g.sink()[v] {
            return Err(format!(
                "t is reachable through node {v}: the flow is not maximum"
            ));
        }
        for &dir in dirs {
            let Some(u) = g.neighbor(v, dir) else {
                continue;
            };
            let fwd = dir as usize * n + v;
            let back = dir.opposite() as usize * n + u;
            let res = (g.caps()[fwd] - f.caps[fwd]) + f.caps[back];
            if res > 0 && !seen[u] {
                seen[u] = true;
                stack.push(u);
            }
        }
    }
    labels_match(&seen, &r.source_side)
}
