//! MaxFlow as a [`Problem`]: how the test kit runs, checks, certifies and
//! writes a [`GridGraph`] or a [`FlowNetwork`].

use std::path::Path;

use trident_core::{FlowNetwork, GridCut, GridGraph, NetworkFlow, Primitive, Primitives, Result};
use trident_reference::certify;

use crate::cases::{Input, io};
use crate::check::Verdict;
use crate::problem::{Certified, Problem};

impl Problem for GridGraph {
    type Expected = GridCut;
    type Produced = GridCut;
    fn primitive(&self) -> Primitive {
        Primitive::MaxFlow
    }
    fn describe(&self) -> String {
        let dims = if self.is_3d() { "3-D" } else { "2-D" };
        format!("grid {:?} {dims}", self.shape())
    }
    fn produce(&self, backend: &dyn Primitives) -> Result<GridCut> {
        backend.grid_cut(self)
    }
    fn expected(&self, reference: &dyn Primitives) -> Result<GridCut> {
        reference.grid_cut(self)
    }
    fn compare(&self, expected: &GridCut, got: &GridCut) -> Verdict {
        super::check::grid_cut(self, expected, got)
    }
    fn certify(&self, expected: &GridCut) -> Certified {
        certify::grid_cut(self, expected).map(|w| (w, None))
    }
    fn write(&self, path: &Path) -> Result<()> {
        io::write_grid(path, self)
    }
    #[cfg(feature = "dist")]
    fn produce_sharded(&self, sharded: &trident_dist::Sharded<'_>) -> Option<Result<GridCut>> {
        // Layers cut into slabs, discharged by region, finished exactly (the
        // sharded path with its own arithmetic; `grid_cut` is rank 0's call).
        Some(sharded.grid_cut_slabs(self, None))
    }
}

impl Problem for FlowNetwork {
    type Expected = NetworkFlow;
    type Produced = NetworkFlow;
    fn primitive(&self) -> Primitive {
        Primitive::MaxFlow
    }
    fn describe(&self) -> String {
        format!("network {} nodes {} arcs", self.nodes(), self.arcs().len())
    }
    fn produce(&self, backend: &dyn Primitives) -> Result<NetworkFlow> {
        backend.network_flow(self)
    }
    fn expected(&self, reference: &dyn Primitives) -> Result<NetworkFlow> {
        reference.network_flow(self)
    }
    fn compare(&self, expected: &NetworkFlow, got: &NetworkFlow) -> Verdict {
        super::check::network_flow(self, expected, got)
    }
    fn certify(&self, expected: &NetworkFlow) -> Certified {
        certify::network_flow(self, expected).map(|w| (w, None))
    }
    fn write(&self, path: &Path) -> Result<()> {
        io::write_network(path, self)
    }
}

impl Input {
    /// This input with its type spelled out; named like the variant of the
    /// enum `Input` once was.
    #[allow(non_snake_case)]
    pub fn Grid(g: GridGraph) -> Input {
        Input::new(g)
    }
    /// This input with its type spelled out; named like the variant of the
    /// enum `Input` once was.
    #[allow(non_snake_case)]
    pub fn Network(g: FlowNetwork) -> Input {
        Input::new(g)
    }
}
