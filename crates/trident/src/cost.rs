//! Per-call choice between a GPU backend and the CPU: below a crossover size
//! a call is faster on rayon (the GPU's launches, synchronisations and bus
//! transfers cost more than the work), above it on the GPU.
//!
//! The model is one crossover size per primitive, in a unit that is cheap to
//! compute from the call's arguments (no pass over the data): `m*n*k` for
//! GEMM, `nnz(A) + nnz(B)` for SpGEMM, `|A| + |B|` points for nearest pairs,
//! `n * atoms * signals` for OMP, nodes for max-flow. Crossovers are keyed by
//! the GPU backend's [`BackendKind`] and the primitive, so each GPU backend
//! has its own (a new one gets them with [`CostModel::with_crossover`] or a
//! row in the built-in table); a backend or primitive without one keeps the
//! preference order.
//!
//! The constants are the crossovers `host_bench` measured on the H100
//! machine (NVIDIA H100 80GB HBM3, 16 CPU cores for rayon; SpGEMM re-measured
//! later; BENCHMARKS.md, host calls): its
//! sweep times rayon against CUDA
//! host-to-host over growing sizes of each primitive. Another machine has
//! other crossovers: [`CostModel::with_crossover`] sets them, and
//! `host_bench` prints them.

use std::fmt;

use trident_core::{BackendKind, Primitive};

/// What a call's size is measured in, per primitive.
pub const WORK_UNITS: [(Primitive, &str); 5] = [
    (Primitive::DenseGemm, "m*n*k"),
    (Primitive::SparseGemm, "nnz(A)+nnz(B)"),
    (Primitive::NearestPairs, "|A|+|B|"),
    (Primitive::SparseCoder, "n*atoms*signals"),
    (Primitive::MaxFlow, "nodes"),
];

fn unit(p: Primitive) -> &'static str {
    WORK_UNITS
        .iter()
        .find(|(q, _)| *q == p)
        .map_or("work", |(_, u)| u)
}

/// Crossover sizes between a GPU backend and rayon: a call of a primitive
/// whose work is below the crossover of the backend first in the chain goes
/// to rayon first.
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    /// `(GPU backend, primitive, crossover work)`.
    crossovers: Vec<(BackendKind, Primitive, f64)>,
}

/// Crossovers measured on the H100 machine (see the module docs), each the
/// geometric midpoint of the last size rayon won and the first CUDA won
/// (`host_bench`'s sweeps and cases, BENCHMARKS.md): GEMM 192^3 (rayon
/// 0.12 ms, CUDA 0.20) to 256^3 (0.25, 0.20); SpGEMM of 2D
/// Laplacians 1.0e4 (rayon 0.32, CUDA 0.37) to 2.0e4 nnz (0.53-0.56,
/// 0.41-0.42; every call after a pause), after which CUDA won every
/// size of the sweep up to 4.1e6 (rayon had won 2.5e5-4e6 before the host
/// path moved all arrays of a call in one staged copy); nearest pairs 2K
/// (0.43, 1.87) to 8K points (1.05, 0.83).
///
/// Max-flow has no finite crossover: in `host_bench`'s sweep rayon won every grid of the
/// sweep (cut-32 0.04 against 0.67 ms up to cut-2048 21.7 against 59.2 ms,
/// and the 3-D grids) and flow-rmf (199 against 275 ms), the grids'
/// capacities costing more on the bus than rayon's whole solve. So it
/// always goes to rayon first. Batch-OMP has none either, the other way:
/// CUDA won every size (1K signals 0.40 against 1.28 ms), so it keeps the
/// preference order.
///
/// The wgpu backend has no row yet: it was not swept against rayon, so it
/// keeps the preference order until `host_bench` measures it.
const MEASURED: [(BackendKind, Primitive, f64); 4] = [
    (BackendKind::Cuda, Primitive::DenseGemm, 1.09e7),
    (BackendKind::Cuda, Primitive::SparseGemm, 1.4e4),
    (BackendKind::Cuda, Primitive::NearestPairs, 4.0e3),
    (BackendKind::Cuda, Primitive::MaxFlow, f64::INFINITY),
];

/// The backend a call below a crossover goes to.
const CPU: BackendKind = BackendKind::Rayon;

impl Default for CostModel {
    /// The built-in crossovers (measured on the H100 machine, see the module docs).
    fn default() -> Self {
        Self {
            crossovers: MEASURED.to_vec(),
        }
    }
}

impl CostModel {
    /// No crossover at all: every call follows the chain's preference order.
    pub fn preference_only() -> Self {
        Self {
            crossovers: Vec::new(),
        }
    }

    /// The same model with `backend`'s crossover for `primitive` set to `work`.
    pub fn with_crossover(mut self, backend: BackendKind, primitive: Primitive, work: f64) -> Self {
        self.crossovers
            .retain(|(b, p, _)| !(*b == backend && *p == primitive));
        self.crossovers.push((backend, primitive, work));
        self
    }

    /// `backend`'s crossover for `primitive`, if one is set.
    pub fn crossover(&self, backend: BackendKind, primitive: Primitive) -> Option<f64> {
        self.crossovers
            .iter()
            .find(|&&(b, p, _)| b == backend && p == primitive)
            .map(|&(_, _, w)| w)
    }

    /// Index in `chain` (backend names in preference order, as
    /// [`trident_core::Backend::name`] gives them) of the backend to offer a
    /// call of `primitive` with `work` to first: rayon when the head of the
    /// chain has a crossover for `primitive` above `work`, else the head.
    pub fn first(&self, primitive: Primitive, work: f64, chain: &[&str]) -> usize {
        let Some(head) = chain.first().and_then(|&n| BackendKind::from_name(n)) else {
            return 0;
        };
        let below = self.crossover(head, primitive).is_some_and(|w| work < w);
        match chain.iter().position(|&n| n == CPU.name()) {
            Some(r) if below => r,
            _ => 0,
        }
    }

    /// One line listing the crossovers.
    pub fn describe(&self) -> String {
        if self.crossovers.is_empty() {
            return "preference order (no crossover set)".into();
        }
        let parts: Vec<String> = self
            .crossovers
            .iter()
            .map(|&(b, p, w)| {
                if w.is_infinite() {
                    format!("{p} always (never faster on {b})")
                } else {
                    format!("{p} on {b} from {} = {w:.2e}", unit(p))
                }
            })
            .collect();
        format!("{} below the crossover: {}", CPU.name(), parts.join(", "))
    }
}

/// Which backend served a call of a [`crate::Trident`], and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The primitive called.
    pub primitive: Primitive,
    /// The backend that served it.
    pub backend: &'static str,
    /// The call's size in the model's unit for the primitive.
    pub work: f64,
    /// The backend the model offered the call to first.
    pub preferred: &'static str,
    /// The crossover of the chain's head for this primitive, if it has one:
    /// `(GPU backend, work)`.
    pub crossover: Option<(&'static str, f64)>,
    /// `true` when `TRIDENT_BACKEND` chose.
    pub forced: bool,
    /// Backends that answered `Unsupported` before it, with their reasons.
    pub skipped: Vec<(&'static str, String)>,
}

impl Choice {
    /// Why this backend served the call, in words.
    pub fn reason(&self) -> String {
        let u = unit(self.primitive);
        let mut s = if self.forced {
            format!("forced by {}", crate::BACKEND_ENV)
        } else {
            match self.crossover {
                Some((gpu, c)) if self.preferred == CPU.name() && c.is_infinite() => {
                    format!("{gpu} is never faster for {} (measured)", self.primitive)
                }
                Some((gpu, c)) if self.preferred == CPU.name() => {
                    format!("{u} = {:.2e} < {gpu} crossover {c:.2e}", self.work)
                }
                Some((gpu, c)) if self.preferred == gpu => {
                    format!("{u} = {:.2e} >= {gpu} crossover {c:.2e}", self.work)
                }
                _ => "preference order (no crossover for this primitive)".into(),
            }
        };
        for (b, why) in &self.skipped {
            s.push_str(&format!("; {b} unsupported: {why}"));
        }
        s
    }
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} served by {} ({})",
            self.primitive,
            self.backend,
            self.reason()
        )
    }
}
