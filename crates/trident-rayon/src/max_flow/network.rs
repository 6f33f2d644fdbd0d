//! Max flow on general networks: not implemented on this backend yet; the
//! facade serves such calls from the next backend.

use trident_core::{Error, FlowNetwork, NetworkFlow, Result};

pub(crate) fn solve(_g: &FlowNetwork) -> Result<NetworkFlow> {
    Err(Error::Unsupported(
        "FlowNetwork max flow is not implemented on the rayon backend yet".into(),
    ))
}
