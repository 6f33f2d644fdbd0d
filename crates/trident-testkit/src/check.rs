//! Comparing a backend's output with the reference's, under SPEC's tolerances.
//!
//! The flow is: [`expected`] asks the reference for the answer to an
//! [`Input`] once (in f64 where the primitive has a scalar: f32 inputs are
//! widened, so f32 backends are judged against an f64 reference), [`produce`]
//! runs the backend under test, and [`compare`] returns a [`Verdict`]: the worst
//! error as a multiple of its tolerance (`ratio`, passing is `<= 1`) and the
//! problems found. Outputs are re-validated structurally (CSR via
//! [`CsrMatrix::new`], codes via [`trident_core::validate::sparse_codes`]),
//! whatever the backend claims.
//!
//! Every comparison has the form `|x - y| <= rel * |x| + abs` with `x` the
//! reference ([`Tol`]); the numbers are `trident_core::tol`'s, listed in
//! `docs/tolerances.md`, the same the reference's certificates use. Exact ties accept any valid choice: nearest-neighbour
//! answers are judged by the distance of the returned point, not its index;
//! OMP accepts another atom at a step whose best correlations are within the
//! near-tie tolerance; max-flow labels are unique, so they must be identical.
//!
//! Choices the contract leaves open, made here:
//! - The `d2` a nearest-neighbour backend reports must match the exact distance
//!   of the index it returns within [`Tol::NEAREST`].
//! - OMP: the reported `||r||^2` must match the residual recomputed in f64 from
//!   the backend's own atoms and coefficients, and the reference's, within
//!   [`tol::OMP_RESIDUAL`] with the floor [`tol::Omp::res_abs`] times
//!   `||x||^2`. Under an error target, a path that stops one step earlier or
//!   later is accepted when the reference's residual at that point is within
//!   [`tol::OMP_RESIDUAL`] relative of the target.

use trident_core::tol;
pub use trident_core::tol::Tol;
use trident_core::{
    CsrMatrix, Dictionary, Error, FlowNetwork, GridCut, GridGraph, Neighbor, NetworkFlow, Pair,
    Point, Precision, Primitives, Result, Scalar, SparseCodes, dist2_f64,
};

/// The GEMM tolerance for scalar `T` at `precision` ([`tol::gemm`]).
pub fn gemm_tol<T: Scalar>(precision: Precision) -> Tol {
    tol::gemm::<T>(precision)
}

use crate::cases::{GemmCase, Input, OmpCase, PairsCase, SpgemmCase, convert};

/// The result of comparing one output: the worst error as a multiple of its
/// tolerance and the problems found (empty when it passes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    /// Worst `error / tolerance` seen; `<= 1` passes.
    pub ratio: f64,
    /// What is wrong, one line each (the first few; see `more`).
    pub problems: Vec<String>,
    /// Problems found beyond those listed.
    pub more: usize,
}

const MAX_PROBLEMS: usize = 5;

impl Verdict {
    /// `true` when nothing is wrong.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
    /// Records a problem.
    pub fn fail(&mut self, msg: impl Into<String>) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(msg.into());
        } else {
            self.more += 1;
        }
    }
    /// Records an error ratio; one above 1 is also a problem described by `msg`.
    pub fn ratio(&mut self, r: f64, msg: impl FnOnce() -> String) {
        if r.is_nan() || r > self.ratio {
            self.ratio = if r.is_nan() { f64::INFINITY } else { r };
        }
        if r.is_nan() || r > 1.0 {
            self.fail(msg());
        }
    }
    /// Folds another verdict in, prefixing its problems with `label`.
    pub fn merge(&mut self, label: &str, other: Verdict) {
        self.ratio = self.ratio.max(other.ratio);
        for p in other.problems {
            self.fail(format!("{label}: {p}"));
        }
        self.more += other.more;
    }
    /// The problems as one message.
    pub fn summary(&self) -> String {
        let mut s = self.problems.join("; ");
        if self.more > 0 {
            s.push_str(&format!("; and {} more", self.more));
        }
        s
    }
}

/// The reference's answer to an input.
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// The whole C buffer after the call, in f64.
    Gemm(Vec<f64>),
    /// `C = A B` in f64 and `|A| |B|` (same structure) for the error bound.
    Spgemm {
        /// The product.
        c: CsrMatrix<f64>,
        /// `sum_p |A(i,p)| |B(p,j)|` per stored entry.
        bound: CsrMatrix<f64>,
    },
    /// `nearest`, `knn` and `closest_pairs` on the same sets.
    Pairs {
        /// Nearest neighbour of each point of A.
        nearest: Vec<Neighbor>,
        /// `knn_k` nearest per point of A.
        knn: Vec<Neighbor>,
        /// The `pairs_k` closest pairs.
        pairs: Vec<Pair>,
    },
    /// Codes computed in f64.
    Omp(SparseCodes<f64>),
    /// Grid cut.
    Grid(GridCut),
    /// Network flow.
    Network(NetworkFlow),
}

/// A backend's answer to an input.
#[derive(Clone, Debug, PartialEq)]
pub enum Produced {
    /// The C buffer after the call (f32).
    Gemm32(Vec<f32>),
    /// The C buffer after the call (f64).
    Gemm64(Vec<f64>),
    /// The product (f32).
    Spgemm32(CsrMatrix<f32>),
    /// The product (f64).
    Spgemm64(CsrMatrix<f64>),
    /// `nearest`, `knn`, `closest_pairs`.
    Pairs {
        /// Nearest neighbour of each point of A.
        nearest: Vec<Neighbor>,
        /// `knn_k` nearest per point of A.
        knn: Vec<Neighbor>,
        /// The `pairs_k` closest pairs.
        pairs: Vec<Pair>,
    },
    /// Codes (f32).
    Omp32(SparseCodes<f32>),
    /// Codes (f64).
    Omp64(SparseCodes<f64>),
    /// Grid cut.
    Grid(GridCut),
    /// Network flow.
    Network(NetworkFlow),
}

fn run_gemm<T: Scalar, B: trident_core::DenseGemm<T> + ?Sized>(
    b: &B,
    c: &GemmCase<T>,
) -> Result<Vec<T>> {
    let mut out = c.c.clone();
    b.gemm(&c.params, c.a_ref(), c.b_ref(), c.c_mut(&mut out)?)?;
    Ok(out)
}

fn run_pairs(
    b: &dyn Primitives,
    c: &PairsCase,
) -> Result<(Vec<Neighbor>, Vec<Neighbor>, Vec<Pair>)> {
    let mut nearest = vec![Neighbor::default(); if c.b.is_empty() { 0 } else { c.a.len() }];
    if !c.b.is_empty() {
        b.nearest(&c.a, &c.b, &mut nearest)?;
    }
    let mut knn = vec![Neighbor::default(); c.a.len() * c.knn_k];
    b.knn(&c.a, &c.b, c.knn_k, &mut knn)?;
    let pairs = b.closest_pairs(&c.a, &c.b, c.pairs_k)?;
    Ok((nearest, knn, pairs))
}

/// Runs `backend` on `input` (the part worth timing).
pub fn produce(backend: &dyn Primitives, input: &Input) -> Result<Produced> {
    Ok(match input {
        Input::Gemm32(c) => Produced::Gemm32(run_gemm::<f32, _>(backend, c)?),
        Input::Gemm64(c) => Produced::Gemm64(run_gemm::<f64, _>(backend, c)?),
        Input::Spgemm32(c) => Produced::Spgemm32(trident_core::SparseGemm::<f32>::spgemm(
            backend, &c.a, &c.b,
        )?),
        Input::Spgemm64(c) => Produced::Spgemm64(trident_core::SparseGemm::<f64>::spgemm(
            backend, &c.a, &c.b,
        )?),
        Input::Pairs(c) => {
            let (nearest, knn, pairs) = run_pairs(backend, c)?;
            Produced::Pairs {
                nearest,
                knn,
                pairs,
            }
        }
        Input::Omp32(c) => Produced::Omp32(trident_core::SparseCoder::<f32>::encode(
            backend,
            &c.dict,
            c.signals_ref(),
            c.rule,
        )?),
        Input::Omp64(c) => Produced::Omp64(trident_core::SparseCoder::<f64>::encode(
            backend,
            &c.dict,
            c.signals_ref(),
            c.rule,
        )?),
        Input::Grid(g) => Produced::Grid(backend.grid_cut(g)?),
        Input::Network(g) => Produced::Network(backend.network_flow(g)?),
    })
}

fn abs_csr(m: &CsrMatrix<f64>) -> CsrMatrix<f64> {
    CsrMatrix::new(
        m.rows(),
        m.cols(),
        m.offsets().to_vec(),
        m.indices().to_vec(),
        m.values().iter().map(|v| v.abs()).collect(),
    )
    .expect("same structure as a valid matrix")
}

/// The same OMP case in f64 (every f32 is exact in f64).
pub fn widen_omp<T: Scalar>(c: &OmpCase<T>) -> Result<OmpCase<f64>> {
    let dict = Dictionary::new(
        c.dict.n(),
        c.dict.atoms(),
        c.dict.data().iter().map(|v| v.to_f64()).collect(),
    )?;
    Ok(OmpCase {
        dict,
        signals: c.signals.iter().map(|v| v.to_f64()).collect(),
        count: c.count,
        rule: c.rule,
    })
}

/// The reference's answer to `input`: f32 inputs are widened to f64 first, so
/// the answer is the f64 reference SPEC compares against.
pub fn expected(reference: &dyn Primitives, input: &Input) -> Result<Expected> {
    fn spg<T: Scalar>(r: &dyn Primitives, c: &SpgemmCase<T>) -> Result<Expected> {
        let (a, b) = (convert::<T, f64>(&c.a), convert::<T, f64>(&c.b));
        let prod = trident_core::SparseGemm::<f64>::spgemm(r, &a, &b)?;
        let bound = trident_core::SparseGemm::<f64>::spgemm(r, &abs_csr(&a), &abs_csr(&b))?;
        Ok(Expected::Spgemm { c: prod, bound })
    }
    fn omp<T: Scalar>(r: &dyn Primitives, c: &OmpCase<T>) -> Result<Expected> {
        let w = widen_omp(c)?;
        Ok(Expected::Omp(trident_core::SparseCoder::<f64>::encode(
            r,
            &w.dict,
            w.signals_ref(),
            w.rule,
        )?))
    }
    Ok(match input {
        Input::Gemm32(c) => Expected::Gemm(run_gemm::<f64, _>(reference, &c.widen())?),
        Input::Gemm64(c) => Expected::Gemm(run_gemm::<f64, _>(reference, c)?),
        Input::Spgemm32(c) => spg(reference, c)?,
        Input::Spgemm64(c) => spg(reference, c)?,
        Input::Pairs(c) => {
            let (nearest, knn, pairs) = run_pairs(reference, c)?;
            Expected::Pairs {
                nearest,
                knn,
                pairs,
            }
        }
        Input::Omp32(c) => omp(reference, c)?,
        Input::Omp64(c) => omp(reference, c)?,
        Input::Grid(g) => Expected::Grid(reference.grid_cut(g)?),
        Input::Network(g) => Expected::Network(reference.network_flow(g)?),
    })
}

/// Compares a backend's answer with the reference's.
pub fn compare(input: &Input, exp: &Expected, got: &Produced) -> Verdict {
    match (input, exp, got) {
        (Input::Gemm32(c), Expected::Gemm(e), Produced::Gemm32(g)) => gemm(c, e, g),
        (Input::Gemm64(c), Expected::Gemm(e), Produced::Gemm64(g)) => gemm(c, e, g),
        (Input::Spgemm32(c), Expected::Spgemm { c: e, bound }, Produced::Spgemm32(g)) => {
            spgemm(c, e, bound, g, Tol::rel(tol::SPGEMM_F32))
        }
        (Input::Spgemm64(c), Expected::Spgemm { c: e, bound }, Produced::Spgemm64(g)) => {
            spgemm(c, e, bound, g, Tol::rel(tol::SPGEMM_F64))
        }
        (
            Input::Pairs(c),
            Expected::Pairs {
                nearest: en,
                knn: ek,
                pairs: ep,
            },
            Produced::Pairs {
                nearest,
                knn,
                pairs,
            },
        ) => {
            let mut v = Verdict::default();
            if !c.b.is_empty() {
                v.merge("nearest", check_nearest(&c.a, &c.b, en, nearest));
            }
            v.merge("knn", check_knn(&c.a, &c.b, c.knn_k, ek, knn));
            v.merge(
                "closest_pairs",
                check_pairs(&c.a, &c.b, c.pairs_k, en, ep, pairs),
            );
            v
        }
        (Input::Omp32(c), Expected::Omp(e), Produced::Omp32(g)) => omp(c, e, g),
        (Input::Omp64(c), Expected::Omp(e), Produced::Omp64(g)) => omp(c, e, g),
        (Input::Grid(gr), Expected::Grid(e), Produced::Grid(g)) => grid_cut(gr, e, g),
        (Input::Network(n), Expected::Network(e), Produced::Network(g)) => network_flow(n, e, g),
        _ => {
            let mut v = Verdict::default();
            v.fail("internal: input, expected and produced answers are of different kinds");
            v
        }
    }
}

// ------------------------------------------------------------------- GEMM

/// Checks a GEMM's C buffer: the `m x n` view within [`gemm_tol`] (Frobenius,
/// relative to the reference) and the padding between rows untouched.
pub fn gemm<T: Scalar>(case: &GemmCase<T>, expected: &[f64], got: &[T]) -> Verdict {
    let mut v = Verdict::default();
    let s = case.c_shape;
    if got.len() != case.c.len() || expected.len() != case.c.len() {
        v.fail(format!(
            "C buffer has {} elements, expected {}",
            got.len(),
            case.c.len()
        ));
        return v;
    }
    let tol = gemm_tol::<T>(case.params.precision);
    let (mut err2, mut ref2) = (0.0f64, 0.0f64);
    let mut worst = (0usize, 0usize, 0.0f64);
    for i in 0..s.rows {
        for j in 0..s.cols {
            let p = i * s.ld + j;
            let (x, y) = (expected[p], got[p].to_f64());
            let e = (x - y).abs();
            let e = if e.is_nan() { f64::INFINITY } else { e };
            if e > worst.2 || (e.is_infinite() && worst.2 == 0.0) {
                worst = (i, j, e);
            }
            err2 += e * e;
            ref2 += x * x;
        }
    }
    let r = if err2 == 0.0 {
        0.0
    } else {
        err2.sqrt() / tol.bound(ref2.sqrt())
    };
    let (wi, wj, _) = worst;
    v.ratio(r, || {
        let p = wi * s.ld + wj;
        format!(
            "||C - C_ref||_F = {:.3e} exceeds {:.0e} x ||C_ref||_F = {:.3e} (worst C[{wi},{wj}] = {} vs {})",
            err2.sqrt(),
            tol.rel,
            ref2.sqrt(),
            got[p],
            expected[p]
        )
    });
    // Padding: every element outside the view must keep its bits.
    for p in 0..got.len() {
        if s.ld > 0
            && p % s.ld >= s.cols
            && got[p].to_f64().to_bits() != case.c[p].to_f64().to_bits()
        {
            v.fail(format!(
                "C padding element {p} (row {}, column {}) was written",
                p / s.ld,
                p % s.ld
            ));
            break;
        }
    }
    v
}

// ----------------------------------------------------------------- SpGEMM

/// Re-validates a backend's CSR output through [`CsrMatrix::new`] (release
/// builds of backends skip that check).
pub fn revalidate_csr<T: Scalar>(m: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
    CsrMatrix::new(
        m.rows(),
        m.cols(),
        m.offsets().to_vec(),
        m.indices().to_vec(),
        m.values().to_vec(),
    )
}

/// Checks `C = A B`: valid CSR, identical offsets and indices, each value
/// within `tol.rel * bound(i, j)` of the reference.
pub fn spgemm<T: Scalar>(
    case: &SpgemmCase<T>,
    expected: &CsrMatrix<f64>,
    bound: &CsrMatrix<f64>,
    got: &CsrMatrix<T>,
    tol: Tol,
) -> Verdict {
    let mut v = Verdict::default();
    if let Err(e) = revalidate_csr(got) {
        v.fail(format!("output is not valid CSR: {e}"));
        return v;
    }
    if (got.rows(), got.cols()) != (case.a.rows(), case.b.cols()) {
        v.fail(format!(
            "C is {} x {}, expected {} x {}",
            got.rows(),
            got.cols(),
            case.a.rows(),
            case.b.cols()
        ));
        return v;
    }
    if got.offsets() != expected.offsets() {
        let i = (0..=got.rows())
            .find(|&i| got.offsets()[i] != expected.offsets()[i])
            .unwrap_or(0);
        v.fail(format!(
            "offsets differ first at row {}: row has {} entries, the reference {} (nnz {} vs {})",
            i.saturating_sub(1),
            got.offsets()[i] - got.offsets()[i.saturating_sub(1)],
            expected.offsets()[i] - expected.offsets()[i.saturating_sub(1)],
            got.nnz(),
            expected.nnz()
        ));
        return v;
    }
    if got.indices() != expected.indices() {
        let p = (0..got.nnz())
            .find(|&p| got.indices()[p] != expected.indices()[p])
            .unwrap_or(0);
        let row = got.offsets().partition_point(|&o| o <= p) - 1;
        v.fail(format!(
            "column index {p} (row {row}) is {}, the reference has {}",
            got.indices()[p],
            expected.indices()[p]
        ));
        return v;
    }
    let mut worst = (0usize, 0.0f64);
    for p in 0..got.nnz() {
        let (x, y, b) = (
            expected.values()[p],
            got.values()[p].to_f64(),
            bound.values()[p],
        );
        let (e, lim) = ((x - y).abs(), tol.rel * b);
        let r = if e == 0.0 {
            0.0
        } else if lim == 0.0 || e.is_nan() {
            f64::INFINITY
        } else {
            e / lim
        };
        if r > worst.1 || (r.is_infinite() && worst.1.is_finite()) {
            worst = (p, r);
        }
    }
    let (p, r) = worst;
    v.ratio(r, || {
        let row = got.offsets().partition_point(|&o| o <= p) - 1;
        format!(
            "C[{row},{}] = {} vs reference {} (error {:.3e}, bound {:.0e} x sum|A||B| = {:.3e})",
            got.indices()[p],
            got.values()[p],
            expected.values()[p],
            (expected.values()[p] - got.values()[p].to_f64()).abs(),
            tol.rel,
            tol.rel * bound.values()[p]
        )
    });
    v
}

// ---------------------------------------------------------- NearestPairs

fn check_neighbor(
    v: &mut Verdict,
    what: &str,
    a: &Point,
    b: &[Point],
    got: &Neighbor,
    optimum: f64,
) -> f64 {
    if got.index as usize >= b.len() {
        v.fail(format!(
            "{what}: index {} out of range for |B| = {}",
            got.index,
            b.len()
        ));
        return f64::INFINITY;
    }
    let d = dist2_f64(a, &b[got.index as usize]);
    v.ratio(Tol::NEAREST.ratio(optimum, d), || {
        format!(
            "{what}: returned B[{}] at d2 = {d} but the optimum is {optimum}",
            got.index
        )
    });
    v.ratio(Tol::NEAREST.ratio(d, got.d2 as f64), || {
        format!(
            "{what}: reported d2 = {} but B[{}] is at exactly {d}",
            got.d2, got.index
        )
    });
    d
}

/// Checks `nearest`: each returned point's exact distance within [`Tol::NEAREST`]
/// of the optimum, and the reported `d2` with it.
pub fn check_nearest(a: &[Point], b: &[Point], expected: &[Neighbor], got: &[Neighbor]) -> Verdict {
    let mut v = Verdict::default();
    if got.len() != a.len() {
        v.fail(format!("{} answers for |A| = {}", got.len(), a.len()));
        return v;
    }
    for i in 0..a.len() {
        let opt = dist2_f64(&a[i], &b[expected[i].index as usize]);
        check_neighbor(&mut v, &format!("A[{i}]"), &a[i], b, &got[i], opt);
    }
    v
}

/// Checks `knn`: per query, `k` distinct points whose exact distances match
/// the reference's sorted distances position by position.
pub fn check_knn(
    a: &[Point],
    b: &[Point],
    k: usize,
    expected: &[Neighbor],
    got: &[Neighbor],
) -> Verdict {
    let mut v = Verdict::default();
    if got.len() != a.len() * k {
        v.fail(format!(
            "{} answers for |A| * k = {} * {k}",
            got.len(),
            a.len()
        ));
        return v;
    }
    for i in 0..a.len() {
        let row = &got[i * k..(i + 1) * k];
        for t in 0..k {
            let opt = dist2_f64(&a[i], &b[expected[i * k + t].index as usize]);
            check_neighbor(
                &mut v,
                &format!("A[{i}] neighbour {t}"),
                &a[i],
                b,
                &row[t],
                opt,
            );
            if row[..t].iter().any(|n| n.index == row[t].index) {
                v.fail(format!("A[{i}]: B[{}] returned twice", row[t].index));
            }
        }
    }
    v
}

/// Checks `closest_pairs`: `min(k, |A|)` pairs of distinct A points, each
/// paired with a nearest B point (within [`Tol::NEAREST`]), distances matching the
/// reference's sorted distances position by position.
pub fn check_pairs(
    a: &[Point],
    b: &[Point],
    k: usize,
    nearest: &[Neighbor],
    expected: &[Pair],
    got: &[Pair],
) -> Verdict {
    let mut v = Verdict::default();
    let want = k.min(a.len());
    if got.len() != want {
        v.fail(format!(
            "{} pairs, expected min(k, |A|) = {want}",
            got.len()
        ));
        return v;
    }
    let mut seen = std::collections::HashSet::new();
    for (t, p) in got.iter().enumerate() {
        if p.a as usize >= a.len() {
            v.fail(format!(
                "pair {t}: a = {} out of range for |A| = {}",
                p.a,
                a.len()
            ));
            continue;
        }
        if !seen.insert(p.a) {
            v.fail(format!("pair {t}: A[{}] appears twice", p.a));
        }
        let ai = p.a as usize;
        let own_opt = dist2_f64(&a[ai], &b[nearest[ai].index as usize]);
        let n = Neighbor {
            index: p.b,
            d2: p.d2,
        };
        let d = check_neighbor(
            &mut v,
            &format!("pair {t} (A[{ai}])"),
            &a[ai],
            b,
            &n,
            own_opt,
        );
        let e = &expected[t];
        let rank_opt = dist2_f64(&a[e.a as usize], &b[e.b as usize]);
        if d.is_finite() {
            v.ratio(Tol::NEAREST.ratio(rank_opt, d), || {
                format!(
                    "pair {t}: d2 = {d}, but the {t}-th smallest nearest distance is {rank_opt}"
                )
            });
        }
    }
    v
}

// ----------------------------------------------------------------- OMP

/// The residual of `x` after the least-squares fit on the atoms `sel` of the
/// f64 dictionary `d` (row-major `n x k`), by modified Gram-Schmidt with
/// re-orthogonalisation: an independent computation, not the reference's.
pub fn omp_residual(d: &[f64], n: usize, k: usize, x: &[f64], sel: &[u32]) -> Vec<f64> {
    let mut q: Vec<Vec<f64>> = Vec::with_capacity(sel.len());
    let mut r = x.to_vec();
    for &j in sel {
        let mut u: Vec<f64> = (0..n).map(|i| d[i * k + j as usize]).collect();
        for _ in 0..2 {
            for qv in &q {
                let c: f64 = qv.iter().zip(&u).map(|(a, b)| a * b).sum();
                u.iter_mut().zip(qv).for_each(|(a, b)| *a -= c * b);
            }
        }
        let nu = u.iter().map(|a| a * a).sum::<f64>().sqrt();
        if nu <= 1e-12 {
            continue; // dependent on the atoms already chosen: adds nothing to the span
        }
        u.iter_mut().for_each(|a| *a /= nu);
        for _ in 0..2 {
            let c: f64 = u.iter().zip(&r).map(|(a, b)| a * b).sum();
            r.iter_mut().zip(&u).for_each(|(a, b)| *a -= c * b);
        }
        q.push(u);
    }
    r
}

fn norm2(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum()
}

/// Checks OMP codes against the reference's (see the module docs for the
/// tie and stopping rules).
pub fn omp<T: Scalar>(
    case: &OmpCase<T>,
    expected: &SparseCodes<f64>,
    got: &SparseCodes<T>,
) -> Verdict {
    let mut v = Verdict::default();
    let (n, k, l) = (case.dict.n(), case.dict.atoms(), case.count);
    if let Err(e) = trident_core::validate::sparse_codes(got, l, k) {
        v.fail(format!("malformed codes: {e}"));
        return v;
    }
    let t = tol::Omp::of::<T>();
    let (coef_tol, tie_tol) = (Tol::rel(t.coef_rel), Tol::rel(t.tie_rel));
    let d: Vec<f64> = case.dict.data().iter().map(|x| x.to_f64()).collect();
    let max_atoms = case.rule.max_atoms(n, k);
    for i in 0..l {
        let x: Vec<f64> = case.signal(i).iter().map(|t| t.to_f64()).collect();
        let xx = norm2(&x);
        let res_tol = t.residual(xx);
        let (ga, gc) = got.signal(i);
        let (ea, ec) = expected.signal(i);
        let reported = got.residual_norm2[i].to_f64();
        if ga.len() > max_atoms {
            v.fail(format!(
                "signal {i}: {} atoms, the stop rule allows {max_atoms}",
                ga.len()
            ));
            continue;
        }
        if let Some(p) = (1..ga.len()).find(|&p| ga[..p].contains(&ga[p])) {
            v.fail(format!(
                "signal {i}: atom {} selected twice (step {p})",
                ga[p]
            ));
            continue;
        }
        if gc.iter().any(|c| !c.is_finite()) || !reported.is_finite() {
            v.fail(format!("signal {i}: non-finite coefficient or residual"));
            continue;
        }
        // The reported residual must be the residual of the reported code.
        let mut r = x.clone();
        for (&j, &c) in ga.iter().zip(gc) {
            for t in 0..n {
                r[t] -= c.to_f64() * d[t * k + j as usize];
            }
        }
        let own = norm2(&r);
        v.ratio(res_tol.ratio(own, reported), || {
            format!("signal {i}: reported ||r||^2 = {reported:e} but its atoms and coefficients leave {own:e}")
        });
        v.ratio(res_tol.ratio(expected.residual_norm2[i], reported), || {
            format!(
                "signal {i}: ||r||^2 = {reported:e}, reference {:e}",
                expected.residual_norm2[i]
            )
        });
        let common = ga.iter().zip(ea).take_while(|(a, b)| a == b).count();
        if common == ga.len() && common == ea.len() {
            // Same path: coefficients must match.
            let diff = gc
                .iter()
                .zip(ec)
                .map(|(a, b)| (a.to_f64() - b).powi(2))
                .sum::<f64>()
                .sqrt();
            let gn = norm2(ec).sqrt();
            let rr = if diff == 0.0 {
                0.0
            } else {
                diff / coef_tol.bound(gn)
            };
            v.ratio(rr, || {
                format!(
                    "signal {i}: ||g - g_ref|| / ||g_ref|| = {:.3e} exceeds {:.0e}",
                    diff / gn,
                    coef_tol.rel
                )
            });
            continue;
        }
        if common == ga.len().min(ea.len()) {
            // One path is a prefix of the other: accepted only where the
            // stopping decision was a rounding-level call.
            let at = residual_at(&d, n, k, &x, &ea[..common]);
            let ok = match case.rule.error_target() {
                Some(eps) => {
                    Tol::rel(tol::OMP_RESIDUAL).accepts(eps, at) || res_tol.accepts(0.0, at)
                }
                None => res_tol.accepts(0.0, at),
            };
            if !ok {
                v.fail(format!(
                    "signal {i}: {} atoms, reference {} (same first {common}); residual after {common} is {at:e}, not at the stop threshold",
                    ga.len(),
                    ea.len()
                ));
            }
            continue;
        }
        // Diverged at step `common`: accepted only at a near tie.
        let rs = omp_residual(&d, n, k, &x, &ea[..common]);
        let corr: Vec<f64> = (0..k)
            .map(|j| (0..n).map(|t| d[t * k + j] * rs[t]).sum::<f64>().abs())
            .collect();
        let chosen = &ea[..common];
        let best = (0..k)
            .filter(|j| !chosen.contains(&(*j as u32)))
            .map(|j| corr[j])
            .fold(0.0, f64::max);
        let mine = corr[ga[common] as usize];
        if mine.is_nan() || mine < best - tie_tol.bound(best) || chosen.contains(&ga[common]) {
            v.fail(format!(
                "signal {i} step {common}: picked atom {} (|<d,r>| = {mine:.6e}), the reference atom {} (|<d,r>| = {:.6e}, best {best:.6e}); not a near tie",
                ga[common],
                ea[common],
                corr[ea[common] as usize]
            ));
        }
        // Past a near tie only the final residual is compared (done above).
    }
    v
}

fn residual_at(d: &[f64], n: usize, k: usize, x: &[f64], sel: &[u32]) -> f64 {
    norm2(&omp_residual(d, n, k, x, sel))
}

// ---------------------------------------------------------------- MaxFlow

fn labels(v: &mut Verdict, got: &[bool], exp: &[bool]) {
    if got.len() != exp.len() {
        v.fail(format!("{} labels for {} nodes", got.len(), exp.len()));
        return;
    }
    let diff: Vec<usize> = (0..got.len()).filter(|&i| got[i] != exp[i]).collect();
    if let Some(&first) = diff.first() {
        v.fail(format!(
            "{} labels differ from the canonical cut, first node {first} (got {}, reference {})",
            diff.len(),
            got[first],
            exp[first]
        ));
    }
}

/// Checks a grid cut: equal flow, identical labels, cut capacity == flow.
pub fn grid_cut(g: &GridGraph, expected: &GridCut, got: &GridCut) -> Verdict {
    let mut v = Verdict::default();
    if got.flow != expected.flow {
        v.fail(format!("flow {} vs reference {}", got.flow, expected.flow));
    }
    labels(&mut v, &got.source_side, &expected.source_side);
    if got.source_side.len() == g.nodes() {
        let cap = g.cut_capacity(&got.source_side);
        if cap != got.flow {
            v.fail(format!(
                "the returned cut has capacity {cap} but the flow is {}",
                got.flow
            ));
        }
    }
    if !v.passed() {
        v.ratio = f64::INFINITY;
    }
    v
}

/// Checks a network flow: equal flow, identical labels, cut capacity == flow,
/// per-arc flows within capacity, conserved, and summing to the flow at s.
pub fn network_flow(g: &FlowNetwork, expected: &NetworkFlow, got: &NetworkFlow) -> Verdict {
    let mut v = Verdict::default();
    if got.flow != expected.flow {
        v.fail(format!("flow {} vs reference {}", got.flow, expected.flow));
    }
    labels(&mut v, &got.source_side, &expected.source_side);
    if got.source_side.len() == g.nodes() {
        let cap = g.cut_capacity(&got.source_side);
        if cap != got.flow {
            v.fail(format!(
                "the returned cut has capacity {cap} but the flow is {}",
                got.flow
            ));
        }
    }
    if got.arc_flow.len() != g.arcs().len() {
        v.fail(format!(
            "{} arc flows for {} arcs",
            got.arc_flow.len(),
            g.arcs().len()
        ));
    } else {
        let mut net = vec![0i128; g.nodes()];
        for (i, (a, &f)) in g.arcs().iter().zip(&got.arc_flow).enumerate() {
            if f < 0 || f > a.cap {
                v.fail(format!(
                    "arc {i} ({} -> {}) carries {f}, capacity {}",
                    a.from, a.to, a.cap
                ));
            }
            net[a.from as usize] -= f as i128;
            net[a.to as usize] += f as i128;
        }
        let (s, t) = (g.source() as usize, g.sink() as usize);
        if let Some(u) = (0..g.nodes()).find(|&u| u != s && u != t && net[u] != 0) {
            v.fail(format!(
                "flow not conserved at node {u} (excess {})",
                net[u]
            ));
        }
        if -net[s] != got.flow as i128 {
            v.fail(format!(
                "net flow out of s is {} but the reported flow is {}",
                -net[s], got.flow
            ));
        }
    }
    if !v.passed() {
        v.ratio = f64::INFINITY;
    }
    v
}

/// `true` for [`Error::Unsupported`]: the backend does not do this; reported
/// as skipped/unsupported, never as a pass.
pub fn is_unsupported(e: &Error) -> bool {
    matches!(e, Error::Unsupported(_))
}
