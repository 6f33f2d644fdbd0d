//! Per-call choice between a GPU backend and the CPU: below a crossover size
//! a call is faster on rayon (the GPU's launches, synchronisations and bus
//! transfers cost more than the work), above it on the GPU.
//!
//! The model is one crossover size per primitive, in a unit that is cheap to
//! compute from the call's arguments (no pass over the data): `m*n*k` for
//! GEMM, `nnz(A) + nnz(B)` for SpGEMM, `|A| + |B|` points for nearest pairs,
//! `n * atoms * signals` for OMP, nodes for grid cuts (a max-flow network
//! counts as no work: it always goes to the CPU first). Crossovers are keyed by
//! the GPU backend's [`BackendKind`] and the primitive, so each GPU backend
//! has its own (a new one gets them with [`CostModel::with_crossover`] or a
//! row in the built-in table); a backend or primitive without one keeps the
//! preference order.
//!
//! The constants are the crossovers `host_bench` measured on the H200
//! machine (NVIDIA H200, 16 CPU cores for rayon; BENCHMARKS.md, host
//! calls), after the host calls became pipelines: its sweep times rayon
//! against CUDA host-to-host over growing sizes of each primitive. Another machine has
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
    (Primitive::MaxFlow, "grid nodes (networks: 0)"),
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

/// Crossovers measured on the H200 machine (see the module docs), each the
/// geometric midpoint of the last size rayon won and the first CUDA won
/// (`host_bench --no-cold`). GEMM 128^3 (rayon 0.087 ms, CUDA 0.148) to
/// 192^3 (0.206, 0.189), 2026-11-28. Grid cuts cut-256, 6.6e4 nodes (1.27,
/// 1.52) to cut-512, 2.6e5 (2.81, 2.41), CUDA then winning every larger 2-D
/// and 3-D grid (cut3d-256 219 against 59 ms); the sweeps of 2026-11-29,
/// after the 16-bit grid starts, put it at the same place (cut-256 1.14-1.45
/// against 1.37-1.75, cut-512 2.16-2.61 against 1.86-2.19). Nearest pairs
/// from the sweeps of 2026-11-29, after the CUDA grid build's
/// cells-per-point floor: 600 points (rayon 0.32-0.44, CUDA 0.38-0.49) to
/// 2K (0.62-0.79, 0.43-0.55), CUDA winning every larger size (256K + 256K
/// points: 15-19 against 1.3-1.7 ms). SpGEMM of 2-D Laplacians 2.4e3 nnz
/// (0.293, 0.290: a tie) to 1.0e4 (0.413, 0.325), 2026-11-28. Three later
/// sweeps on two hosts (2026-11-29) had rayon ahead on the Laplacians from 1e5
/// to 1.6e6 nnz (2.5e5: 0.79-0.85 against 1.09-1.13 ms), but the row stays:
/// a crossover at 2.6e6 sent spgemm-rmat-16-8 (1e6 nnz, 122M products) to
/// rayon at 87 ms against CUDA's 39. `nnz(A) + nnz(B)` does not see a
/// power-law product; the Laplacians' mid sizes lose up to 0.6 ms instead.
///
/// Max-flow networks count as no work, so they go to rayon first at any
/// size: CUDA lost flow-rmf (270 against 164 ms), its push-relabel paying a
/// launch per BFS level on a graph of long paths. Batch-OMP has no
/// crossover: CUDA won every size (1K signals 0.60 against 1.66 ms), so it
/// keeps the preference order.
///
/// The wgpu backend has no row yet: it was not swept against rayon, so it
/// keeps the preference order until `host_bench` measures it.
const MEASURED: [(BackendKind, Primitive, f64); 4] = [
    (BackendKind::Cuda, Primitive::DenseGemm, 3.9e6),
    (BackendKind::Cuda, Primitive::SparseGemm, 4.9e3),
    (BackendKind::Cuda, Primitive::NearestPairs, 1.1e3),
    (BackendKind::Cuda, Primitive::MaxFlow, 1.3e5),
];

/// The backend a call below a crossover goes to.
const CPU: BackendKind = BackendKind::Rayon;

impl Default for CostModel {
    /// The built-in crossovers (measured on the H200 machine, see the module docs).
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
