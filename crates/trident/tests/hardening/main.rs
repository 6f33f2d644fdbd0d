//! Hardening: no panic, no abort, no hang and no silent wrong answer on any
//! input. One module per class of failure; every test runs against
//! the reference and rayon backends and the facade.
//!
//! - [`panics`]: valid input that used to panic in library code.
//! - [`alloc_limits`]: sizes that used to abort the process in an allocation.
//! - [`degenerate`]: inputs that used to hang or go quadratic.
//! - [`numeric_edges`]: extreme values that used to give a wrong answer.
//! - [`facade`]: what the facade reports and how it reads its environment.
//! - [`props`]: proptest properties over every constructor and primitive with
//!   adversarial generators, and a deterministic byte-mutation fuzz of the
//!   DIMACS reader.
//!
//! Tests never assert on wall time; the cases that used to hang are sized so
//! that a regression shows up as a test that does not finish.

mod alloc_limits;
mod degenerate;
mod facade;
mod numeric_edges;
mod panics;
mod props;

use trident::{Primitives, RayonBackend, ReferenceBackend, Trident};

/// The backends every test runs against, with a name for messages.
pub fn backends() -> Vec<(&'static str, Box<dyn Primitives>)> {
    vec![
        ("reference", Box::new(ReferenceBackend::new().unwrap())),
        ("rayon", Box::new(RayonBackend::new().unwrap())),
        ("facade", Box::new(Trident::probe())),
    ]
}

/// The CPU backends proper (the facade serves through one of them).
pub fn cpu_backends() -> Vec<(&'static str, Box<dyn Primitives>)> {
    backends()
        .into_iter()
        .filter(|(n, _)| *n != "facade")
        .collect()
}

/// Whether this machine could actually hold `bytes`: then a test of an
/// allocation limit would allocate for real, so it is skipped (and says so).
pub fn machine_could_hold(bytes: u128) -> bool {
    let fits = bytes <= trident::mem::host_memory_limit() as u128;
    if fits {
        println!("SKIPPED: this machine could hold {bytes} bytes; not allocating them in a test");
    }
    fits
}
