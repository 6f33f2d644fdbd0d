//! MaxFlow for [`WgpuBackend`]: not implemented yet.

use trident_core::{Error, FlowNetwork, GridCut, GridGraph, MaxFlow, NetworkFlow, Result};

use crate::WgpuBackend;

impl MaxFlow for WgpuBackend {
    fn grid_cut(&self, _g: &GridGraph) -> Result<GridCut> {
        Err(Error::Unsupported(
            "MaxFlow is not implemented on the wgpu backend yet".into(),
        ))
    }
    fn network_flow(&self, _g: &FlowNetwork) -> Result<NetworkFlow> {
        Err(Error::Unsupported(
            "MaxFlow is not implemented on the wgpu backend yet".into(),
        ))
    }
}
