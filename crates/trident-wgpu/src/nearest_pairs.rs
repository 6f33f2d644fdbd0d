//! NearestPairs for [`WgpuBackend`]: not implemented yet.

use trident_core::{Error, NearestPairs, Neighbor, Pair, Point, Result};

use crate::WgpuBackend;
use crate::pipeline::Kernel;

/// Kernels of this primitive (built by `warm_up`).
pub(crate) const KERNELS: &[&Kernel] = &[];

impl NearestPairs for WgpuBackend {
    fn nearest(&self, _a: &[Point], _b: &[Point], _out: &mut [Neighbor]) -> Result<()> {
        Err(Error::Unsupported(
            "NearestPairs is not implemented on the wgpu backend yet".into(),
        ))
    }
    fn knn(&self, _a: &[Point], _b: &[Point], _k: usize, _out: &mut [Neighbor]) -> Result<()> {
        Err(Error::Unsupported(
            "NearestPairs is not implemented on the wgpu backend yet".into(),
        ))
    }
    fn closest_pairs(&self, _a: &[Point], _b: &[Point], _k: usize) -> Result<Vec<Pair>> {
        Err(Error::Unsupported(
            "NearestPairs is not implemented on the wgpu backend yet".into(),
        ))
    }
}
