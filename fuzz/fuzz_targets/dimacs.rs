//! Fuzzes the DIMACS max-flow reader: any bytes give a network or an error,
//! never a panic or an abort; a network it returns is solved by the reference
//! backend (or refused with a typed error, e.g. too many declared nodes for
//! this machine's memory).
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_core::{FlowNetwork, MaxFlow};
use trident_reference::ReferenceBackend;

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = FlowNetwork::read_dimacs(data) {
        // Small networks are solved; large declared node counts only read
        // (solving them would really allocate on a big machine).
        if g.nodes() <= 1 << 16 && g.arcs().len() <= 1 << 12 {
            let _ = ReferenceBackend.network_flow(&g);
        }
    }
});
