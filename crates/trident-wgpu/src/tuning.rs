//! Tuning of a [`WgpuBackend`] handle, fixed when the handle is made
//! ([`WgpuBackend::tuned`]) instead of set on a handle other threads share.
//! Every field's default is the automatic choice; answers do not depend on
//! tuning (a forced GEMM tiling changes only the summation order, which is
//! fixed per tiling).

use std::sync::Arc;

use crate::WgpuBackend;
use crate::dense_gemm::GemmTile;
use crate::max_flow::FLOW_BUDGET;

/// Per-handle tuning of the wgpu backend; [`Default`] is automatic
/// throughout (in the style of faer's `*Params` with `Auto` defaults).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tuning {
    /// The k tiling of GEMM calls ([`GemmTile::Auto`]: the deepest the
    /// adapter's workgroup memory holds). A tiling the adapter cannot hold
    /// makes those calls fail with `Unsupported`.
    pub gemm_tile: GemmTile,
    /// Dispatches one max-flow solve may queue before the host finishes it
    /// (`None` or 0: 65,536). Tests make small graphs take the host path
    /// with it.
    pub flow_budget: Option<u64>,
}

impl Tuning {
    pub(crate) fn flow_budget(&self) -> u64 {
        self.flow_budget.filter(|&b| b != 0).unwrap_or(FLOW_BUDGET)
    }
}

impl WgpuBackend {
    /// A handle on the same device, queue, pipelines, buffer pool and kernel
    /// profile with `tuning` instead of this handle's; this handle is left as
    /// it was.
    pub fn tuned(&self, tuning: Tuning) -> Self {
        Self {
            ctx: Arc::clone(&self.ctx),
            cache: Arc::clone(&self.cache),
            profile: Arc::clone(&self.profile),
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
    fn an_unset_or_zero_budget_is_the_default() {
        assert_eq!(Tuning::default().flow_budget(), FLOW_BUDGET);
        let zero = Tuning {
            flow_budget: Some(0),
            ..Tuning::default()
        };
        assert_eq!(zero.flow_budget(), FLOW_BUDGET);
        let five = Tuning {
            flow_budget: Some(5),
            ..Tuning::default()
        };
        assert_eq!(five.flow_budget(), 5);
    }
}
