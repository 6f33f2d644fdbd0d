//! Keeping data on a device between calls.
//!
//! The five primitive traits take host data, which is what most callers have and
//! what `verify` compares. A GPU backend would pay a host round trip per call
//! that way, so a backend with its own memory also implements
//! [`DeviceMemory`] (upload, download, allocate) and the `*Device` traits below,
//! whose operands and results stay in that memory. A chain such as
//! `C = A * B; E = C * D` then uploads A, B and D once and downloads E once:
//!
//! ```text
//! let a = be.upload_csr(&a)?;            // host -> device
//! let b = be.upload_csr(&b)?;
//! let c = be.spgemm_device(&a, &b)?;     // stays on the device
//! let e = be.spgemm_device(&c, &b)?;
//! let e = be.download_csr(&e)?;          // device -> host
//! ```
//!
//! Device traits are not object-safe (they have a generic buffer type); code
//! that picks a backend at run time uses the host traits, code that knows its
//! backend uses both. Device buffers are checked when they are made from host
//! data; the device calls check only what relates their arguments (shapes).

use crate::{
    CsrMatrix, Dictionary, Error, GemmParams, GridGraph, Neighbor, Pair, Point, Result, Scalar,
    SparseCodes, StopRule,
};

/// Plain-old-data a device buffer can hold.
pub trait Element: bytemuck::Pod + Send + Sync {}
impl<T: bytemuck::Pod + Send + Sync> Element for T {}

/// A backend that owns memory of its own.
pub trait DeviceMemory: Send + Sync {
    /// A buffer of `len` elements of `T` in the backend's memory.
    type Buffer<T: Element>: Send + Sync;
    /// Copies `host` into a new buffer.
    fn upload<T: Element>(&self, host: &[T]) -> Result<Self::Buffer<T>>;
    /// A new zero-filled buffer of `len` elements.
    fn alloc_zeroed<T: Element>(&self, len: usize) -> Result<Self::Buffer<T>>;
    /// Copies a buffer back; `host.len()` must equal the buffer's length.
    fn download<T: Element>(&self, buf: &Self::Buffer<T>, host: &mut [T]) -> Result<()>;
    /// Number of elements in a buffer.
    fn buffer_len<T: Element>(&self, buf: &Self::Buffer<T>) -> usize;
    /// Waits for all queued work (timing, or before reading results elsewhere).
    fn synchronize(&self) -> Result<()>;
}

/// A row-major matrix in device memory: `rows x cols` with leading dimension `ld`.
pub struct DeviceMat<B> {
    /// The buffer holding it (at least `(rows-1)*ld + cols` elements).
    pub buf: B,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Leading dimension, `>= cols`.
    pub ld: usize,
}

/// A valid CSR matrix in device memory (offsets as `u64`).
pub struct DeviceCsr<M: DeviceMemory + ?Sized, T: Scalar> {
    rows: usize,
    cols: usize,
    nnz: usize,
    /// `rows + 1` offsets.
    pub offsets: M::Buffer<u64>,
    /// Column indices, sorted and unique per row.
    pub indices: M::Buffer<u32>,
    /// Values.
    pub values: M::Buffer<T>,
}

impl<M: DeviceMemory + ?Sized, T: Scalar> DeviceCsr<M, T> {
    /// Wraps buffers a backend produced and knows to be valid CSR.
    #[doc(hidden)]
    pub fn from_parts(
        rows: usize,
        cols: usize,
        nnz: usize,
        offsets: M::Buffer<u64>,
        indices: M::Buffer<u32>,
        values: M::Buffer<T>,
    ) -> Self {
        Self {
            rows,
            cols,
            nnz,
            offsets,
            indices,
            values,
        }
    }
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.nnz
    }
}

/// GEMM on device-resident operands.
pub trait DenseGemmDevice<T: Scalar>: DeviceMemory {
    /// `C <- alpha op(A) op(B) + beta C` where all three live on the device.
    /// Values are not re-checked for finiteness (that would need a pass over
    /// device memory); shapes are.
    fn gemm_device(
        &self,
        p: &GemmParams<T>,
        a: &DeviceMat<Self::Buffer<T>>,
        b: &DeviceMat<Self::Buffer<T>>,
        c: &mut DeviceMat<Self::Buffer<T>>,
    ) -> Result<()>;
}

/// SpGEMM on device-resident CSR matrices.
pub trait SparseGemmDevice<T: Scalar>: DeviceMemory + Sized {
    /// Uploads a (valid) host matrix.
    fn upload_csr(&self, m: &CsrMatrix<T>) -> Result<DeviceCsr<Self, T>>;
    /// Downloads a device matrix.
    fn download_csr(&self, m: &DeviceCsr<Self, T>) -> Result<CsrMatrix<T>>;
    /// `C = A * B` with all three on the device.
    fn spgemm_device(
        &self,
        a: &DeviceCsr<Self, T>,
        b: &DeviceCsr<Self, T>,
    ) -> Result<DeviceCsr<Self, T>>;
}

/// Nearest-neighbour queries on device-resident point sets.
pub trait NearestPairsDevice: DeviceMemory {
    /// Nearest point of B for each point of A, written to `out` (|A| entries).
    fn nearest_device(
        &self,
        a: &Self::Buffer<Point>,
        b: &Self::Buffer<Point>,
        out: &mut Self::Buffer<Neighbor>,
    ) -> Result<()>;
    /// The `k` nearest points of B for each point of A, sorted by `(d2, j)`,
    /// written to `out` (`|A| * k` entries).
    fn knn_device(
        &self,
        a: &Self::Buffer<Point>,
        b: &Self::Buffer<Point>,
        k: usize,
        out: &mut Self::Buffer<Neighbor>,
    ) -> Result<()>;
    /// The `k` closest (a, nearest b) pairs; the small result comes back to the host.
    fn closest_pairs_device(
        &self,
        a: &Self::Buffer<Point>,
        b: &Self::Buffer<Point>,
        k: usize,
    ) -> Result<Vec<Pair>>;
}

/// A search structure over B built once in device memory and kept, so that
/// many query sets search the same B without rebuilding it: a database
/// indexed once, as FAISS's indexes are. Answers are those of
/// [`NearestPairsDevice`] on the same points, bit for bit.
pub trait NearestIndexDevice: NearestPairsDevice {
    /// The backend's structure over B; it holds its own copy of B's points,
    /// so the buffer it was built from may be dropped.
    type PointIndex: Send + Sync;
    /// Builds the structure over `b` (at least one point).
    fn index_points(&self, b: &Self::Buffer<Point>) -> Result<Self::PointIndex>;
    /// Points in an index.
    fn index_len(&self, index: &Self::PointIndex) -> usize;
    /// [`NearestPairsDevice::nearest_device`] against an index.
    fn nearest_indexed(
        &self,
        a: &Self::Buffer<Point>,
        index: &Self::PointIndex,
        out: &mut Self::Buffer<Neighbor>,
    ) -> Result<()>;
    /// [`NearestPairsDevice::closest_pairs_device`] against an index.
    fn closest_pairs_indexed(
        &self,
        a: &Self::Buffer<Point>,
        index: &Self::PointIndex,
        k: usize,
    ) -> Result<Vec<Pair>>;
}

/// Max-flow grid cuts on grids kept in device memory (networks have no
/// device form: their answer, per-arc flows, is finished on the host).
pub trait MaxFlowDevice: DeviceMemory {
    /// A grid graph in the backend's memory, in the backend's own layout
    /// (counter width, terminal arrays).
    type DeviceGrid: Send + Sync;
    /// Uploads a grid (valid by construction). A backend whose counters
    /// cannot hold the grid's capacities answers [`Error::Unsupported`].
    fn upload_grid(&self, g: &GridGraph) -> Result<Self::DeviceGrid>;
    /// [`crate::MaxFlow::grid_cut`] of an uploaded grid: the flow value, and
    /// one byte per node (1 = source side of the canonical cut) left in
    /// device memory. The grid is not changed, so it may be cut again.
    fn grid_cut_device(&self, g: &Self::DeviceGrid) -> Result<(i64, Self::Buffer<u8>)>;
}

/// OMP codes in device memory, one fixed-size slot per signal: signal `i`
/// has `counts[i]` atoms, `atoms[i * max_atoms..][..counts[i]]` in selection
/// order, with their coefficients at the same places in `coefs`, and its
/// final `||r||^2` in `residual_norm2[i]`. Slots are padded rather than
/// packed so that signals are coded independently, with no prefix sum over
/// counts on the device; [`SparseCoderDevice::download_codes`] packs them
/// into [`SparseCodes`].
pub struct DeviceCodes<M: DeviceMemory + ?Sized, T: Scalar> {
    /// Number of signals.
    pub signals: usize,
    /// Slot size: [`StopRule::max_atoms`] for the call's dictionary.
    pub max_atoms: usize,
    /// Atoms per signal (`signals` entries).
    pub counts: M::Buffer<u32>,
    /// `signals * max_atoms` atom slots (entries past a signal's count are unspecified).
    pub atoms: M::Buffer<u32>,
    /// Coefficients, parallel to `atoms`.
    pub coefs: M::Buffer<T>,
    /// Final squared residual norm per signal.
    pub residual_norm2: M::Buffer<T>,
}

/// Sparse coding of signals that live in device memory.
pub trait SparseCoderDevice<T: Scalar>: DeviceMemory + Sized {
    /// [`crate::SparseCoder::encode`] on the rows of `signals` (L x n on the
    /// device), leaving the codes on the device. The dictionary comes from the
    /// host (it is small and checked there); signal values are not re-checked
    /// for finiteness (that would need a pass over device memory), shapes and
    /// the rule are.
    fn encode_device(
        &self,
        dict: &Dictionary<T>,
        signals: &DeviceMat<Self::Buffer<T>>,
        rule: StopRule,
    ) -> Result<DeviceCodes<Self, T>>;

    /// Copies codes to the host and packs them into [`SparseCodes`].
    fn download_codes(&self, codes: &DeviceCodes<Self, T>) -> Result<SparseCodes<T>> {
        let (l, m) = (codes.signals, codes.max_atoms);
        let mut counts = vec![0u32; l];
        self.download(&codes.counts, &mut counts)?;
        let slots = self.buffer_len(&codes.atoms);
        let mut atoms = vec![0u32; slots];
        let mut coefs = vec![T::ZERO; slots];
        self.download(&codes.atoms, &mut atoms)?;
        self.download(&codes.coefs, &mut coefs)?;
        let mut residual_norm2 = vec![T::ZERO; l];
        self.download(&codes.residual_norm2, &mut residual_norm2)?;
        let nnz: usize = counts.iter().map(|&c| c as usize).sum();
        let mut out = SparseCodes {
            offsets: Vec::with_capacity(l + 1),
            atoms: Vec::with_capacity(nnz),
            coefs: Vec::with_capacity(nnz),
            residual_norm2,
        };
        out.offsets.push(0);
        for (i, &c) in counts.iter().enumerate() {
            let c = c as usize;
            let s = i * m;
            if c > m || s + c > slots {
                return Err(Error::Backend(
                    format!("signal {i} reports {c} atoms, its slot holds {m}").into(),
                ));
            }
            out.atoms.extend_from_slice(&atoms[s..s + c]);
            out.coefs.extend_from_slice(&coefs[s..s + c]);
            out.offsets.push(out.atoms.len());
        }
        Ok(out)
    }
}
