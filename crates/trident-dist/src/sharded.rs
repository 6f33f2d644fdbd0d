//! [`Sharded`]: the five primitives' distributed calls (one module per
//! primitive adds its methods), and what they all do around the local call:
//! agree on the arguments that must match, settle every rank's outcome so a
//! failure anywhere is an error everywhere, and gather results on demand.

use std::ops::Range;

use bytemuck::Pod;
use trident_core::{
    Coord, DenseGemm, Error, NearestPairs, Primitives, Result, Scalar, SparseCoder, SparseGemm,
};

use crate::cluster::Cluster;
use crate::comm::{CommExt, Communicator};

/// Distributed calls of one cluster on one local backend (a `Trident`, or
/// any backend handle). Each rank passes its part of the partitioned inputs
/// and the whole of the replicated ones; `docs/semantics.md` says which is
/// which for every call, and what each rank gets back.
pub struct Sharded<'a> {
    cluster: &'a Cluster,
    backend: &'a (dyn Primitives + 'a),
    check_replicas: bool,
}

impl<'a> Sharded<'a> {
    /// Calls on `backend`, this rank's device, across `cluster`.
    pub fn new(cluster: &'a Cluster, backend: &'a (dyn Primitives + 'a)) -> Self {
        Sharded {
            cluster,
            backend,
            check_replicas: false,
        }
    }

    /// Also compare a digest of every replicated input across ranks before
    /// each call (off by default: hashing a large replicated B or dictionary
    /// can cost as much as the call; shapes and scalars are always compared).
    pub fn check_replicas(mut self, on: bool) -> Self {
        self.check_replicas = on;
        self
    }

    /// The cluster.
    pub fn cluster(&self) -> &Cluster {
        self.cluster
    }

    /// The local backend.
    pub fn backend(&self) -> &'a (dyn Primitives + 'a) {
        self.backend
    }

    pub(crate) fn comm(&self) -> &dyn Communicator {
        self.cluster.comm()
    }

    /// This rank's first row in the global numbering of a partitioned input
    /// of which it holds `local_rows`, and the rows over all ranks.
    pub fn offsets(&self, local_rows: usize) -> Result<(usize, usize)> {
        let all = self.comm().all_gather_u64(local_rows as u64)?;
        let first = all[..self.cluster.rank()].iter().sum::<u64>() as usize;
        Ok((first, all.iter().sum::<u64>() as usize))
    }

    /// Checks that every rank passed the same value for each named item
    /// (shapes, scalars as bits, digests of replicated inputs): a mismatch is
    /// the same `InvalidArgument` on every rank, naming the item and the ranks.
    pub(crate) fn agree(&self, items: &[(&'static str, u64)]) -> Result<()> {
        self.agree_rows(items, 0).map(drop)
    }

    /// [`Self::agree`] and [`Self::offsets`] in one exchange: `local_rows`
    /// rides along with the checked items (it may differ between ranks).
    pub(crate) fn agree_rows(
        &self,
        items: &[(&'static str, u64)],
        local_rows: usize,
    ) -> Result<(usize, usize)> {
        let flag = [(
            "check_replicas (set on some ranks only)",
            u64::from(self.check_replicas),
        )];
        let items: Vec<(&'static str, u64)> = flag.iter().chain(items).copied().collect();
        let mut values: Vec<u64> = items.iter().map(|&(_, v)| v).collect();
        values.push(local_rows as u64);
        let all = self.comm().all_gather_fixed(&values)?;
        let n = values.len();
        for (i, &(name, _)) in items.iter().enumerate() {
            let want = all[i];
            if let Some(r) = (1..self.cluster.size()).find(|r| all[r * n + i] != want) {
                return Err(Error::arg(
                    name,
                    format!(
                        "ranks disagree on a replicated argument: rank {r} passed {} where rank 0 passed {want}",
                        all[r * n + i]
                    ),
                ));
            }
        }
        let rows = |r: usize| all[r * n + n - 1] as usize;
        let first = (0..self.cluster.rank()).map(rows).sum();
        Ok((first, (0..self.cluster.size()).map(rows).sum()))
    }

    /// The agreement item for a replicated input: its digest when replicas
    /// are checked, else 0 (so every rank gathers the same number of items).
    pub(crate) fn replica<T: Pod>(&self, name: &'static str, data: &[T]) -> (&'static str, u64) {
        (name, if self.check_replicas { digest(data) } else { 0 })
    }

    /// Every rank's outcome of its local step, so that no rank goes on to
    /// exchange data with one that failed. A rank whose backend cannot run
    /// makes the call `BackendUnavailable` on every rank; another failure
    /// is the failing rank's own error there and `RankFailed` elsewhere.
    pub(crate) fn settle<R>(&self, local: Result<R>) -> Result<R> {
        settle(self.comm(), local)
    }

    /// [`Self::settle`] that also gathers each rank's `size(result)` (0
    /// where it failed) in the same exchange.
    pub(crate) fn settle_sized<R>(
        &self,
        local: Result<R>,
        size: impl Fn(&R) -> usize,
    ) -> Result<(R, Vec<u64>)> {
        settle_with(self.comm(), local, size)
    }

    /// Every rank's `local` rows, concatenated in rank order, on every rank.
    pub fn gather_rows<T: Pod>(&self, local: &[T]) -> Result<Vec<T>> {
        self.comm().all_gather_concat(local)
    }

    /// CSR-shaped row blocks (offsets from 0 per rank, and the arrays they
    /// index), stacked in rank order on every rank.
    pub(crate) fn gather_csr_parts<A: Pod, B: Pod>(
        &self,
        offsets: &[usize],
        first: &[A],
        second: &[B],
    ) -> Result<(Vec<usize>, Vec<A>, Vec<B>)> {
        let counts: Vec<u64> = offsets.windows(2).map(|w| (w[1] - w[0]) as u64).collect();
        let counts = self.gather_rows(&counts)?;
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        offsets.push(0usize);
        for c in counts {
            offsets.push(offsets[offsets.len() - 1] + c as usize);
        }
        Ok((offsets, self.gather_rows(first)?, self.gather_rows(second)?))
    }
}

/// The scalar types the sharded calls take (f32, f64): each names the
/// primitive traits of a backend in that type, so the calls need no bounds
/// on the backend beyond [`Primitives`].
pub trait ShardScalar: Scalar + sealed::Sealed {
    /// The backend's GEMM in this type.
    fn gemm(b: &dyn Primitives) -> &dyn DenseGemm<Self>;
    /// The backend's SpGEMM in this type.
    fn spgemm(b: &dyn Primitives) -> &dyn SparseGemm<Self>;
    /// The backend's Batch-OMP in this type.
    fn coder(b: &dyn Primitives) -> &dyn SparseCoder<Self>;
}

/// Coordinate types of the sharded NearestPairs calls (f32, f64).
pub trait ShardCoord: Coord + ShardScalar {
    /// The backend's NearestPairs in this type.
    fn pairs(b: &dyn Primitives) -> &dyn NearestPairs<Self>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

macro_rules! shard_types {
    ($($t:ty),*) => {$(
        impl ShardScalar for $t {
            fn gemm(b: &dyn Primitives) -> &dyn DenseGemm<$t> {
                b
            }
            fn spgemm(b: &dyn Primitives) -> &dyn SparseGemm<$t> {
                b
            }
            fn coder(b: &dyn Primitives) -> &dyn SparseCoder<$t> {
                b
            }
        }
        impl ShardCoord for $t {
            fn pairs(b: &dyn Primitives) -> &dyn NearestPairs<$t> {
                b
            }
        }
    )*};
}
shard_types!(f32, f64);

/// An even cut of `n` rows into `parts`: part `i`'s range (the first
/// `n % parts` parts one row longer).
pub fn even_split(n: usize, parts: usize, i: usize) -> Range<usize> {
    let parts = parts.max(1);
    let (q, r) = (n / parts, n % parts);
    let start = i * q + i.min(r);
    start..start + q + usize::from(i < r)
}

/// Cuts rows of the given `work` into `parts` contiguous ranges of about
/// equal total work (each range at least as long as it must be for the
/// total to reach its share): how power-law rows are balanced.
pub fn split_by_work(work: &[u64], parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    let total: u128 = work.iter().map(|&w| u128::from(w)).sum();
    let mut cuts = Vec::with_capacity(parts);
    let (mut start, mut acc) = (0usize, 0u128);
    let mut row = 0usize;
    for p in 1..parts {
        let target = total * p as u128 / parts as u128;
        while row < work.len() && acc + u128::from(work[row]) / 2 < target {
            acc += u128::from(work[row]);
            row += 1;
        }
        cuts.push(start..row);
        start = row;
    }
    cuts.push(start..work.len());
    cuts
}

/// A scalar's bits as a `u64`, for [`Sharded::agree`].
pub(crate) fn bits<T: Pod>(x: T) -> u64 {
    let bytes = bytemuck::bytes_of(&x);
    let mut w = [0u8; 8];
    let n = bytes.len().min(8);
    w[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(w)
}

/// A 64-bit digest of `data`'s bytes, for telling replicas apart (not a
/// cryptographic hash: it guards against mistakes, not adversaries).
pub fn digest<T: Pod>(data: &[T]) -> u64 {
    let bytes: &[u8] = bytemuck::cast_slice(data);
    let mut h = 0x9E37_79B9_7F4A_7C15u64 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
        h = (h ^ w).wrapping_mul(0xFF51_AFD7_ED55_8CCD).rotate_left(31);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b))
            .wrapping_mul(0xC4CE_B9FE_1A85_EC53)
            .rotate_left(17);
    }
    h ^ (h >> 33)
}

/// [`Sharded::settle`] on any communicator: every rank's outcome, so that a
/// failure anywhere is an error everywhere.
pub(crate) fn settle<R>(comm: &dyn Communicator, local: Result<R>) -> Result<R> {
    settle_with(comm, local, |_| 0).map(|(r, _)| r)
}

/// [`settle`] with each rank's `size(result)` gathered beside its outcome.
fn settle_with<R>(
    comm: &dyn Communicator,
    local: Result<R>,
    size: impl Fn(&R) -> usize,
) -> Result<(R, Vec<u64>)> {
    let code = match &local {
        Ok(_) => 0,
        Err(Error::BackendUnavailable(_)) => 1,
        Err(_) => 2,
    };
    let mine = [code, local.as_ref().map_or(0, size) as u64];
    let all = comm.all_gather_fixed(&mine)?;
    let codes: Vec<u64> = all.iter().step_by(2).copied().collect();
    if codes.iter().all(|&c| c == 0) {
        let sizes = all.iter().skip(1).step_by(2).copied().collect();
        return local.map(|r| (r, sizes));
    }
    let text = local
        .as_ref()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let texts = comm.all_gather_vec(text.as_bytes())?;
    let said = |r: usize| String::from_utf8_lossy(&texts[r]).into_owned();
    if let Some(r) = codes.iter().position(|&c| c == 1) {
        return match local {
            Err(e @ Error::BackendUnavailable(_)) => Err(e),
            _ => Err(Error::BackendUnavailable(format!(
                "on rank {r}: {}",
                said(r)
            ))),
        };
    }
    match local {
        Err(e) => Err(e),
        Ok(_) => {
            let r = codes.iter().position(|&c| c != 0).unwrap_or(comm.rank());
            Err(Error::RankFailed {
                rank: r,
                detail: said(r),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_split_covers_every_row_once() {
        for n in [0, 1, 5, 17, 100] {
            for parts in 1..6 {
                let ranges: Vec<_> = (0..parts).map(|i| even_split(n, parts, i)).collect();
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges[parts - 1].end, n);
                assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
                assert!(ranges.iter().all(|r| r.len() <= n / parts + 1));
            }
        }
    }

    #[test]
    fn split_by_work_balances_power_law_rows() {
        // One heavy row and many light ones: the heavy row is a part alone.
        let mut work = vec![1u64; 1000];
        work[10] = 1000;
        let parts = split_by_work(&work, 2);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].start, 0);
        assert_eq!(parts[1].end, 1000);
        assert_eq!(parts[0].end, parts[1].start);
        let sum = |r: &Range<usize>| work[r.clone()].iter().sum::<u64>();
        assert!(sum(&parts[0]).abs_diff(sum(&parts[1])) <= 1000, "{parts:?}");
        assert_eq!(split_by_work(&[], 3), vec![0..0, 0..0, 0..0]);
        let even = split_by_work(&[1; 9], 3);
        assert_eq!(even, vec![0..3, 3..6, 6..9]);
    }

    #[test]
    fn digest_tells_replicas_apart() {
        let a = [1.0f32, 2.0, 3.0];
        let mut b = a;
        assert_eq!(digest(&a), digest(&b));
        b[2] = 3.000_001;
        assert_ne!(digest(&a), digest(&b));
        assert_ne!(digest(&a[..2]), digest(&a));
    }
}
