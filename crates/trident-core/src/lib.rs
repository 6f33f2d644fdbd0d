//! # trident-core
//!
//! The contract every Trident backend implements: data types, the five
//! primitive traits, the one [`Error`] enum, and the validation all backends
//! share. It computes almost nothing itself; `trident-reference` defines what
//! is correct and the other backends make it fast. (The exception is [`omp`]:
//! the plain f64 OMP of the reference, which the f32-only wgpu backend also
//! runs for signals f32 cannot settle, and the signal scaling every OMP
//! backend applies.)
//!
//! ## The five primitives
//! | trait | computes |
//! | --- | --- |
//! | [`DenseGemm`] | `C <- alpha op(A) op(B) + beta C` |
//! | [`SparseGemm`] | `C = A * B`, CSR x CSR |
//! | [`NearestPairs`] | nearest / k nearest point of B per point of A, and the k closest such pairs |
//! | [`SparseCoder`] | sparse codes by (Batch-)OMP |
//! | [`MaxFlow`] | max flow and canonical min cut, grids and general networks |
//!
//! Each trait is object-safe and generic over the scalar where there is one, so
//! `Box<dyn DenseGemm<f32>>` works and a backend lacking f64 simply answers
//! [`Error::Unsupported`]. [`Primitives`] bundles all of them.
//!
//! ## Rules every backend follows (from docs/semantics.md)
//! - Row-major dense storage; `u32` column/point/atom indices; CSR offsets `usize`.
//! - Bad input is an [`Error`] naming the field and index, checked by
//!   [`validate`] before any output is written: on error outputs are untouched.
//! - A backend that cannot run here fails at construction with
//!   [`Error::BackendUnavailable`], never a panic.
//! - The same input on the same backend gives bit-identical output.
//! - Empty inputs are valid wherever the math is defined.
//!
//! Choices the contract leaves open, made here: `knn` with `k > |B|` is an error (the
//! output has a fixed stride of k); grid capacities pointing off the grid must
//! be 0 (an error otherwise, so nothing is silently dropped); capacities are
//! `i64` and their total must fit in `i64`, so no backend can overflow.
//!
//! ## Data on the device
//! See [`device`]: GPU backends also implement [`DeviceMemory`] and the
//! `*Device` traits, which keep operands and results in device memory across calls.
#![warn(missing_docs)]
// docs.rs builds with `--cfg docsrs` on nightly: feature-gated items then say
// which feature they need. Stable builds never see the nightly feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Library code returns errors; it never unwraps (a panic on user data is a
// bug; see docs/hardening.md). The few justified exceptions carry an `allow`
// and a comment saying why they cannot fail.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod coder;
mod dense;
pub mod device;
mod error;
pub mod flow;
#[cfg(any(
    feature = "sprs",
    feature = "ndarray",
    feature = "nalgebra",
    feature = "faer"
))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(
        feature = "sprs",
        feature = "ndarray",
        feature = "nalgebra",
        feature = "faer"
    )))
)]
pub mod interop;
mod kind;
pub mod mem;
pub mod omp;
mod points;
mod scalar;
#[cfg(feature = "serde")]
mod serde_impls;
mod sparse;
pub mod tol;
pub mod validate;

pub use coder::{Dictionary, SparseCoder, SparseCodes, StopRule, omp_zero_correlation};
pub use dense::{DenseGemm, GemmDims, GemmParams, MatMut, MatRef, Op, Precision};
pub use device::{
    DenseGemmDevice, DeviceCodes, DeviceCsr, DeviceMat, DeviceMemory, Element, MaxFlowDevice,
    NearestIndexDevice, NearestPairsDevice, SparseCoderDevice, SparseGemmDevice,
};
pub use error::{Error, Result};
pub use flow::{Dir, FlowArc, FlowNetwork, GridCut, GridGraph, MaxFlow, NetworkFlow};
pub use kind::{BackendKind, Primitive};
pub use points::{
    Coord, CoordScan, F32_SAFE_COORD, F32_TINY_COORD, NearestPairs, Neighbor, Pair, Point,
    RadiusNeighbors, dist2, dist2_f64, range_shift, range_shift_of, scale_coord, scale_points,
    scaled_for_range, scan_coords, unscale_d2,
};
pub use scalar::Scalar;
pub use sparse::{CsrMatrix, MAX_DIM, SparseGemm};
pub use tol::UNIT_NORM_TOL;

/// What every backend handle says about itself.
///
/// ```
/// use trident_core::Backend;
/// let b = trident_reference::ReferenceBackend::new()?;
/// assert_eq!(b.name(), "reference");
/// assert!(!b.software_device());
/// println!("{}: {}", b.name(), b.describe());
/// # Ok::<(), trident_core::Error>(())
/// ```
pub trait Backend: Send + Sync {
    /// Short name used by `TRIDENT_BACKEND` and `verify --backend`: `"reference"`,
    /// `"rayon"`, `"cuda"`, `"wgpu"`.
    fn name(&self) -> &'static str;
    /// One line on what it runs on (device name, thread count).
    fn describe(&self) -> String;
    /// `true` when the backend's device is the host CPU emulating a GPU
    /// (wgpu on llvmpipe or another software adapter): it runs, but far
    /// slower than the CPU backend, so the facade ranks it after rayon.
    fn software_device(&self) -> bool {
        false
    }
}

/// All five primitives in both precisions: what `verify` and the facade hold as
/// `Box<dyn Primitives>`.
///
/// ```
/// use trident_core::{NearestPairs, Primitives};
/// let backends: Vec<Box<dyn Primitives>> =
///     vec![Box::new(trident_reference::ReferenceBackend::new()?)];
/// for b in &backends {
///     // The closest pair between A and B, on every backend held.
///     let a = [[0.0f32, 0.0, 0.0]];
///     let bs = [[3.0f32, 0.0, 0.0], [1.0, 0.0, 0.0]];
///     let pairs = NearestPairs::<f32>::closest_pairs(b.as_ref(), &a, &bs, 1)?;
///     assert_eq!((pairs[0].a, pairs[0].b), (0, 1));
/// }
/// # Ok::<(), trident_core::Error>(())
/// ```
pub trait Primitives:
    Backend
    + DenseGemm<f32>
    + DenseGemm<f64>
    + SparseGemm<f32>
    + SparseGemm<f64>
    + NearestPairs<f32>
    + NearestPairs<f64>
    + SparseCoder<f32>
    + SparseCoder<f64>
    + MaxFlow
{
}

impl<B> Primitives for B where
    B: Backend
        + DenseGemm<f32>
        + DenseGemm<f64>
        + SparseGemm<f32>
        + SparseGemm<f64>
        + NearestPairs<f32>
        + NearestPairs<f64>
        + SparseCoder<f32>
        + SparseCoder<f64>
        + MaxFlow
{
}

/// The primitive names, as `verify --primitive` and reports spell them
/// ([`Primitive::name`] of [`Primitive::ALL`]).
pub const PRIMITIVES: [&str; 5] = [
    Primitive::ALL[0].name(),
    Primitive::ALL[1].name(),
    Primitive::ALL[2].name(),
    Primitive::ALL[3].name(),
    Primitive::ALL[4].name(),
];
