//! MaxFlow for [`RayonBackend`].
//!
//! - Grids ([`GridGraph`]): Boykov-Kolmogorov on an implicit-neighbour layout
//!   ([`grid`]): one compact record per node, no adjacency lists. Residuals are
//!   stored as `i32` when every residual provably fits, else `i64`.
//! - Networks ([`FlowNetwork`]): highest-label push-relabel with global
//!   relabels and the gap heuristic on a CSR residual graph ([`network`]);
//!   BK is weak on general networks such as genrmf (that module says why).
//!
//! Both return the exact flow value and the canonical cut (the nodes reachable
//! from s in the final residual graph), so labels agree with every other
//! backend; networks also return exact per-arc flows. The searches themselves
//! are sequential (BK's trees do not split well, and on two cores the serial
//! run was the fastest we measured); the rayon pool builds the grid's node
//! array, its labels, and the networks' per-arc flows.

mod cap;
mod grid;
mod network;

use trident_core::{FlowNetwork, GridCut, GridGraph, MaxFlow, NetworkFlow, Result};

use crate::RayonBackend;

impl MaxFlow for RayonBackend {
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        // GridGraph is valid by construction (non-negative capacities whose
        // total fits i64, zero border planes): nothing left to check.
        Ok(self.install(|| {
            if g.is_3d() {
                grid::solve::<6>(g)
            } else {
                grid::solve::<4>(g)
            }
        }))
    }

    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow> {
        // FlowNetwork is valid by construction (endpoints in range, s != t,
        // capacities >= 0 with an i64 total).
        self.install(|| network::solve(g))
    }
}
