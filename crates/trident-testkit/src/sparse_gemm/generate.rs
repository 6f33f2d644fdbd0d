//! Sparse matrix inputs for SpGEMM.

use rand::Rng;
use rand::seq::SliceRandom;
use trident_core::{CsrMatrix, Scalar};

use crate::cases::rng;

/// R-MAT quadrant probabilities `(a, b, c)`; `d = 1 - a - b - c` (Graph500's).
pub const RMAT_ABC: (f64, f64, f64) = (0.57, 0.19, 0.19);

/// One SpGEMM call `C = A * B`.
#[derive(Clone, Debug, PartialEq)]
pub struct SpgemmCase<T> {
    /// Left operand (m x k).
    pub a: CsrMatrix<T>,
    /// Right operand (k x n); a copy of `a` for the `A*A` benchmark cases.
    pub b: CsrMatrix<T>,
}

impl<T: Scalar> SpgemmCase<T> {
    /// `A * A`.
    pub fn square(a: CsrMatrix<T>) -> Self {
        Self { b: a.clone(), a }
    }
}

/// Converts a matrix's values to another scalar type (same structure).
pub fn convert<S: Scalar, T: Scalar>(m: &CsrMatrix<S>) -> CsrMatrix<T> {
    CsrMatrix::new(
        m.rows(),
        m.cols(),
        m.offsets().to_vec(),
        m.indices().to_vec(),
        m.values().iter().map(|v| T::from_f64(v.to_f64())).collect(),
    )
    .expect("same structure as a valid matrix")
}

/// `m` with the value at each `(index, value)` of `at` replaced, built
/// unchecked: the only way a NaN or inf reaches a backend's `spgemm`, whose
/// own checks the tests of non-finite inputs exercise.
pub fn poisoned<T: Scalar>(m: &CsrMatrix<T>, at: &[(usize, T)]) -> CsrMatrix<T> {
    let (o, i, mut v) = m.clone().into_parts();
    for &(k, x) in at {
        v[k] = x;
    }
    CsrMatrix::from_parts_unchecked(m.rows(), m.cols(), o, i, v)
}

/// The 5-point Laplacian on an `n x n` grid: `n^2` rows, 4 on the diagonal, -1
/// for each grid neighbour, `5 n^2 - 4 n` entries. Row `i * n + j` is node
/// `(i, j)`. `spgemm-poisson2d-N` squares it.
pub fn poisson2d<T: Scalar>(n: usize) -> CsrMatrix<T> {
    let rows = n * n;
    let mut offsets = Vec::with_capacity(rows + 1);
    let mut indices = Vec::with_capacity(5 * rows);
    let mut values = Vec::with_capacity(5 * rows);
    offsets.push(0);
    let m1 = T::from_f64(-1.0);
    for i in 0..n {
        for j in 0..n {
            let v = i * n + j;
            if i > 0 {
                indices.push((v - n) as u32);
                values.push(m1);
            }
            if j > 0 {
                indices.push((v - 1) as u32);
                values.push(m1);
            }
            indices.push(v as u32);
            values.push(T::from_f64(4.0));
            if j + 1 < n {
                indices.push((v + 1) as u32);
                values.push(m1);
            }
            if i + 1 < n {
                indices.push((v + n) as u32);
                values.push(m1);
            }
            offsets.push(indices.len());
        }
    }
    CsrMatrix::new(rows, rows, offsets, indices, values).expect("poisson2d is valid CSR")
}

/// An R-MAT matrix (Chakrabarti, Zhan and Faloutsos 2004): `2^scale` rows and
/// columns, `edge_factor * 2^scale` edges drawn by recursive quadrant choice
/// with probabilities [`RMAT_ABC`], duplicates summed (so nnz is somewhat below
/// the edge count), vertices relabelled by one random permutation (rows and
/// columns alike, as Graph500 does, so the skew is not concentrated in low
/// indices), values U[0.5, 1.5).
pub fn rmat<T: Scalar>(scale: u32, edge_factor: usize, seed: u64) -> CsrMatrix<T> {
    let n = 1usize << scale;
    let edges = edge_factor * n;
    let mut r = rng(seed);
    let (a, b, c) = RMAT_ABC;
    let mut trip = Vec::with_capacity(edges);
    for _ in 0..edges {
        let (mut i, mut j) = (0usize, 0usize);
        for level in (0..scale).rev() {
            let p: f64 = r.random();
            let (di, dj) = if p < a {
                (0, 0)
            } else if p < a + b {
                (0, 1)
            } else if p < a + b + c {
                (1, 0)
            } else {
                (1, 1)
            };
            i |= di << level;
            j |= dj << level;
        }
        trip.push((i, j, r.random_range(0.5..1.5)));
    }
    let mut perm: Vec<u32> = (0..n as u32).collect();
    perm.shuffle(&mut r);
    let trip: Vec<(u32, u32, T)> = trip
        .into_iter()
        .map(|(i, j, v)| (perm[i], perm[j], T::from_f64(v)))
        .collect();
    CsrMatrix::from_triplets(n, n, &trip).expect("rmat triplets are in range")
}

/// `rows x cols` with exactly `per_row` distinct uniformly random columns per
/// row (fewer if `cols < per_row`), values U[0.5, 1.5). `spgemm-uniform-R-8`
/// is `uniform_rows(R, R, 8)` squared.
pub fn uniform_rows<T: Scalar>(
    rows: usize,
    cols: usize,
    per_row: usize,
    seed: u64,
) -> CsrMatrix<T> {
    let mut r = rng(seed);
    let per = per_row.min(cols);
    let mut offsets = Vec::with_capacity(rows + 1);
    let mut indices = Vec::with_capacity(rows * per);
    let mut values = Vec::with_capacity(rows * per);
    offsets.push(0);
    let mut row: Vec<u32> = Vec::with_capacity(per);
    for _ in 0..rows {
        row.clear();
        if per * 4 >= cols {
            // Dense-ish rows: sample without replacement from all columns.
            row.extend(
                rand::seq::index::sample(&mut r, cols, per)
                    .into_iter()
                    .map(|c| c as u32),
            );
        } else {
            // Sparse rows: rejection sampling is cheaper than an O(cols) sampler.
            while row.len() < per {
                let c = r.random_range(0..cols) as u32;
                if !row.contains(&c) {
                    row.push(c);
                }
            }
        }
        row.sort_unstable();
        for &c in &row {
            indices.push(c);
            values.push(T::from_f64(r.random_range(0.5..1.5)));
        }
        offsets.push(indices.len());
    }
    CsrMatrix::new(rows, cols, offsets, indices, values).expect("uniform rows are valid CSR")
}

/// A random `rows x cols` matrix where each entry is present with probability
/// `density`, values U[-1, 1) (about a fifth of them explicit zeros when
/// `explicit_zeros` is set): the building block of the randomized tests.
pub fn random_csr<T: Scalar>(
    rows: usize,
    cols: usize,
    density: f64,
    explicit_zeros: bool,
    seed: u64,
) -> CsrMatrix<T> {
    let mut r = rng(seed);
    let mut offsets = vec![0];
    let mut indices = Vec::new();
    let mut values = Vec::new();
    for _ in 0..rows {
        for c in 0..cols {
            if r.random_bool(density.clamp(0.0, 1.0)) {
                indices.push(c as u32);
                let v = if explicit_zeros && r.random_bool(0.2) {
                    0.0
                } else {
                    r.random_range(-1.0..1.0)
                };
                values.push(T::from_f64(v));
            }
        }
        offsets.push(indices.len());
    }
    CsrMatrix::new(rows, cols, offsets, indices, values).expect("random CSR is valid")
}

/// A `rows x cols` matrix whose row `dense_row` is full and whose other rows
/// hold one entry each: a power-law row that defeats fixed per-row work limits.
pub fn power_law_row<T: Scalar>(
    rows: usize,
    cols: usize,
    dense_row: usize,
    seed: u64,
) -> CsrMatrix<T> {
    let mut r = rng(seed);
    let mut trip = Vec::new();
    for i in 0..rows {
        if i == dense_row {
            for c in 0..cols {
                trip.push((i as u32, c as u32, T::from_f64(r.random_range(0.5..1.5))));
            }
        } else if cols > 0 {
            let c = r.random_range(0..cols);
            trip.push((i as u32, c as u32, T::from_f64(r.random_range(0.5..1.5))));
        }
    }
    CsrMatrix::from_triplets(rows, cols, &trip).expect("in range")
}

/// The matrix of trilinear hexahedra on an `n x n x n` node grid: each node
/// couples to its 27 neighbours (itself included), 26 on the diagonal and -1
/// off it. Banded (half-bandwidth `n^2 + n + 1`), 27 entries in interior rows:
/// the finite-element shape of the SpGEMM comparisons.
pub fn hex27<T: Scalar>(n: usize) -> CsrMatrix<T> {
    let rows = n * n * n;
    let mut offsets = Vec::with_capacity(rows + 1);
    let mut indices = Vec::with_capacity(27 * rows);
    let mut values = Vec::with_capacity(27 * rows);
    offsets.push(0);
    let near = |i: usize| i.saturating_sub(1)..=(i + 1).min(n - 1);
    for z in 0..n {
        for y in 0..n {
            for x in 0..n {
                let me = (z * n + y) * n + x;
                // z, then y, then x ascending: columns come out sorted.
                for zz in near(z) {
                    for yy in near(y) {
                        for xx in near(x) {
                            let c = (zz * n + yy) * n + xx;
                            indices.push(c as u32);
                            values.push(T::from_f64(if c == me { 26.0 } else { -1.0 }));
                        }
                    }
                }
                offsets.push(indices.len());
            }
        }
    }
    CsrMatrix::new(rows, rows, offsets, indices, values).expect("hex27 is valid CSR")
}

/// A web-graph-like `n x n` link matrix: out-degrees from a power law
/// (Pareto, exponent 2.2, at least 1, at most `n / 64`, about 8 on average),
/// and each link either local (70%: within 1000 ids of its row, as pages of one
/// site sit together) or to a popular page (30%: ids drawn log-uniformly
/// through a random permutation, so in-degrees follow a power law too).
/// Duplicate links merge; values U[0.5, 1.5).
pub fn web_graph<T: Scalar>(n: usize, seed: u64) -> CsrMatrix<T> {
    let mut r = rng(seed);
    let mut popular: Vec<u32> = (0..n as u32).collect();
    popular.shuffle(&mut r);
    let cap = (n / 64).max(1);
    let mut offsets = Vec::with_capacity(n + 1);
    let mut indices = Vec::new();
    let mut values = Vec::new();
    offsets.push(0);
    let mut row: Vec<u32> = Vec::new();
    for i in 0..n {
        let u: f64 = r.random_range(f64::EPSILON..1.0);
        let degree = ((1.4 * u.powf(-1.0 / 1.2)) as usize).clamp(1, cap);
        row.clear();
        for _ in 0..degree {
            let c = if r.random_bool(0.7) {
                let off = r.random_range(-1000i64..=1000);
                (i as i64 + off).clamp(0, n as i64 - 1) as u32
            } else {
                let x = (n as f64).powf(r.random::<f64>()) as usize;
                popular[x.clamp(1, n) - 1]
            };
            row.push(c);
        }
        row.sort_unstable();
        row.dedup();
        for &c in &row {
            indices.push(c);
            values.push(T::from_f64(r.random_range(0.5..1.5)));
        }
        offsets.push(indices.len());
    }
    CsrMatrix::new(n, n, offsets, indices, values).expect("web graph is valid CSR")
}

/// `n x n` with `per_row` distinct random columns in each row except `long`
/// evenly spaced rows, which hold `long_len` distinct random columns each: a
/// few very long rows (and, squared, the rows that reference them) among
/// short ones. Values U[0.5, 1.5).
pub fn long_rows<T: Scalar>(
    n: usize,
    per_row: usize,
    long: usize,
    long_len: usize,
    seed: u64,
) -> CsrMatrix<T> {
    let base = uniform_rows::<T>(n, n, per_row, seed);
    if long == 0 || n == 0 {
        return base;
    }
    let mut r = rng(seed ^ 0x10_4e);
    let step = (n / long).max(1);
    let (offsets, indices, values) = base.into_parts();
    let (mut o2, mut i2, mut v2) = (vec![0usize], Vec::new(), Vec::new());
    for row in 0..n {
        if row % step == 0 && row / step < long {
            let mut cols: Vec<u32> = rand::seq::index::sample(&mut r, n, long_len.min(n))
                .into_iter()
                .map(|c| c as u32)
                .collect();
            cols.sort_unstable();
            for c in cols {
                i2.push(c);
                v2.push(T::from_f64(r.random_range(0.5..1.5)));
            }
        } else {
            i2.extend_from_slice(&indices[offsets[row]..offsets[row + 1]]);
            v2.extend_from_slice(&values[offsets[row]..offsets[row + 1]]);
        }
        o2.push(i2.len());
    }
    CsrMatrix::new(n, n, o2, i2, v2).expect("long rows are valid CSR")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row_len(m: &CsrMatrix<f32>, r: usize) -> usize {
        m.offsets()[r + 1] - m.offsets()[r]
    }

    #[test]
    fn hex27_couples_each_node_to_its_neighbours() {
        let n = 4;
        let m = hex27::<f32>(n);
        assert_eq!((m.rows(), m.cols()), (64, 64));
        let at = |x: usize, y: usize, z: usize| (z * n + y) * n + x;
        assert_eq!(row_len(&m, at(1, 1, 1)), 27);
        assert_eq!(row_len(&m, at(0, 0, 0)), 8);
        assert_eq!(row_len(&m, at(1, 0, 0)), 12);
        // Symmetric, 26 on the diagonal, -1 off it, within the band.
        let dense = m.to_dense();
        for i in 0..64 {
            for j in 0..64 {
                assert_eq!(dense[i * 64 + j], dense[j * 64 + i]);
                let v = dense[i * 64 + j];
                assert!(v == 0.0 || v == if i == j { 26.0 } else { -1.0 });
                assert!(v == 0.0 || i.abs_diff(j) <= n * n + n + 1);
            }
        }
    }

    #[test]
    fn web_graph_has_power_law_rows_and_is_reproducible() {
        let n = 1 << 14;
        let m = web_graph::<f32>(n, 5);
        assert_eq!(m, web_graph::<f32>(n, 5));
        let lens: Vec<usize> = (0..n).map(|r| row_len(&m, r)).collect();
        assert!(lens.iter().all(|&l| (1..=n / 64).contains(&l)));
        let mean = m.nnz() as f64 / n as f64;
        assert!((4.0..12.0).contains(&mean), "mean out-degree {mean}");
        // A heavy tail: some rows far above the mean.
        assert!(lens.iter().filter(|&&l| l >= 64).count() > 10);
    }

    #[test]
    fn long_rows_are_where_they_are_said_to_be() {
        let m = long_rows::<f32>(1000, 8, 4, 300, 9);
        for r in 0..1000 {
            let want = if r % 250 == 0 { 300 } else { 8 };
            assert_eq!(row_len(&m, r), want, "row {r}");
        }
        assert_eq!(
            long_rows::<f32>(50, 8, 0, 300, 9),
            uniform_rows(50, 50, 8, 9)
        );
    }
}
