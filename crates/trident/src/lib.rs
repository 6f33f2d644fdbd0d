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
//! | `reference` | `ReferenceBackend`: f64 inside, single thread; defines what "correct" means, the last resort | nothing |
//!
//! Other optional features, forwarded to `trident-core`: `sprs`, `ndarray`,
//! `nalgebra`, `faer` (conversions and views in `trident::interop`) and `serde`
//! (`Serialize`/`Deserialize` on the value types).
//!
//! Published as `trident-compute`; the library is imported as `trident`.
//!
//! ```
//! use trident::{CsrMatrix, SparseGemm, Trident};
//!
//! // cuda, then wgpu (after rayon on a software adapter), then rayon, then reference
//! let t = Trident::new()?;
//! println!("{}", t.report());
//! let a = CsrMatrix::from_triplets(2, 2, &[(0, 0, 1.0f32), (0, 1, 2.0), (1, 1, 3.0)])?;
//! let c = t.spgemm(&a, &a)?; // [[1, 8], [0, 9]]
//! assert_eq!(c.values(), &[1.0, 8.0, 9.0]);
//! // Small calls may go to rayon even with a GPU (the cost model's crossovers).
//! println!("served by {}", t.served_last());
//! # Ok::<(), trident::Error>(())
//! ```
#![warn(missing_docs)]
// docs.rs builds with `--cfg docsrs` on nightly: feature-gated items then say
// which feature they need. Stable builds never see the nightly feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Library code returns errors; it never unwraps (a panic on user data is a bug; see docs/hardening.md). The few justified
// exceptions carry an `allow` and a comment saying why they cannot fail.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod cost;
mod pick;
mod serving;

/// The README's examples, compiled and run as doctests so they stay true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// What a caller of the five primitives needs, for `use trident::prelude::*`:
/// the primitive traits (their methods are how every backend and [`Trident`]
/// are called), [`Trident`], and the types those calls take and return.
///
/// Not in it, so that a glob import shadows nothing of `std` or of other
/// crates: `Error` and `Result` (name them `trident::Error`,
/// `trident::Result`), the backends (`trident::RayonBackend`, ...), the
/// device-residency traits and the interop conversions.
///
/// ```
/// use std::sync::Arc; // still std's: the prelude does not shadow it
/// use trident::prelude::*;
///
/// let t = Arc::new(Trident::new()?);
/// let a = CsrMatrix::from_triplets(2, 2, &[(0, 0, 1.0f32), (0, 1, 2.0), (1, 1, 3.0)])?;
/// assert_eq!(t.spgemm(&a, &a)?.values(), &[1.0, 8.0, 9.0]);
/// let arcs = vec![FlowArc { from: 0, to: 1, cap: 4 }, FlowArc { from: 1, to: 2, cap: 3 }];
/// assert_eq!(t.network_flow(&FlowNetwork::new(3, 0, 2, arcs)?)?.flow, 3);
/// println!("served by {}", t.served_last());
/// # Ok::<(), trident::Error>(())
/// ```
pub mod prelude {
    pub use crate::Trident;
    pub use trident_core::{
        Backend, CsrMatrix, DenseGemm, Dictionary, Dir, FlowArc, FlowNetwork, GemmParams, GridCut,
        GridGraph, MatMut, MatRef, MaxFlow, NearestPairs, Neighbor, NetworkFlow, Op, Pair, Point,
        Precision, Primitives, RadiusNeighbors, SparseCoder, SparseCodes, SparseGemm, StopRule,
    };
}

pub use cost::WORK_UNITS;
pub use pick::{BACKEND_ENV, Candidate, Choice, CostModel, PREFERENCE, Serving, Trident};
pub use trident_core::*;
/// One call across several GPUs and machines (feature `dist`; `mpi` and
/// `nccl` bring the transports): the `trident-dist` crate.
#[cfg(feature = "dist")]
pub use trident_dist as dist;
#[cfg(feature = "reference")]
#[cfg_attr(docsrs, doc(cfg(feature = "reference")))]
pub use trident_reference::ReferenceBackend;

#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use trident_cuda::CudaBackend;
#[cfg(feature = "rayon")]
#[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
pub use trident_rayon::RayonBackend;
#[cfg(feature = "wgpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "wgpu")))]
pub use trident_wgpu::WgpuBackend;

/// Constructs the backend called `name` if it is compiled in and can run here.
///
/// Names: those of [`BackendKind`] (`"cuda"`, `"wgpu"`, `"rayon"`,
/// `"reference"`). A name whose feature is off gives
/// [`Error::BackendUnavailable`] saying which feature enables it.
pub fn backend_by_name(name: &str) -> Result<Box<dyn Primitives>> {
    match BackendKind::from_name(name) {
        Some(kind) => backend(kind),
        None => Err(Error::arg(
            "backend",
            format!("unknown backend {name:?}; expected one of {PREFERENCE:?}"),
        )),
    }
}

/// Constructs backend `kind` if it is compiled in and can run here.
pub fn backend(kind: BackendKind) -> Result<Box<dyn Primitives>> {
    match kind {
        #[cfg(feature = "reference")]
        BackendKind::Reference => Ok(Box::new(ReferenceBackend::new()?)),
        #[cfg(feature = "rayon")]
        BackendKind::Rayon => Ok(Box::new(RayonBackend::new()?)),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => Ok(Box::new(CudaBackend::new(0)?)),
        #[cfg(feature = "wgpu")]
        BackendKind::Wgpu => Ok(Box::new(WgpuBackend::new()?)),
        // Reached only for backends whose feature is off in this build.
        #[allow(unreachable_patterns)]
        other => Err(Error::BackendUnavailable(format!(
            "the `{other}` backend is not compiled in: enable the `{}` feature of the `trident-compute` crate",
            other.feature().unwrap_or("default")
        ))),
    }
}

/// Constructs backend `kind` on device `device`: the CUDA ordinal (the
/// other backends have one device each and ignore it). How each rank of a
/// cluster takes its own GPU.
pub fn backend_on(kind: BackendKind, device: usize) -> Result<Box<dyn Primitives>> {
    match kind {
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => Ok(Box::new(CudaBackend::new(device)?)),
        other => {
            let _ = device;
            backend(other)
        }
    }
}

/// `true` when backend `kind` is compiled into this build (its feature is on).
pub fn is_compiled(kind: BackendKind) -> bool {
    match kind {
        BackendKind::Cuda => cfg!(feature = "cuda"),
        BackendKind::Wgpu => cfg!(feature = "wgpu"),
        BackendKind::Rayon => cfg!(feature = "rayon"),
        BackendKind::Reference => cfg!(feature = "reference"),
        // A kind added to trident-core after this crate was built.
        _ => false,
    }
}

/// Names of the backends compiled into this build, in preference order.
pub fn compiled_backends() -> Vec<&'static str> {
    BackendKind::ALL
        .into_iter()
        .filter(|&k| is_compiled(k))
        .map(BackendKind::name)
        .collect()
}
