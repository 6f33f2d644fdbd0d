//! Sharded calls on inputs already in each rank's device memory: the shards
//! were uploaded (or computed) there once, and stay there between calls, so
//! a call moves nothing over the bus but what the ranks must exchange. The
//! partitions are those of the host calls (docs/semantics.md, "Distributed
//! calls"); each method takes the rank's device backend as a typed handle
//! (`&CudaBackend`, say) next to its buffers, and checks across ranks what
//! can disagree (shapes, `k`, parameters; contents stay on the devices and
//! are not digested).

use trident_core::{
    DenseGemmDevice, DeviceCodes, DeviceCsr, DeviceMat, Dictionary, GemmParams, NearestIndexDevice,
    NearestPairsDevice, Pair, Point, Result, SparseCoderDevice, SparseGemmDevice, StopRule,
};

use crate::sharded::{ShardScalar, Sharded, bits};

impl Sharded<'_> {
    /// [`Sharded::closest_pairs`] on device-resident points: this rank's
    /// rows of A and all of B in `dev`'s memory; every rank returns the
    /// same `k` pairs, rows of A numbered globally.
    pub fn closest_pairs_resident<D: NearestPairsDevice>(
        &self,
        dev: &D,
        a: &D::Buffer<Point>,
        b: &D::Buffer<Point>,
        k: usize,
    ) -> Result<Vec<Pair>> {
        let items = [("b.len", dev.buffer_len(b) as u64), ("k", k as u64)];
        self.closest_across(&items, dev.buffer_len(a), k, || {
            dev.closest_pairs_device(a, b, k)
        })
    }

    /// [`Sharded::closest_pairs_resident`] against B's index, built once on
    /// every rank ([`NearestIndexDevice::index_points`]) and kept between
    /// calls: a call then costs each rank only its own queries, so it
    /// scales with the ranks. The same pairs as the unindexed call.
    pub fn closest_pairs_indexed<D: NearestIndexDevice>(
        &self,
        dev: &D,
        a: &D::Buffer<Point>,
        index: &D::PointIndex,
        k: usize,
    ) -> Result<Vec<Pair>> {
        let items = [("b.len", dev.index_len(index) as u64), ("k", k as u64)];
        self.closest_across(&items, dev.buffer_len(a), k, || {
            dev.closest_pairs_indexed(a, index, k)
        })
    }

    /// [`Sharded::encode`] on device-resident signals (this rank's rows);
    /// the codes stay on the device, with the signals they code.
    pub fn encode_resident<T: ShardScalar, D: SparseCoderDevice<T>>(
        &self,
        dev: &D,
        dict: &Dictionary<T>,
        signals: &DeviceMat<D::Buffer<T>>,
        rule: StopRule,
    ) -> Result<DeviceCodes<D, T>> {
        self.agree(&[
            ("dict.n", dict.n() as u64),
            ("dict.atoms", dict.atoms() as u64),
            ("signals.cols", signals.cols as u64),
            self.replica("dict (contents)", dict.data()),
        ])?;
        self.settle(dev.encode_device(dict, signals, rule))
    }

    /// [`Sharded::gemm`] on device-resident operands: this rank's rows of
    /// `op(A)` and C, and the replicated B, all in `dev`'s memory.
    pub fn gemm_resident<T: ShardScalar, D: DenseGemmDevice<T>>(
        &self,
        dev: &D,
        params: &GemmParams<T>,
        a: &DeviceMat<D::Buffer<T>>,
        b: &DeviceMat<D::Buffer<T>>,
        c: &mut DeviceMat<D::Buffer<T>>,
    ) -> Result<()> {
        self.agree(&[
            ("b.rows", b.rows as u64),
            ("b.cols", b.cols as u64),
            ("alpha", bits(params.alpha)),
            ("beta", bits(params.beta)),
            ("scalar type", bits(T::ONE)),
        ])?;
        self.settle(dev.gemm_device(params, a, b, c))
    }

    /// [`Sharded::spgemm`] on device-resident CSR: this rank's rows of A and
    /// the replicated B in `dev`'s memory; C's rows stay there.
    pub fn spgemm_resident<T: ShardScalar, D: SparseGemmDevice<T>>(
        &self,
        dev: &D,
        a: &DeviceCsr<D, T>,
        b: &DeviceCsr<D, T>,
    ) -> Result<DeviceCsr<D, T>> {
        self.agree(&[
            ("b.rows", b.rows() as u64),
            ("b.cols", b.cols() as u64),
            ("b.nnz", b.nnz() as u64),
            ("scalar type", bits(T::ONE)),
        ])?;
        self.settle(dev.spgemm_device(a, b))
    }
}
