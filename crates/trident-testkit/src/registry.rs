//! The registry: the one module that names the primitive folders.
//!
//! Dependencies inside the test kit point one way: each primitive folder uses
//! the shared parts ([`crate::cases`], [`crate::check`], [`crate::conformance`],
//! [`crate::problem`], [`crate::suites`], [`crate::verify`]), and this module
//! reads the folders. The shared parts never name a folder (a test in
//! `tests/shared_parts.rs` keeps it so); where they need every primitive they
//! read [`PRIMITIVE_SUITES`] here, and the primitive items they have always
//! offered under their paths (`cases::gemm`, `check::omp`, ...) are gathered
//! here and re-exported there. Adding a primitive adds its folder, one line to
//! [`PRIMITIVE_SUITES`], one test to [`conformance_tests!`](crate::conformance_tests)
//! and its names to the lists below.

use crate::suites::PrimitiveSuite;

/// Every primitive's suite, in [`trident_core::PRIMITIVES`] order.
pub const PRIMITIVE_SUITES: [PrimitiveSuite; 5] = [
    crate::dense_gemm::SUITE,
    crate::sparse_gemm::SUITE,
    crate::nearest_pairs::SUITE,
    crate::sparse_coder::SUITE,
    crate::max_flow::SUITE,
];

/// The suite of the primitive called `name` (one of
/// [`trident_core::PRIMITIVES`]), if any.
pub fn suite(name: &str) -> Option<&'static PrimitiveSuite> {
    PRIMITIVE_SUITES.iter().find(|s| s.primitive.name() == name)
}

/// The generators and case types, re-exported by [`crate::cases`].
pub mod generators {
    pub use crate::dense_gemm::generate::{
        GemmCase, PAD_MARKER, Shape, gemm, gemm_general, uniform_matrix,
    };
    pub use crate::max_flow::generate::{
        SegmentationParams, cut, cut3d, genrmf, path_grid, path_network, random_grid,
        random_network, segmentation_grid, synthetic_image, synthetic_volume,
    };
    pub use crate::nearest_pairs::generate::{
        CLUSTER_SIGMA, CLUSTERS, COORD_RANGE, PairsCase, RADIUS_NEIGHBOURS, UTM_ORIGIN,
        cluster_centers, clustered_points, lattice_points, pairs_clustered, pairs_uniform,
        pairs_utm, to_f64_case, uniform_points, utm_points,
    };
    pub use crate::sparse_coder::generate::{
        OmpCase, dct_dictionary, dense_signals, omp_dct, omp_dct_256, omp_random,
        random_dictionary, sparse_signals,
    };
    pub use crate::sparse_gemm::generate::{
        RMAT_ABC, SpgemmCase, convert, poisoned, poisson2d, power_law_row, random_csr, rmat,
        uniform_rows,
    };
}

/// The per-primitive checkers, re-exported by [`crate::check`].
pub mod checkers {
    pub use crate::dense_gemm::check::gemm;
    pub use crate::max_flow::check::{grid_cut, network_flow};
    pub use crate::nearest_pairs::check::{check_knn, check_nearest, check_pairs};
    pub use crate::sparse_coder::check::{omp, omp_residual};
    pub use crate::sparse_coder::problem::widen_omp;
    pub use crate::sparse_gemm::check::{revalidate_csr, spgemm};
}

/// The per-primitive conformance suites and bad-input groups, re-exported by
/// [`crate::conformance`].
pub mod groups {
    pub use crate::dense_gemm::conformance::{bad_input_dense_gemm, dense_gemm};
    pub use crate::max_flow::conformance::{bad_input_max_flow, max_flow};
    pub use crate::nearest_pairs::conformance::{bad_input_nearest_pairs, nearest_pairs};
    pub use crate::sparse_coder::conformance::{bad_input_sparse_coder, sparse_coder};
    pub use crate::sparse_gemm::conformance::{bad_input_sparse_gemm, sparse_gemm};
}

/// How many queries the nearest-pairs certificate checks, re-exported by
/// [`crate::verify`].
pub use crate::nearest_pairs::problem::{CERT_FULL_PAIRS, CERT_SAMPLE};

/// Stamps the conformance tests for one backend: one `#[test]` per primitive
/// and one for bad input, in a module named after the backend.
///
/// `$ctor` is an expression of type `trident_core::Result<B>` with
/// `B: Primitives + 'static` (a backend constructor such as
/// `RayonBackend::new()`); it is evaluated once per test.
///
/// ```text
/// trident_testkit::conformance_tests!(rayon, trident_rayon::RayonBackend::new());
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($name:ident, $ctor:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance as __c;
            #[test]
            fn dense_gemm() {
                __c::run_test(
                    stringify!($name),
                    $crate::dense_gemm::SUITE.conformance,
                    || $ctor,
                )
            }
            #[test]
            fn sparse_gemm() {
                __c::run_test(
                    stringify!($name),
                    $crate::sparse_gemm::SUITE.conformance,
                    || $ctor,
                )
            }
            #[test]
            fn nearest_pairs() {
                __c::run_test(
                    stringify!($name),
                    $crate::nearest_pairs::SUITE.conformance,
                    || $ctor,
                )
            }
            #[test]
            fn sparse_coder() {
                __c::run_test(
                    stringify!($name),
                    $crate::sparse_coder::SUITE.conformance,
                    || $ctor,
                )
            }
            #[test]
            fn max_flow() {
                __c::run_test(
                    stringify!($name),
                    $crate::max_flow::SUITE.conformance,
                    || $ctor,
                )
            }
            #[test]
            fn bad_input() {
                __c::run_test(stringify!($name), __c::bad_input, || $ctor)
            }
        }
    };
}
