//! Comparing a backend's output with the reference's, under the contract's tolerances.
//!
//! The flow is: [`expected`] asks the reference for the answer to an
//! [`Input`] once (in f64 where the primitive has a scalar: f32 inputs are
//! widened, so f32 backends are judged against an f64 reference), [`produce`]
//! runs the backend under test, and [`compare`] returns a [`Verdict`]: the worst
//! error as a multiple of its tolerance (`ratio`, passing is `<= 1`) and the
//! problems found. Outputs are re-validated structurally (CSR via
//! [`CsrMatrix::new`](trident_core::CsrMatrix::new), codes via [`trident_core::validate::sparse_codes`]),
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
use trident_core::{Error, Precision, Primitives, Result, Scalar};

/// The GEMM tolerance for scalar `T` at `precision` ([`tol::gemm`]).
pub fn gemm_tol<T: Scalar>(precision: Precision) -> Tol {
    tol::gemm::<T>(precision)
}

use crate::cases::Input;

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

pub use crate::problem::{Expected, Produced};

/// Runs `backend` on `input` (the part worth timing): [`Input::produce`],
/// which the input's primitive implements ([`crate::problem::Problem`]).
pub fn produce(backend: &dyn Primitives, input: &Input) -> Result<Produced> {
    input.produce(backend)
}

/// The reference's answer to `input`: f32 inputs are widened to f64 first, so
/// the answer is the f64 reference the contract compares against ([`Input::expected`]).
pub fn expected(reference: &dyn Primitives, input: &Input) -> Result<Expected> {
    input.expected(reference)
}

/// Compares a backend's answer with the reference's ([`Input::compare`]).
pub fn compare(input: &Input, exp: &Expected, got: &Produced) -> Verdict {
    input.compare(exp, got)
}

// The per-primitive checkers live beside their cases and conformance tests,
// in the primitive's folder; the registry gathers them and they are
// re-exported here under their old paths.
pub use crate::registry::checkers::*;

/// `true` for [`Error::Unsupported`]: the backend does not do this; reported
/// as skipped/unsupported, never as a pass.
pub fn is_unsupported(e: &Error) -> bool {
    matches!(e, Error::Unsupported(_))
}
