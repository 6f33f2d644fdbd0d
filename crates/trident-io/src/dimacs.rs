//! DIMACS max-flow files (`c` comments, `p max N M`, `n ID s|t`, `a U V CAP`).
//!
//! The reader and writer live in `trident-core`, next to the
//! [`FlowNetwork`] they build, because the core's own tests and the test kit
//! read and write networks without depending on this crate; they are named
//! here so every format Trident reads is found in one place. Errors are
//! `trident_core::Error` (`Parse` with the 1-based line, `TooLarge`,
//! `OutOfMemory`, `Io`).
//!
//! ```
//! let g = trident_io::dimacs::read("p max 2 1\nn 1 s\nn 2 t\na 1 2 7\n".as_bytes()).unwrap();
//! let mut out = Vec::new();
//! trident_io::dimacs::write(&mut out, &g).unwrap();
//! assert_eq!(trident_io::dimacs::read(&out[..]).unwrap(), g);
//! ```

use std::io::{BufRead, Write};

pub use trident_core::FlowNetwork;

/// [`FlowNetwork::read_dimacs`].
pub fn read(input: impl BufRead) -> trident_core::Result<FlowNetwork> {
    FlowNetwork::read_dimacs(input)
}

/// [`FlowNetwork::write_dimacs`].
pub fn write(out: impl Write, g: &FlowNetwork) -> trident_core::Result<()> {
    g.write_dimacs(out)
}
