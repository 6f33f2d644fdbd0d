//! NearestPairs across ranks. A (the queries) is partitioned: each rank
//! passes its rows, and `nearest`, `knn`, `within` answer for them, with
//! indices into the whole B. B is replicated (every rank passes all of it),
//! or, with the `_ring` calls, partitioned and passed round the ring of
//! ranks so no rank holds more than its part. `closest_pairs` merges every
//! rank's candidates into the same `k` pairs on every rank, under the tie
//! rule of one device; `self_pairs` cuts the rows of a replicated set.

use std::cmp::Ordering;
use std::ops::Range;

use trident_core::{Error, Neighbor, Pair, Point, RadiusNeighbors, Result};

use crate::comm::{CommExt, ReduceOp};
use crate::sharded::{ShardCoord, Sharded, bits, even_split};

/// The largest candidate exchange done as one fixed-size gather (u64 words
/// over all ranks); a larger `k` gathers variable-length rows instead.
const FIXED_GATHER_WORDS: usize = 1 << 16;

fn type_code<T: ShardCoord>() -> u64 {
    std::mem::size_of::<T>() as u64
}

/// `(d2, j)` order of neighbours, as every backend sorts them.
fn by_d2_then_index<T: ShardCoord>(x: &Neighbor<T>, y: &Neighbor<T>) -> Ordering {
    x.d2.partial_cmp(&y.d2)
        .unwrap_or(Ordering::Equal)
        .then(x.index.cmp(&y.index))
}

impl<'a> Sharded<'a> {
    fn points_agree<T: ShardCoord>(
        &self,
        b: &[Point<T>],
        extra: &[(&'static str, u64)],
    ) -> Result<()> {
        self.agree(&self.points_items(b, extra))
    }

    /// What every rank must pass alike for a call on the replicated B.
    fn points_items<T: ShardCoord>(
        &self,
        b: &[Point<T>],
        extra: &[(&'static str, u64)],
    ) -> Vec<(&'static str, u64)> {
        let mut items = vec![
            ("b.len", b.len() as u64),
            ("coordinate type", type_code::<T>()),
        ];
        items.extend_from_slice(extra);
        items.push(self.replica("b (contents)", b));
        items
    }

    /// `nearest` for this rank's rows of A against the replicated B: `out`
    /// holds one neighbour per local row, indices into B.
    pub fn nearest<T: ShardCoord>(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        out: &mut [Neighbor<T>],
    ) -> Result<()> {
        self.points_agree(b, &[])?;
        self.settle(T::pairs(self.backend()).nearest(a, b, out))
    }

    /// `knn` for this rank's rows of A against the replicated B.
    pub fn knn<T: ShardCoord>(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        k: usize,
        out: &mut [Neighbor<T>],
    ) -> Result<()> {
        self.points_agree(b, &[("k", k as u64)])?;
        self.settle(T::pairs(self.backend()).knn(a, b, k, out))
    }

    /// The `k` closest pairs over all ranks' rows of A (indices `a` in the
    /// global numbering: rank order, then local order), the same list on
    /// every rank and the same as one device's.
    pub fn closest_pairs<T: ShardCoord>(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        k: usize,
    ) -> Result<Vec<Pair<T>>> {
        let items = self.points_items(b, &[("k", k as u64)]);
        self.closest_across(&items, a.len(), k, || {
            T::pairs(self.backend()).closest_pairs(a, b, k)
        })
    }

    /// Every sharded `closest_pairs`: the agreement on `items` and the rows'
    /// offsets in one exchange, the local call's outcome and length in a
    /// second, the candidates merged from a third: three collectives
    /// whatever the number of ranks (each costs about 0.1 ms through NCCL's
    /// host staging; the 18 of four ranks before cost 1.8 ms).
    pub(crate) fn closest_across<T: ShardCoord>(
        &self,
        items: &[(&'static str, u64)],
        local_rows: usize,
        k: usize,
        local: impl FnOnce() -> Result<Vec<Pair<T>>>,
    ) -> Result<Vec<Pair<T>>> {
        let (first, _) = self.agree_rows(items, local_rows)?;
        let (local, lens) = self.settle_sized(local(), Vec::len)?;
        self.merge_closest(first, &local, &lens, k)
    }

    /// The `k` closest pairs over all ranks from each rank's own `k`
    /// closest (`first`: this rank's first row of A; `lens`: every rank's
    /// count), under one device's tie rule (distance, then the global row
    /// of A).
    pub(crate) fn merge_closest<T: ShardCoord>(
        &self,
        first: usize,
        local: &[Pair<T>],
        lens: &[u64],
        k: usize,
    ) -> Result<Vec<Pair<T>>> {
        let global = |p: &Pair<T>| (first + p.a as usize) as u64;
        let row = |a: u64| {
            u32::try_from(a).map_err(|_| Error::TooLarge {
                field: "a.len",
                value: u128::from(a) + 1,
                limit: u128::from(u32::MAX),
            })
        };
        let most = lens.iter().copied().max().unwrap_or(0) as usize;
        let mut all: Vec<Pair<T>> = Vec::with_capacity(lens.iter().sum::<u64>() as usize);
        if 3 * most * lens.len() <= FIXED_GATHER_WORDS {
            // One exchange: each rank's pairs as (row, b, d2 widened to f64,
            // exactly) in `most` slots.
            let mut mine = vec![0u64; 3 * most];
            for (slot, p) in mine.chunks_exact_mut(3).zip(local) {
                slot.copy_from_slice(&[global(p), u64::from(p.b), p.d2.to_f64().to_bits()]);
            }
            let words = self.comm().all_gather_fixed(&mine)?;
            for (r, &len) in lens.iter().enumerate() {
                for w in words[3 * most * r..].chunks_exact(3).take(len as usize) {
                    all.push(Pair {
                        a: row(w[0])?,
                        b: w[1] as u32,
                        d2: T::from_f64(f64::from_bits(w[2])),
                    });
                }
            }
        } else {
            let ia: Vec<u64> = local.iter().map(global).collect();
            let ib: Vec<u32> = local.iter().map(|p| p.b).collect();
            let d2: Vec<T> = local.iter().map(|p| p.d2).collect();
            let (ia, ib, d2) = (
                self.gather_rows(&ia)?,
                self.gather_rows(&ib)?,
                self.gather_rows(&d2)?,
            );
            for ((&a, &b), &d2) in ia.iter().zip(&ib).zip(&d2) {
                all.push(Pair { a: row(a)?, b, d2 });
            }
        }
        all.sort_by(|x, y| {
            x.d2.partial_cmp(&y.d2)
                .unwrap_or(Ordering::Equal)
                .then(x.a.cmp(&y.a))
        });
        all.truncate(k);
        Ok(all)
    }

    /// `within` for this rank's rows of A against the replicated B.
    /// `max_pairs` bounds the pairs over all ranks: past it the call is
    /// `TooLarge` on every rank.
    pub fn within<T: ShardCoord>(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        r: T,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors<T>> {
        self.points_agree(b, &[("r", bits(r)), ("max_pairs", max_pairs as u64)])?;
        let local = self.settle(T::pairs(self.backend()).within(a, b, r, max_pairs))?;
        self.total_within(local.len(), max_pairs)?;
        Ok(local)
    }

    fn total_within(&self, local: usize, max_pairs: usize) -> Result<()> {
        let mut total = [local as u64];
        self.comm().all_reduce_u64(&mut total, ReduceOp::Sum)?;
        trident_core::validate::radius_count(u128::from(total[0]), max_pairs)
    }

    /// `self_pairs` of the replicated `p`, cut by rows: this rank answers
    /// the rows of the returned range (an even cut), each with its `j > i`.
    pub fn self_pairs<T: ShardCoord>(
        &self,
        p: &[Point<T>],
        r: T,
        max_pairs: usize,
    ) -> Result<(Range<usize>, RadiusNeighbors<T>)> {
        self.points_agree(p, &[("r", bits(r)), ("max_pairs", max_pairs as u64)])?;
        let rows = even_split(p.len(), self.cluster().size(), self.cluster().rank());
        // Rows against the whole set find every pair twice and each point
        // itself: the local bound allows for that, the total below is exact.
        let cap = max_pairs.saturating_mul(2).saturating_add(rows.len());
        let local = T::pairs(self.backend())
            .within(&p[rows.clone()], p, r, cap)
            .map(|all| {
                let mut out = RadiusNeighbors {
                    offsets: Vec::with_capacity(rows.len() + 1),
                    indices: Vec::new(),
                    d2: Vec::new(),
                };
                out.offsets.push(0);
                for (row, i) in rows.clone().enumerate() {
                    let (s, e) = (all.offsets[row], all.offsets[row + 1]);
                    for t in s..e {
                        if all.indices[t] as usize > i {
                            out.indices.push(all.indices[t]);
                            out.d2.push(all.d2[t]);
                        }
                    }
                    out.offsets.push(out.indices.len());
                }
                out
            });
        let local = self.settle(local)?;
        self.total_within(local.len(), max_pairs)?;
        Ok((rows, local))
    }

    /// `nearest` with B partitioned: each rank passes its part of B (the
    /// global index of a point of B counts the parts in rank order), and the
    /// parts travel round the ring, so no rank ever holds more than the
    /// largest part. Same answer as replicated B.
    pub fn nearest_ring<T: ShardCoord>(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        out: &mut [Neighbor<T>],
    ) -> Result<()> {
        self.knn_ring(a, b, 1, out)
    }

    /// `knn` with B partitioned and passed round the ring (see
    /// [`Sharded::nearest_ring`]); `k` counts over the whole B.
    pub fn knn_ring<T: ShardCoord>(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        k: usize,
        out: &mut [Neighbor<T>],
    ) -> Result<()> {
        self.agree(&[("k", k as u64), ("coordinate type", type_code::<T>())])?;
        let lens = self.comm().all_gather_u64(b.len() as u64)?;
        let total: u64 = lens.iter().sum();
        let checked = trident_core::validate::points("a", a)
            .and_then(|()| trident_core::validate::points("b", b))
            .and_then(|()| {
                if total == 0 && k > 0 {
                    Err(Error::arg(
                        "b",
                        "B is empty on every rank: there is no nearest point",
                    ))
                } else if k as u64 > total {
                    Err(Error::arg(
                        "k",
                        format!("k = {k} exceeds |B| = {total} over all ranks"),
                    ))
                } else if out.len() != a.len() * k {
                    Err(Error::dim(
                        "out",
                        format!(
                            "{} neighbours for {} points and k = {k}",
                            out.len(),
                            a.len()
                        ),
                    ))
                } else {
                    Ok(())
                }
            });
        self.settle(checked)?;
        if k == 0 {
            return Ok(());
        }
        let (p, me) = (self.cluster().size(), self.cluster().rank());
        let start = |r: usize| lens[..r].iter().sum::<u64>() as u32;
        let mut best: Vec<Vec<Neighbor<T>>> = vec![Vec::with_capacity(k); a.len()];
        let mut part: Vec<Point<T>> = b.to_vec();
        let mut origin = me;
        for step in 0..p {
            if !part.is_empty() && !a.is_empty() {
                let kk = k.min(part.len());
                let mut found = vec![Neighbor::<T>::default(); a.len() * kk];
                let local = T::pairs(self.backend()).knn(a, &part, kk, &mut found);
                self.settle(local)?;
                let base = start(origin);
                for (i, list) in best.iter_mut().enumerate() {
                    list.extend(found[i * kk..(i + 1) * kk].iter().map(|n| Neighbor {
                        index: n.index + base,
                        d2: n.d2,
                    }));
                    list.sort_by(by_d2_then_index);
                    list.truncate(k);
                }
            } else {
                self.settle(Ok(()))?;
            }
            if step + 1 < p {
                let flat: &[T] = bytemuck::cast_slice(&part);
                let got = self.comm().ring_shift(flat)?;
                part = bytemuck::cast_slice::<T, Point<T>>(&got).to_vec();
                origin = (origin + p - 1) % p;
            }
        }
        for (i, list) in best.iter().enumerate() {
            out[i * k..(i + 1) * k].copy_from_slice(list);
        }
        Ok(())
    }

    /// Every rank's neighbours (one `nearest` or `knn` output each), in rank
    /// order, on every rank.
    pub fn gather_neighbors<T: ShardCoord>(
        &self,
        local: &[Neighbor<T>],
    ) -> Result<Vec<Neighbor<T>>> {
        let index: Vec<u32> = local.iter().map(|n| n.index).collect();
        let d2: Vec<T> = local.iter().map(|n| n.d2).collect();
        let (index, d2) = (self.gather_rows(&index)?, self.gather_rows(&d2)?);
        Ok(index
            .into_iter()
            .zip(d2)
            .map(|(index, d2)| Neighbor { index, d2 })
            .collect())
    }

    /// Every rank's rows of a radius search, stacked in rank order.
    pub fn gather_radius<T: ShardCoord>(
        &self,
        local: &RadiusNeighbors<T>,
    ) -> Result<RadiusNeighbors<T>> {
        let (offsets, indices, d2) =
            self.gather_csr_parts(&local.offsets, &local.indices, &local.d2)?;
        Ok(RadiusNeighbors {
            offsets,
            indices,
            d2,
        })
    }
}
