//! SparseCoder for [`WgpuBackend`]: not implemented yet.

use trident_core::Error;
use trident_core::{Dictionary, MatRef, Result, Scalar, SparseCoder, SparseCodes, StopRule};

use crate::WgpuBackend;

impl<T: Scalar> SparseCoder<T> for WgpuBackend {
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        let _ = (dict, signals, rule);
        Err(Error::Unsupported(
            "SparseCoder is not implemented on the wgpu backend yet".into(),
        ))
    }
}
