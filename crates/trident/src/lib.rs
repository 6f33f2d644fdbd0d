//! # trident
//!
//! Fast parallel primitives with one API and several backends. This is the crate
//! to depend on: it re-exports the types and traits of `trident-core`, the
//! backends enabled by features, and [`Trident`], a handle that picks the best
//! backend available on the machine at run time.
//!
//! | feature | backend | needs |
//! | --- | --- | --- |
//! | `rayon` (default) | [`RayonBackend`]: CPU, all cores | nothing |
//! | `cuda` | `CudaBackend`: NVIDIA GPUs, kernels compiled by NVRTC | a CUDA driver at run time (none at build time) |
//! | `wgpu` | `WgpuBackend`: Vulkan/Metal/DX12 | an adapter at run time |
//!
//! The [`ReferenceBackend`] (f64 inside, single thread) is always there: it defines
//! what "correct" means and is the last resort.
//!
//! ```
//! use trident::{CsrMatrix, SparseGemm, Trident};
//!
//! let t = Trident::new()?; // cuda, then wgpu, then rayon, then reference
//! println!("{}", t.report());
//! let a = CsrMatrix::from_triplets(2, 2, &[(0, 0, 1.0f32), (0, 1, 2.0), (1, 1, 3.0)])?;
//! let c = t.spgemm(&a, &a)?; // [[1, 8], [0, 9]]
//! assert_eq!(c.values(), &[1.0, 8.0, 9.0]);
//! # Ok::<(), trident::Error>(())
//! ```
#![warn(missing_docs)]
// Library code returns errors; it never unwraps (issue 12). The few justified
// exceptions carry an `allow` and a comment saying why they cannot fail.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod pick;
mod serving;

/// The README's examples, compiled and run as doctests so they stay true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub use pick::{BACKEND_ENV, Candidate, PREFERENCE, Serving, Trident};
pub use trident_core::*;
pub use trident_reference::ReferenceBackend;

#[cfg(feature = "cuda")]
pub use trident_cuda::CudaBackend;
#[cfg(feature = "rayon")]
pub use trident_rayon::RayonBackend;
#[cfg(feature = "wgpu")]
pub use trident_wgpu::WgpuBackend;

/// Constructs the backend called `name` if it is compiled in and can run here.
///
/// Names: `"cuda"`, `"wgpu"`, `"rayon"`, `"reference"`. A name whose feature is
/// off gives [`Error::BackendUnavailable`] saying which feature enables it.
pub fn backend_by_name(name: &str) -> Result<Box<dyn Primitives>> {
    match name {
        "reference" => Ok(Box::new(ReferenceBackend::new()?)),
        #[cfg(feature = "rayon")]
        "rayon" => Ok(Box::new(RayonBackend::new()?)),
        #[cfg(feature = "cuda")]
        "cuda" => Ok(Box::new(CudaBackend::new(0)?)),
        #[cfg(feature = "wgpu")]
        "wgpu" => Ok(Box::new(WgpuBackend::new()?)),
        // Reached only for names whose feature is off in this build.
        #[allow(unreachable_patterns)]
        "rayon" | "cuda" | "wgpu" => Err(Error::BackendUnavailable(format!(
            "the `{name}` backend is not compiled in: enable the `{name}` feature of the `trident` crate"
        ))),
        other => Err(Error::arg(
            "backend",
            format!("unknown backend {other:?}; expected one of {PREFERENCE:?}"),
        )),
    }
}

/// Names of the backends compiled into this build, in preference order.
pub fn compiled_backends() -> Vec<&'static str> {
    PREFERENCE
        .iter()
        .copied()
        .filter(|&n| match n {
            "cuda" => cfg!(feature = "cuda"),
            "wgpu" => cfg!(feature = "wgpu"),
            "rayon" => cfg!(feature = "rayon"),
            _ => true,
        })
        .collect()
}
