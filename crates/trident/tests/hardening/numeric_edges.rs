//! Extreme values that used to give a silently wrong answer.

use trident::{
    CsrMatrix, DenseGemm, Dictionary, Error, GemmParams, MatMut, MatRef, Neighbor, Point,
    ReferenceBackend, SparseCoder, StopRule, dist2_f64,
};

use crate::{backends, cpu_backends};

/// alpha = 0 means A and B take no part in the arithmetic (BLAS): C = beta C
/// even where A B overflows (it used to become NaN).
#[test]
fn gemm_alpha_zero_does_not_read_a_and_b() {
    for (name, be) in backends() {
        let a = [3e38f32, 3e38];
        let b = [3e38f32, 3e38];
        for (beta, c0, want) in [(1.0f32, 5.0, 5.0), (2.0, 5.0, 10.0), (0.0, f32::NAN, 0.0)] {
            let mut c = [c0];
            let p = GemmParams {
                alpha: 0.0,
                beta,
                ..Default::default()
            };
            DenseGemm::<f32>::gemm(
                be.as_ref(),
                &p,
                MatRef::dense(&a, 1, 2).unwrap(),
                MatRef::dense(&b, 2, 1).unwrap(),
                MatMut::dense(&mut c, 1, 1).unwrap(),
            )
            .unwrap();
            assert_eq!(c, [want], "{name} beta {beta}");
        }
        // Not read is about the arithmetic: a NaN in A is still an error
        // (docs/semantics.md), and C is left untouched.
        let nan = [f64::NAN];
        let mut c = [4.0f64];
        let p = GemmParams {
            alpha: 0.0,
            beta: 0.5,
            ..Default::default()
        };
        let r = DenseGemm::<f64>::gemm(
            be.as_ref(),
            &p,
            MatRef::dense(&nan, 1, 1).unwrap(),
            MatRef::dense(&[1.0], 1, 1).unwrap(),
            MatMut::dense(&mut c, 1, 1).unwrap(),
        );
        assert!(
            matches!(r, Err(Error::NonFinite { field: "a", .. })),
            "{name}: {r:?}"
        );
        assert_eq!(c, [4.0], "{name}");
    }
}

/// Brute force in f64 by `(d2, j)`.
fn brute_nearest(q: &Point, b: &[Point]) -> u32 {
    (0..b.len())
        .min_by(|&x, &y| {
            dist2_f64(q, &b[x])
                .total_cmp(&dist2_f64(q, &b[y]))
                .then(x.cmp(&y))
        })
        .unwrap() as u32
}

/// Squared distances of 1e30-scale coordinates overflow f32: every candidate
/// used to tie at inf and index 0 won.
#[test]
fn nearest_with_huge_coordinates_is_right() {
    let m = f32::MAX;
    let cases: Vec<(Vec<Point>, Vec<Point>)> = vec![
        (
            vec![[0.0, 0.0, 0.0], [2e30, 0.0, 0.0]],
            vec![[1e30, 0.0, 0.0], [1e29, 0.0, 0.0], [3e30, 1.0, 0.0]],
        ),
        (
            vec![[m, 0.0, 0.0], [-m, 0.0, 0.0], [0.0, m, -m]],
            vec![[-m, 0.0, 0.0], [m, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, m, -m]],
        ),
        (
            vec![[1e19, 1e19, 1e19], [1.0, 2.0, 3.0]],
            vec![
                [-1e19, 0.0, 0.0],
                [1e19, 1e19, 0.0],
                [1.0, 2.0, 3.5],
                [1.0, 2.0, 2.5],
            ],
        ),
    ];
    for (name, be) in backends() {
        for (a, b) in &cases {
            let want: Vec<u32> = a.iter().map(|q| brute_nearest(q, b)).collect();
            let mut out = vec![Neighbor::default(); a.len()];
            be.nearest(a, b, &mut out).unwrap();
            let got: Vec<u32> = out.iter().map(|n| n.index).collect();
            assert_eq!(got, want, "{name} nearest {a:?} in {b:?}");
            for (n, q) in out.iter().zip(a) {
                let exact = dist2_f64(q, &b[n.index as usize]) as f32;
                assert_eq!(n.d2, exact, "{name}: d2 of {q:?}");
            }
            let mut knn = vec![Neighbor::default(); a.len() * 2];
            be.knn(a, b, 2, &mut knn).unwrap();
            for (row, q) in knn.chunks(2).zip(a) {
                assert_eq!(row[0].index, brute_nearest(q, b), "{name} knn");
            }
            let pairs = be.closest_pairs(a, b, a.len()).unwrap();
            for p in &pairs {
                assert_eq!(p.b, want[p.a as usize], "{name} closest_pairs");
            }
        }
    }
}

/// Small deterministic generator (no dependency, same stream everywhere).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

/// An exactly duplicated atom: after its twin is chosen its correlation is
/// zero up to rounding, and selecting it gave coefficients of 1e6 to 1e15 in
/// 2.4% of small problems on the reference. Neither twin may follow the other.
#[test]
fn omp_never_selects_the_duplicate_of_a_chosen_atom() {
    let mut rng = Lcg(12);
    let (n, k) = (4, 6);
    for case in 0..2000 {
        let mut cols: Vec<Vec<f64>> = (0..k - 1)
            .map(|_| (0..n).map(|_| rng.next()).collect())
            .collect();
        let dup = case % (k - 1);
        cols.insert(dup + 1, cols[dup].clone());
        let mut data = vec![0.0f64; n * k];
        for (j, c) in cols.iter().enumerate() {
            for i in 0..n {
                data[i * k + j] = c[i];
            }
        }
        let d = Dictionary::normalize(n, k, data).unwrap();
        // Signals in the span of the twin and one other atom, and random ones.
        let x: Vec<f64> = if case % 2 == 0 {
            let other = (dup + 3) % k;
            let (g1, g2) = (rng.next() * 3.0, rng.next());
            (0..n)
                .map(|i| g1 * d.data()[i * k + dup] + g2 * d.data()[i * k + other])
                .collect()
        } else {
            (0..n).map(|_| rng.next()).collect()
        };
        for (name, be) in cpu_backends() {
            let codes = SparseCoder::<f64>::encode(
                be.as_ref(),
                &d,
                MatRef::dense(&x, 1, n).unwrap(),
                StopRule::Sparsity(n),
            )
            .unwrap();
            let (atoms, coefs) = codes.signal(0);
            let twins = atoms
                .iter()
                .filter(|&&j| j as usize == dup || j as usize == dup + 1)
                .count();
            assert!(twins <= 1, "{name} case {case}: both twins in {atoms:?}");
            assert!(
                coefs.iter().all(|c| c.abs() < 1e6),
                "{name} case {case}: {atoms:?} {coefs:?}"
            );
        }
    }
}

/// Nearly collinear atoms (1e-7 rad apart): rayon used to stop after one atom
/// (a 1e-12 breakdown rule the contract does not have), as did the GPU
/// backends (a 1e-12 pivot rule in f64, 1e-5 in f32); every backend must
/// find both, like the reference, in f64 and f32. Ill-conditioning may cost
/// digits, not the selection.
#[test]
fn omp_takes_nearly_collinear_atoms_like_the_reference() {
    let e = 1e-7f64;
    let norm = (1.0 + e * e).sqrt();
    // Columns e1 and (e1 + 1e-7 e2) / norm, row-major 2 x 2.
    let d = Dictionary::new(2, 2, vec![1.0, 1.0 / norm, 0.0, e / norm]).unwrap();
    let d32 = Dictionary::new(2, 2, d.data().iter().map(|&v| v as f32).collect()).unwrap();
    let x = [1.0f64, 1.0];
    let x32 = [1.0f32, 1.0];
    let rule = StopRule::Sparsity(2);
    let refc = SparseCoder::<f64>::encode(
        &ReferenceBackend,
        &d,
        MatRef::dense(&x, 1, 2).unwrap(),
        rule,
    )
    .unwrap();
    assert_eq!(refc.signal(0).0, &[1, 0]);
    assert!(refc.residual_norm2[0] < 1e-12, "{:?}", refc.residual_norm2);
    let gr = refc.signal(0).1;
    let rel = |g: &[f64]| {
        ((g[0] - gr[0]).powi(2) + (g[1] - gr[1]).powi(2)).sqrt()
            / (gr[0].powi(2) + gr[1].powi(2)).sqrt()
    };
    for (name, be) in backends() {
        let c = SparseCoder::<f64>::encode(be.as_ref(), &d, MatRef::dense(&x, 1, 2).unwrap(), rule)
            .unwrap();
        assert_eq!(c.signal(0).0, refc.signal(0).0, "{name} f64");
        // One atom leaves ~1; two leave rounding noise amplified by cond^2 ~ 1e14.
        assert!(
            c.residual_norm2[0] < 1e-3,
            "{name} f64 {:?}",
            c.residual_norm2
        );
        let r = rel(c.signal(0).1);
        println!(
            "{name} f64 {:?} vs reference {gr:?}: relative {r:e}",
            c.signal(0).1
        );
        assert!(
            r < 1e-4,
            "{name} f64 {:?} vs reference {gr:?}: {r}",
            c.signal(0).1
        );
        let c =
            SparseCoder::<f32>::encode(be.as_ref(), &d32, MatRef::dense(&x32, 1, 2).unwrap(), rule)
                .unwrap();
        assert_eq!(c.signal(0).0, refc.signal(0).0, "{name} f32");
        assert!(
            c.residual_norm2[0] < 1e-3,
            "{name} f32 {:?}",
            c.residual_norm2
        );
        let g: Vec<f64> = c.signal(0).1.iter().map(|&v| v as f64).collect();
        assert!(rel(&g) < 1e-4, "{name} f32 {g:?} vs reference {gr:?}");
    }
}

/// Signals whose `||x||^2` overflows or underflows the type (1e200, 1e-200
/// in f64; 1e20, 1e-25 in f32) used to come back as an empty code with
/// `||r||^2 = inf` or `0`; they are coded exactly, on every backend.
#[test]
fn omp_codes_signals_at_the_ends_of_the_range() {
    let d = Dictionary::new(2, 2, vec![1.0f64, 0.0, 0.0, 1.0]).unwrap();
    let d32 = Dictionary::new(2, 2, vec![1.0f32, 0.0, 0.0, 1.0]).unwrap();
    let rule = StopRule::Sparsity(2);
    for (name, be) in backends() {
        for x in [[1e200f64, 3e199], [1e-200, 3e-201], [1e-310, -3e-311]] {
            let c =
                SparseCoder::<f64>::encode(be.as_ref(), &d, MatRef::dense(&x, 1, 2).unwrap(), rule)
                    .unwrap();
            assert_eq!(c.signal(0), (&[0u32, 1][..], &x[..]), "{name} {x:?}");
            assert_eq!(c.residual_norm2, [0.0], "{name} {x:?}");
        }
        for x in [[1e20f32, 3e19], [1e-25, 3e-26], [1e-40, -3e-41]] {
            let c = SparseCoder::<f32>::encode(
                be.as_ref(),
                &d32,
                MatRef::dense(&x, 1, 2).unwrap(),
                rule,
            )
            .unwrap();
            assert_eq!(c.signal(0), (&[0u32, 1][..], &x[..]), "{name} {x:?}");
            assert_eq!(c.residual_norm2, [0.0], "{name} {x:?}");
        }
    }
}

/// Duplicates whose sum overflows used to be reported as `values[0]`, an
/// array the caller never passed.
#[test]
fn from_triplets_whose_duplicates_sum_to_inf_names_the_triplets() {
    let t = [
        (0u32, 0u32, 1.0f32),
        (1, 1, 3e38),
        (0, 1, 2.0),
        (1, 1, 3e38),
    ];
    match CsrMatrix::from_triplets(2, 2, &t) {
        Err(Error::InvalidCsr {
            field,
            index,
            detail,
        }) => {
            assert_eq!((field, index), ("triplets", 1));
            assert!(
                detail.contains("[1, 3]") && detail.contains("(1, 1)"),
                "{detail}"
            );
        }
        other => panic!("expected InvalidCsr, got {other:?}"),
    }
}

/// Backends that compute distances in f32 scale the points by a power of two
/// first when squares would overflow (huge coordinates) or underflow (tiny
/// ones), and use them as given otherwise.
#[test]
fn f32_scaling_moves_points_into_range_and_leaves_ordinary_ones() {
    use trident::{F32_SAFE_COORD, F32_TINY_COORD, scaled_for_range};
    let (a, b) = ([[0.0f32; 3]], [[1.0f32, 2.0, 3.0], [0.0, -1e18, 1e-12]]);
    let (sa, sb, s) = scaled_for_range(&a, &b);
    assert_eq!((s, &sa[..], &sb[..]), (0, &a[..], &b[..]));
    for (a, b) in [
        ([[0.0f32; 3]], [[1.0f32, 2.0, 3.0], [0.0, -1e30, 0.0]]),
        ([[0.0f32; 3]], [[1e-25f32, 2e-25, 0.0], [0.0, -3e-30, 0.0]]),
    ] {
        let (sa, sb, s) = scaled_for_range(&a, &b);
        assert_ne!(s, 0);
        let max = sa
            .iter()
            .chain(&sb[..])
            .flatten()
            .fold(0.0f32, |m, v| m.max(v.abs()));
        assert!(max <= F32_SAFE_COORD && max > F32_SAFE_COORD / 2.0, "{max}");
        let min = sb[0][0].abs();
        assert!(min >= F32_TINY_COORD, "{min}");
    }
}
