//! The one error type of Trident.
//!
//! Every message names the field and, where there is one, the index at fault, so a
//! user can find the bad entry without a debugger. Backend-specific failures (a
//! CUDA driver error, a wgpu device loss) are boxed into [`Error::Backend`].

/// Shorthand for `std::result::Result<T, trident_core::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a Trident call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Sizes that do not fit together: `op(A)` is m x k but `op(B)` is k' x n, a
    /// buffer shorter than its shape needs, a leading dimension below the row length.
    #[error("dimension mismatch in {field}: {detail}")]
    DimensionMismatch {
        /// The argument or field at fault, e.g. `"b.rows"` or `"c.data"`.
        field: &'static str,
        /// What was expected and what was found.
        detail: String,
    },
    /// A CSR matrix that breaks the format: offsets not starting at 0 or decreasing,
    /// a column index out of range, unsorted or repeated within a row.
    #[error("invalid CSR matrix: {field}[{index}]: {detail}")]
    InvalidCsr {
        /// `"offsets"` or `"indices"` (or `"triplets"` for `from_triplets`).
        field: &'static str,
        /// Position of the offending entry in that array.
        index: usize,
        /// What is wrong with it.
        detail: String,
    },
    /// A NaN or infinity where a finite number is required.
    #[error("{field}[{index}] = {value} is not finite")]
    NonFinite {
        /// The array that holds it.
        field: &'static str,
        /// Position in that array.
        index: usize,
        /// The value as printed (`NaN`, `inf`).
        value: f64,
    },
    /// A capacity below zero in a flow problem.
    #[error("{field}[{index}] = {value} is negative; capacities must be >= 0")]
    NegativeCapacity {
        /// The array that holds it.
        field: &'static str,
        /// Position in that array.
        index: usize,
        /// The offending capacity.
        value: i64,
    },
    /// A size or index that does not fit the index type Trident uses (u32 for
    /// columns, points and atoms), or a sum that would overflow.
    #[error("{field} = {value} exceeds the limit {limit}")]
    TooLarge {
        /// What is too large.
        field: &'static str,
        /// Its value.
        value: u128,
        /// The largest value accepted.
        limit: u128,
    },
    /// An argument outside its domain: `s == t`, an empty point set B, a dictionary
    /// column that is not unit-norm, `k` larger than the number of candidates.
    #[error("invalid argument {field}: {detail}")]
    InvalidArgument {
        /// The argument at fault.
        field: &'static str,
        /// Why it is rejected.
        detail: String,
    },
    /// A malformed input file (DIMACS); `line` is 1-based.
    #[error("parse error at line {line}: {detail}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// What could not be read.
        detail: String,
    },
    /// The backend exists and runs here but does not implement this combination
    /// (f64 on wgpu, TF32 on a CPU backend where it is not emulated).
    #[error("unsupported on this backend: {0}")]
    Unsupported(String),
    /// The backend cannot run on this machine (no driver, no device, no adapter).
    #[error("backend unavailable: {0}")]
    BackendUnavailable(String),
    /// The device (or host) could not hold the data the call needs.
    #[error("out of memory: {detail} ({bytes} bytes requested)")]
    OutOfMemory {
        /// Bytes the failing allocation asked for.
        bytes: u64,
        /// Which buffer it was for.
        detail: String,
    },
    /// An I/O failure while reading or writing a file.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Another rank of a distributed call (`trident-dist`) failed: every
    /// other rank returns this, so none waits for it. `detail` is that rank's
    /// own error as it printed.
    #[error("rank {rank} failed: {detail}")]
    RankFailed {
        /// The rank whose step failed.
        rank: usize,
        /// Its error, as it printed.
        detail: String,
    },
    /// A failure inside a backend's driver or runtime (CUDA, NVRTC, wgpu).
    #[error("backend error: {0}")]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// Builds a [`Error::DimensionMismatch`].
    pub fn dim(field: &'static str, detail: impl Into<String>) -> Self {
        Error::DimensionMismatch {
            field,
            detail: detail.into(),
        }
    }

    /// Builds an [`Error::InvalidArgument`].
    pub fn arg(field: &'static str, detail: impl Into<String>) -> Self {
        Error::InvalidArgument {
            field,
            detail: detail.into(),
        }
    }

    /// Builds an [`Error::InvalidCsr`].
    pub fn csr(field: &'static str, index: usize, detail: impl Into<String>) -> Self {
        Error::InvalidCsr {
            field,
            index,
            detail: detail.into(),
        }
    }

    /// Wraps a backend's own error type.
    pub fn backend(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Backend(Box::new(e))
    }
}
