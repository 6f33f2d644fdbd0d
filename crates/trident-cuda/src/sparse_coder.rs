//! SparseCoder for [`CudaBackend`]: not implemented yet.

use trident_core::Error;
use trident_core::{Dictionary, MatRef, Result, Scalar, SparseCoder, SparseCodes, StopRule};

use crate::CudaBackend;

impl<T: Scalar> SparseCoder<T> for CudaBackend {
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        let _ = (dict, signals, rule);
        Err(Error::Unsupported(
            "SparseCoder is not implemented on this backend yet".into(),
        ))
    }
}
