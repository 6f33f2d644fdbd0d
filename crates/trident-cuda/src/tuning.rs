//! Tuning of a [`CudaBackend`] handle, fixed when the handle is made
//! ([`CudaBackend::with_tuning`], [`CudaBackend::tuned`]) instead of set on
//! a handle other threads share. Every field's default is the automatic
//! choice; answers do not depend on tuning (a forced GEMM shape changes only
//! the rounding order, which is fixed per shape).

use crate::CudaBackend;
use crate::dense_gemm::GemmTile;
use crate::max_flow::{
    DEFAULT_FLOW_BUDGET, DEFAULT_NETWORK_RELABEL_PERIOD, DEFAULT_RELABEL_PERIOD,
};
use crate::nearest_pairs::DEFAULT_CELL_TARGET;
use crate::sparse_gemm::DENSE_WIN_MAX;

/// Per-handle tuning of the CUDA backend; [`Default`] is automatic
/// throughout (in the style of faer's `*Params` with `Auto` defaults).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tuning {
    /// The GEMM kernel shape ([`GemmTile::Auto`]: picked from the problem
    /// size). A shape serves only the calls it fits; the others keep the
    /// automatic choice.
    pub gemm_tile: GemmTile,
    /// Points per NearestPairs grid cell aimed at (`None`, or a value that is
    /// not finite and positive: [`DEFAULT_CELL_TARGET`]).
    pub cell_target: Option<f32>,
    /// Widest column window of SpGEMM's dense accumulator; rows of wider span
    /// are computed window by window (`None`: 2^24). Rounded up to a
    /// multiple of 256 and clamped to `[256, 2^24]`.
    pub spgemm_window: Option<u64>,
    /// Push-relabel iterations between global relabels on grids (`None` or
    /// 0: [`DEFAULT_RELABEL_PERIOD`]).
    pub flow_relabel_period: Option<u32>,
    /// Push-relabel iterations between global relabels on networks (`None`
    /// or 0: [`DEFAULT_NETWORK_RELABEL_PERIOD`]).
    pub network_relabel_period: Option<u32>,
    /// Kernel launches one max-flow solve may queue before the host finishes
    /// it (`None` or 0: [`DEFAULT_FLOW_BUDGET`]). Tests make small graphs
    /// take the host path with it.
    pub flow_budget: Option<u64>,
    /// Device bytes a chunked host call may take for its buffers (`None` or
    /// 0: 80% of the memory free at the call). A call that needs more runs
    /// in more, smaller chunks; tests make small calls chunk with it.
    pub memory_budget: Option<u64>,
}

impl Tuning {
    pub(crate) fn cell_target(&self) -> f32 {
        self.cell_target
            .filter(|t| t.is_finite() && *t > 0.0)
            .unwrap_or(DEFAULT_CELL_TARGET)
    }

    pub(crate) fn spgemm_window(&self) -> u64 {
        self.spgemm_window.map_or(DENSE_WIN_MAX, |cols| {
            cols.clamp(256, DENSE_WIN_MAX).div_ceil(256) * 256
        })
    }

    pub(crate) fn flow_relabel_period(&self) -> u32 {
        nonzero(self.flow_relabel_period).unwrap_or(DEFAULT_RELABEL_PERIOD)
    }

    pub(crate) fn network_relabel_period(&self) -> u32 {
        nonzero(self.network_relabel_period).unwrap_or(DEFAULT_NETWORK_RELABEL_PERIOD)
    }

    pub(crate) fn flow_budget(&self) -> u64 {
        nonzero(self.flow_budget).unwrap_or(DEFAULT_FLOW_BUDGET)
    }

    pub(crate) fn memory_budget(&self) -> Option<u64> {
        nonzero(self.memory_budget)
    }
}

fn nonzero<T: PartialEq + Default>(v: Option<T>) -> Option<T> {
    v.filter(|v| *v != T::default())
}

impl CudaBackend {
    /// Opens device `ordinal` ([`CudaBackend::new`]) with `tuning`.
    pub fn with_tuning(ordinal: usize, tuning: Tuning) -> trident_core::Result<Self> {
        Ok(Self::new(ordinal)?.tuned(tuning))
    }

    /// A handle on the same device, stream, kernel modules and staging pool
    /// with `tuning` instead of this handle's: work of both handles runs in
    /// one order, and this handle is left as it was.
    pub fn tuned(&self, tuning: Tuning) -> Self {
        Self {
            ctx: self.ctx.clone(),
            stream: self.stream.clone(),
            name: self.name.clone(),
            cc: self.cc,
            sm_count: self.sm_count,
            max_smem_optin: self.max_smem_optin,
            l2_bytes: self.l2_bytes,
            modules: self.modules.clone(),
            staging: self.staging.clone(),
            tuning,
        }
    }

    /// This handle's tuning.
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_out_of_range_values_are_automatic() {
        let auto = Tuning::default();
        assert_eq!(auto.cell_target(), DEFAULT_CELL_TARGET);
        assert_eq!(auto.spgemm_window(), DENSE_WIN_MAX);
        assert_eq!(auto.flow_relabel_period(), DEFAULT_RELABEL_PERIOD);
        assert_eq!(
            auto.network_relabel_period(),
            DEFAULT_NETWORK_RELABEL_PERIOD
        );
        assert_eq!(auto.flow_budget(), DEFAULT_FLOW_BUDGET);
        assert_eq!(auto.memory_budget(), None);
        assert_eq!(
            Tuning {
                memory_budget: Some(0),
                ..auto
            }
            .memory_budget(),
            None
        );
        let odd = Tuning {
            cell_target: Some(f32::NAN),
            spgemm_window: Some(300),
            flow_relabel_period: Some(0),
            network_relabel_period: Some(3),
            flow_budget: Some(0),
            ..auto
        };
        assert_eq!(odd.cell_target(), DEFAULT_CELL_TARGET);
        assert_eq!(odd.spgemm_window(), 512);
        assert_eq!(
            Tuning {
                spgemm_window: Some(1),
                ..auto
            }
            .spgemm_window(),
            256
        );
        assert_eq!(odd.flow_relabel_period(), DEFAULT_RELABEL_PERIOD);
        assert_eq!(odd.network_relabel_period(), 3);
        assert_eq!(odd.flow_budget(), DEFAULT_FLOW_BUDGET);
    }
}
