//! [`Grid2d`]: the ranks laid out as a `pr x pc` process grid, with the
//! communicators of this rank's process row and process column, for the
//! 2-D (SUMMA) calls; and the k-panels those calls step through.

use std::fmt;
use std::ops::Range;

use trident_core::{Error, Result};

use crate::comm::{CommExt, Communicator};
use crate::sharded::even_split;

/// The ranks of a group as a `pr x pc` grid, row-major: rank `r` sits at
/// process row `r / pc`, process column `r % pc`. It owns the communicators
/// of this rank's process row (its `pc` ranks, ranked by column) and
/// process column (its `pr` ranks, ranked by row), split from the group
/// once so that every 2-D call reuses them.
///
/// Every matrix of a 2-D call is cut the same way: its rows into `pr`
/// parts and its columns into `pc` parts by [`even_split`], and the rank at
/// `(i, j)` holds block `(i, j)` ([`Grid2d::block`]).
pub struct Grid2d {
    pr: usize,
    pc: usize,
    row: usize,
    col: usize,
    row_comm: Box<dyn Communicator>,
    col_comm: Box<dyn Communicator>,
}

impl fmt::Debug for Grid2d {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grid2d")
            .field("shape", &(self.pr, self.pc))
            .field("pos", &(self.row, self.col))
            .field("transport", &self.row_comm.transport())
            .finish()
    }
}

impl Grid2d {
    /// The most nearly square grid of `size` ranks: `pr * pc == size` with
    /// `pr <= pc`, `pr` the largest divisor of `size` not above its square
    /// root (so a prime count is `1 x size`).
    pub fn square_ish(size: usize) -> (usize, usize) {
        let size = size.max(1);
        let pr = (1..=size)
            .take_while(|d| d * d <= size)
            .filter(|&d| size.is_multiple_of(d))
            .last()
            .unwrap_or(1);
        (pr, size / pr)
    }

    /// [`Grid2d::new`] with the shape [`Grid2d::square_ish`] picks for the
    /// group's size.
    pub fn square(comm: &dyn Communicator) -> Result<Self> {
        let (pr, pc) = Self::square_ish(comm.size());
        Self::new(comm, pr, pc)
    }

    /// A `pr x pc` grid of the ranks of `comm` (collective: every rank
    /// passes the same shape). `pr * pc` must be the group's size; a shape
    /// that is not, or that differs between ranks, is the same
    /// `InvalidArgument` on every rank.
    pub fn new(comm: &dyn Communicator, pr: usize, pc: usize) -> Result<Self> {
        let all = comm.all_gather_fixed(&[pr as u64, pc as u64])?;
        for (r, pair) in all.chunks_exact(2).enumerate() {
            for (field, v, first) in [("pr", pair[0], all[0]), ("pc", pair[1], all[1])] {
                if v != first {
                    return Err(Error::arg(
                        field,
                        format!(
                            "ranks disagree on the grid: rank {r} passed {v} where rank 0 passed {first}"
                        ),
                    ));
                }
            }
        }
        let size = comm.size();
        if pr.checked_mul(pc) != Some(size) {
            return Err(Error::arg(
                "pr x pc",
                format!(
                    "a {pr} x {pc} grid needs {} ranks; the group has {size}",
                    pr as u128 * pc as u128
                ),
            ));
        }
        let (row, col) = (comm.rank() / pc, comm.rank() % pc);
        let row_comm = comm.split(row, col)?;
        let col_comm = comm.split(col, row)?;
        Ok(Grid2d {
            pr,
            pc,
            row,
            col,
            row_comm,
            col_comm,
        })
    }

    /// `(pr, pc)`: process rows and process columns.
    pub fn shape(&self) -> (usize, usize) {
        (self.pr, self.pc)
    }

    /// `(row, column)` of this rank in the grid.
    pub fn pos(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// This rank in the group the grid was made from (`row * pc + col`).
    pub fn rank(&self) -> usize {
        self.row * self.pc + self.col
    }

    /// Ranks in the grid (`pr * pc`).
    pub fn size(&self) -> usize {
        self.pr * self.pc
    }

    /// The ranks of this rank's process row, ranked by column.
    pub fn row_comm(&self) -> &dyn Communicator {
        self.row_comm.as_ref()
    }

    /// The ranks of this rank's process column, ranked by row.
    pub fn col_comm(&self) -> &dyn Communicator {
        self.col_comm.as_ref()
    }

    /// The rows and columns of a `rows x cols` matrix that this rank holds.
    pub fn block(&self, rows: usize, cols: usize) -> (Range<usize>, Range<usize>) {
        self.block_of(self.rank(), rows, cols)
    }

    /// The rows and columns of a `rows x cols` matrix that rank `r` of the
    /// grid holds (for gathering the blocks).
    pub fn block_of(&self, r: usize, rows: usize, cols: usize) -> (Range<usize>, Range<usize>) {
        let (i, j) = (r / self.pc.max(1), r % self.pc.max(1));
        (even_split(rows, self.pr, i), even_split(cols, self.pc, j))
    }
}

impl Grid2d {
    /// `InvalidArgument` unless this grid was made over the ranks of
    /// `comm` (its size, and this rank at its place).
    pub(crate) fn check_on(&self, comm: &dyn Communicator) -> Result<()> {
        if (self.size(), self.rank()) == (comm.size(), comm.rank()) {
            Ok(())
        } else {
            Err(Error::arg(
                "grid",
                format!(
                    "a {} x {} grid with this rank at {:?} (rank {}), but the cluster is rank {} of {}",
                    self.pr,
                    self.pc,
                    self.pos(),
                    self.rank(),
                    comm.rank(),
                    comm.size()
                ),
            ))
        }
    }
}

/// `DimensionMismatch` naming `field` unless this rank's block is
/// `want` (rows, columns): the grid's cut of the whole matrix.
pub(crate) fn check_block(
    field: &'static str,
    got: (usize, usize),
    want: (usize, usize),
    whole: (usize, usize),
    grid: &Grid2d,
) -> Result<()> {
    if got == want {
        return Ok(());
    }
    let (pr, pc) = grid.shape();
    Err(Error::dim(
        field,
        format!(
            "this rank's block is {} x {}; block {:?} of the {} x {} matrix cut by the {pr} x {pc} grid is {} x {}",
            got.0,
            got.1,
            grid.pos(),
            whole.0,
            whole.1,
            want.0,
            want.1
        ),
    ))
}

/// One step of a 2-D product: a range of the inner dimension k over which
/// A's columns all sit in one process column and B's rows in one process
/// row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Panel {
    /// The range of k.
    pub k: Range<usize>,
    /// The process column holding A's columns `k`.
    pub a_col: usize,
    /// The process row holding B's rows `k`.
    pub b_row: usize,
}

/// The k-panels of a `pr x pc` grid, in increasing k: A's columns are cut
/// into `pc` parts and B's rows into `pr`, so the panels are the common
/// refinement of the two cuts (the sorted union of their boundaries). When
/// `pr == pc` they are the blocks themselves.
pub(crate) fn panels(k: usize, pr: usize, pc: usize) -> Vec<Panel> {
    let mut cuts: Vec<usize> = (0..pc)
        .map(|t| even_split(k, pc, t).start)
        .chain((0..pr).map(|t| even_split(k, pr, t).start))
        .chain([k])
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let owner = |parts: usize, at: usize| {
        (0..parts)
            .find(|&t| even_split(k, parts, t).contains(&at))
            .unwrap_or(0)
    };
    cuts.windows(2)
        .map(|w| Panel {
            k: w[0]..w[1],
            a_col: owner(pc, w[0]),
            b_row: owner(pr, w[0]),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::Solo;

    #[test]
    fn square_ish_is_as_square_as_the_count_allows() {
        assert_eq!(Grid2d::square_ish(1), (1, 1));
        assert_eq!(Grid2d::square_ish(2), (1, 2));
        assert_eq!(Grid2d::square_ish(4), (2, 2));
        assert_eq!(Grid2d::square_ish(6), (2, 3));
        assert_eq!(Grid2d::square_ish(7), (1, 7));
        assert_eq!(Grid2d::square_ish(12), (3, 4));
        assert_eq!(Grid2d::square_ish(16), (4, 4));
        assert_eq!(Grid2d::square_ish(0), (1, 1));
    }

    #[test]
    fn a_grid_of_one() {
        let g = Grid2d::square(&Solo).unwrap();
        assert_eq!(
            (g.shape(), g.pos(), g.rank(), g.size()),
            ((1, 1), (0, 0), 0, 1)
        );
        assert_eq!(g.block(5, 3), (0..5, 0..3));
        let err = Grid2d::new(&Solo, 1, 2).unwrap_err();
        assert!(err.to_string().contains("pr x pc"), "{err}");
    }

    #[test]
    fn panels_refine_both_cuts_of_k() {
        // k = 10: A's columns in 3 parts (0, 4, 7), B's rows in 2 (0, 5).
        let p = panels(10, 2, 3);
        let ks: Vec<_> = p.iter().map(|p| p.k.clone()).collect();
        assert_eq!(ks, vec![0..4, 4..5, 5..7, 7..10]);
        let owners: Vec<_> = p.iter().map(|p| (p.a_col, p.b_row)).collect();
        assert_eq!(owners, vec![(0, 0), (1, 0), (1, 1), (2, 1)]);
        // Square grids: the blocks themselves; k = 0: no panel; k < parts:
        // empty parts add no panel.
        assert_eq!(panels(7, 2, 2).len(), 2);
        assert!(panels(0, 2, 3).is_empty());
        let tiny = panels(2, 1, 3);
        assert_eq!(tiny.len(), 2);
        assert!(tiny.iter().all(|p| !p.k.is_empty()));
    }
}
