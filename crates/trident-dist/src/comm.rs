//! The communicator the sharded primitives are written against: the handful of
//! collectives they need, on host buffers, with an MPI and an NCCL
//! implementation behind it (and [`Solo`], one rank). Everything richer
//! (typed arrays, variable-length gathers) is built here once, on top of the
//! five byte-level operations, so each transport implements only those (and
//! [`Communicator::split`], which only the transport can do).

use bytemuck::Pod;
use trident_core::{Error, Result};

/// Element-wise reduction of [`Communicator::all_reduce_u64`] and
/// [`Communicator::all_reduce_f64`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReduceOp {
    /// The sum over ranks.
    Sum,
    /// The smallest value over ranks.
    Min,
    /// The largest value over ranks.
    Max,
}

/// The collectives of one group of ranks. Every method is collective: all
/// ranks call it in the same order with agreeing arguments (the sharded
/// primitives check what can disagree before they exchange data).
///
/// Host buffers throughout: MPI moves them directly, NCCL stages them
/// through device memory and moves them over NVLink or the network.
pub trait Communicator: Send + Sync {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// `"mpi"`, `"nccl"` or `"solo"`.
    fn transport(&self) -> &'static str;
    /// Returns once every rank has called it.
    fn barrier(&self) -> Result<()>;
    /// Copies `root`'s `buf` into every other rank's `buf` (equal lengths).
    fn broadcast(&self, root: usize, buf: &mut [u8]) -> Result<()>;
    /// Replaces `buf` by its element-wise reduction over ranks.
    fn all_reduce_u64(&self, buf: &mut [u64], op: ReduceOp) -> Result<()>;
    /// Replaces `buf` by its element-wise reduction over ranks (the order in
    /// which ranks are summed is the transport's: use it for decisions, not
    /// for results that must be bit-identical to one device).
    fn all_reduce_f64(&self, buf: &mut [f64], op: ReduceOp) -> Result<()>;
    /// Sends `send` to rank `to` while receiving `recv` from rank `from`: one
    /// step of a ring, deadlock-free whatever the order ranks arrive in.
    fn shift(&self, send: &[u8], to: usize, recv: &mut [u8], from: usize) -> Result<()>;
    /// Cuts the group into sub-groups, as `MPI_Comm_split` does: the ranks
    /// that pass the same `color` form one group, ranked by `key`, then by
    /// their rank here. Collective over this group; each rank gets the
    /// communicator of its own sub-group, independent of this one (either
    /// may be used, or dropped, without the other). `color` and `key` must
    /// fit an `i32` (the transports' type): a larger one on any rank is the
    /// same `InvalidArgument` on every rank.
    fn split(&self, color: usize, key: usize) -> Result<Box<dyn Communicator>>;
    /// The moves between device memory this transport offers, if any
    /// (NCCL's; MPI here moves host buffers only).
    fn device_link(&self) -> Option<&dyn DeviceLink> {
        None
    }
}

/// A run of device memory on this rank's GPU and the rank at the other
/// end: what [`DeviceLink::exchange`] sends or receives.
#[derive(Clone, Copy, Debug)]
pub struct DeviceRegion {
    /// Device address (`CUdeviceptr`) on the communicator's GPU.
    pub ptr: u64,
    /// Length in bytes.
    pub bytes: usize,
    /// The rank this run goes to (a send) or comes from (a receive).
    pub peer: usize,
}

/// Point-to-point moves between the ranks' device memory (NCCL's send and
/// receive), for calls whose data already lives on the GPUs and would only
/// lose time going through host buffers.
pub trait DeviceLink {
    /// Posts every send and receive as one group and waits for them all.
    ///
    /// # Safety
    /// Every region is `bytes` bytes of live device memory on this rank's
    /// GPU (the communicator's), with no work of another stream pending on
    /// it; receives do not overlap each other or any send. The peers post
    /// the matching operations (same sizes, same order per pair of ranks).
    unsafe fn exchange(&self, sends: &[DeviceRegion], recvs: &[DeviceRegion]) -> Result<()>;
}

/// One rank, no transport: what a process launched without `mpirun`,
/// `torchrun` or Slurm gets, so the sharded calls run unchanged.
#[derive(Clone, Copy, Debug, Default)]
pub struct Solo;

impl Communicator for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn transport(&self) -> &'static str {
        "solo"
    }
    fn barrier(&self) -> Result<()> {
        Ok(())
    }
    fn broadcast(&self, root: usize, _buf: &mut [u8]) -> Result<()> {
        check_rank("root", root, 1)
    }
    fn all_reduce_u64(&self, _buf: &mut [u64], _op: ReduceOp) -> Result<()> {
        Ok(())
    }
    fn all_reduce_f64(&self, _buf: &mut [f64], _op: ReduceOp) -> Result<()> {
        Ok(())
    }
    fn shift(&self, send: &[u8], to: usize, recv: &mut [u8], from: usize) -> Result<()> {
        check_rank("to", to, 1)?;
        check_rank("from", from, 1)?;
        if send.len() != recv.len() {
            return Err(Error::dim(
                "recv",
                format!("{} bytes sent to self, {} expected", send.len(), recv.len()),
            ));
        }
        recv.copy_from_slice(send);
        Ok(())
    }
    fn split(&self, color: usize, key: usize) -> Result<Box<dyn Communicator>> {
        split_place(self, color, key)?;
        Ok(Box::new(Solo))
    }
}

/// This rank's place after [`Communicator::split`]: its rank in its
/// sub-group and the sub-group's size. Every rank's color and key are
/// gathered first, so a value no transport can take is the same error on
/// every rank, and the transports' own answer can be checked against it.
pub(crate) fn split_place<C: Communicator + ?Sized>(
    parent: &C,
    color: usize,
    key: usize,
) -> Result<(usize, usize)> {
    let all = parent.all_gather_fixed(&[color as u64, key as u64])?;
    let limit = i32::MAX as u64;
    for (r, pair) in all.chunks_exact(2).enumerate() {
        for (field, v) in [("color", pair[0]), ("key", pair[1])] {
            if v > limit {
                return Err(Error::arg(
                    field,
                    format!("rank {r} passed {v}; a split takes at most {limit} (an int)"),
                ));
            }
        }
    }
    Ok(place_in(&all, parent.rank()))
}

/// Rank `me`'s rank and group size among `(color, key)` pairs in parent
/// rank order: same color, ordered by key, then parent rank.
fn place_in(all: &[u64], me: usize) -> (usize, usize) {
    let color = all[2 * me];
    let mut group: Vec<(u64, usize)> = all
        .chunks_exact(2)
        .enumerate()
        .filter(|(_, pair)| pair[0] == color)
        .map(|(r, pair)| (pair[1], r))
        .collect();
    group.sort_unstable();
    let rank = group.iter().position(|&(_, r)| r == me).unwrap_or(0);
    (rank, group.len())
}

/// `Backend` unless a transport's sub-communicator has the rank and size
/// [`split_place`] worked out (a transport that ordered the group some other
/// way would number the ranks wrongly, silently).
#[cfg(any(feature = "mpi", feature = "nccl"))]
pub(crate) fn check_place(got: (usize, usize), want: (usize, usize)) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::Backend(
            format!(
                "the split communicator is rank {} of {}, but the colors and keys place this rank {} of {}",
                got.0, got.1, want.0, want.1
            )
            .into(),
        ))
    }
}

/// `InvalidArgument` unless `rank < size`.
pub(crate) fn check_rank(field: &'static str, rank: usize, size: usize) -> Result<()> {
    if rank < size {
        Ok(())
    } else {
        Err(Error::arg(
            field,
            format!("rank {rank} does not exist in a group of {size}"),
        ))
    }
}

/// Typed and variable-length exchanges, built on the byte-level operations
/// of every [`Communicator`].
pub trait CommExt: Communicator {
    /// `root`'s `value` on every rank (`None` on the others): its length
    /// first, then its elements.
    fn broadcast_vec<T: Pod>(&self, root: usize, value: Option<&[T]>) -> Result<Vec<T>> {
        check_rank("root", root, self.size())?;
        let mut len = [0u64];
        if self.rank() == root {
            let v = value.ok_or_else(|| Error::arg("value", "the root must pass its value"))?;
            len[0] = v.len() as u64;
        }
        self.broadcast(root, bytemuck::cast_slice_mut(&mut len))?;
        let len = usize::try_from(len[0]).map_err(|_| Error::TooLarge {
            field: "broadcast length",
            value: u128::from(len[0]),
            limit: usize::MAX as u128,
        })?;
        let mut out = match value {
            Some(v) if self.rank() == root => v.to_vec(),
            _ => vec![T::zeroed(); len],
        };
        self.broadcast(root, bytemuck::cast_slice_mut(&mut out))?;
        Ok(out)
    }

    /// One `u64` from every rank, in rank order.
    fn all_gather_u64(&self, mine: u64) -> Result<Vec<u64>> {
        let mut all = vec![0u64; self.size()];
        all[self.rank()] = mine;
        self.all_reduce_u64(&mut all, ReduceOp::Sum)?;
        Ok(all)
    }

    /// Equal-length rows from every rank, concatenated in rank order
    /// (`size * mine.len()` values).
    fn all_gather_fixed(&self, mine: &[u64]) -> Result<Vec<u64>> {
        let (n, r) = (mine.len(), self.rank());
        let mut all = vec![0u64; self.size() * n];
        all[r * n..(r + 1) * n].copy_from_slice(mine);
        self.all_reduce_u64(&mut all, ReduceOp::Sum)?;
        Ok(all)
    }

    /// Every rank's `mine`, of any length, in rank order, on every rank: the
    /// lengths first, then one broadcast from each rank.
    fn all_gather_vec<T: Pod>(&self, mine: &[T]) -> Result<Vec<Vec<T>>> {
        let lens = self.all_gather_u64(mine.len() as u64)?;
        let mut out = Vec::with_capacity(self.size());
        for (root, &len) in lens.iter().enumerate() {
            let mut v = if root == self.rank() {
                mine.to_vec()
            } else {
                vec![T::zeroed(); len as usize]
            };
            self.broadcast(root, bytemuck::cast_slice_mut(&mut v))?;
            out.push(v);
        }
        Ok(out)
    }

    /// [`CommExt::all_gather_vec`], concatenated.
    fn all_gather_concat<T: Pod>(&self, mine: &[T]) -> Result<Vec<T>> {
        Ok(self.all_gather_vec(mine)?.concat())
    }

    /// Sends `send` one step round the ring (to `rank + 1`) and returns what
    /// came from `rank - 1`; lengths may differ between ranks.
    fn ring_shift<T: Pod>(&self, send: &[T]) -> Result<Vec<T>> {
        let (r, p) = (self.rank(), self.size());
        let (to, from) = ((r + 1) % p, (r + p - 1) % p);
        let lens = self.all_gather_u64(send.len() as u64)?;
        let mut recv = vec![T::zeroed(); lens[from] as usize];
        self.shift(
            bytemuck::cast_slice(send),
            to,
            bytemuck::cast_slice_mut(&mut recv),
            from,
        )?;
        Ok(recv)
    }
}

impl<C: Communicator + ?Sized> CommExt for C {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solo_exchanges_are_identities() {
        let c = Solo;
        assert_eq!(
            c.broadcast_vec(0, Some(&[1u32, 2, 3][..])).unwrap(),
            [1, 2, 3]
        );
        assert_eq!(
            c.all_gather_vec(&[4.0f64, 5.0]).unwrap(),
            vec![vec![4.0, 5.0]]
        );
        assert_eq!(c.all_gather_u64(7).unwrap(), [7]);
        assert_eq!(c.ring_shift(&[9u8, 8]).unwrap(), [9, 8]);
        let mut x = [3u64, 4];
        c.all_reduce_u64(&mut x, ReduceOp::Max).unwrap();
        assert_eq!(x, [3, 4]);
    }

    #[test]
    fn split_places_by_color_then_key_then_rank() {
        // Ranks 0..5 with (color, key): two groups, keys reversing one.
        let all = [0, 9, 1, 0, 0, 3, 1, 0, 0, 3];
        assert_eq!(place_in(&all, 0), (2, 3));
        assert_eq!(place_in(&all, 2), (0, 3)); // key 3 ties: parent rank 2 first
        assert_eq!(place_in(&all, 4), (1, 3));
        assert_eq!(place_in(&all, 1), (0, 2));
        assert_eq!(place_in(&all, 3), (1, 2));
        let solo = Solo.split(7, 2).unwrap();
        assert_eq!((solo.rank(), solo.size()), (0, 1));
        let err = Solo.split(1 << 31, 0).err().unwrap();
        assert!(err.to_string().contains("color"), "{err}");
    }

    #[test]
    fn ranks_outside_the_group_are_named() {
        let err = Solo.broadcast_vec::<u8>(1, None).unwrap_err();
        assert!(err.to_string().contains("root"), "{err}");
        let err = Solo.shift(&[1], 0, &mut [0, 0], 0).unwrap_err();
        assert!(err.to_string().contains("recv"), "{err}");
    }
}
