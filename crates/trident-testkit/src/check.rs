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
    CsrMatrix, Dictionary, Error, GridCut, Neighbor, NetworkFlow, Pair, Precision, Primitives,
    Result, Scalar, SparseCodes,
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

pub(crate) const MAX_PROBLEMS: usize = 5;

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

pub(crate) fn run_gemm<T: Scalar, B: trident_core::DenseGemm<T> + ?Sized>(
    b: &B,
    c: &GemmCase<T>,
) -> Result<Vec<T>> {
    let mut out = c.c.clone();
    b.gemm(&c.params, c.a_ref(), c.b_ref(), c.c_mut(&mut out)?)?;
    Ok(out)
}

pub(crate) fn run_pairs(
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

pub(crate) fn abs_csr(m: &CsrMatrix<f64>) -> CsrMatrix<f64> {
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

// The per-primitive checkers live beside their cases and conformance tests
// (`crate::<primitive>::check`); they are re-exported here under their old
// paths.
pub use crate::dense_gemm::check::gemm;
pub use crate::max_flow::check::{grid_cut, network_flow};
pub use crate::nearest_pairs::check::{check_knn, check_nearest, check_pairs};
pub use crate::sparse_coder::check::{omp, omp_residual};
pub use crate::sparse_gemm::check::{revalidate_csr, spgemm};

/// `true` for [`Error::Unsupported`]: the backend does not do this; reported
/// as skipped/unsupported, never as a pass.
pub fn is_unsupported(e: &Error) -> bool {
    matches!(e, Error::Unsupported(_))
}
