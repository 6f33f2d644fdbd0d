//! Inputs that used to hang or go quadratic. Sized so that a regression is a
//! test that does not finish (minutes), while the fixed code takes well under
//! a second; docs/hardening.md records the measured times.

use trident::{DenseGemm, Error, GemmParams, MatMut, MatRef, Neighbor, Op, Point, RayonBackend};

use crate::backends;

/// m = n = 0 with k = 2^40 on empty slices: nothing to compute must cost
/// nothing, in validation too (it used to walk 2^40 empty rows of B).
#[test]
fn gemm_with_empty_output_and_huge_k_returns_at_once() {
    let k = 1usize << 40;
    for (name, be) in backends() {
        for (op_a, op_b) in [
            (Op::N, Op::N),
            (Op::T, Op::T),
            (Op::N, Op::T),
            (Op::T, Op::N),
        ] {
            let p = GemmParams::<f32> {
                op_a,
                op_b,
                ..Default::default()
            };
            // op(A) is 0 x k, op(B) is k x 0: store them as the ops need.
            let a = if op_a.is_transposed() {
                MatRef::new(&[], k, 0, 0)
            } else {
                MatRef::new(&[], 0, k, k)
            }
            .unwrap();
            let b = if op_b.is_transposed() {
                MatRef::new(&[], 0, k, k)
            } else {
                MatRef::new(&[], k, 0, 0)
            }
            .unwrap();
            let mut c: [f32; 0] = [];
            DenseGemm::<f32>::gemm(be.as_ref(), &p, a, b, MatMut::new(&mut c, 0, 0, 0).unwrap())
                .unwrap_or_else(|e| panic!("{name} {op_a:?} {op_b:?}: {e}"));
        }
        // m = 0 but n = 3: still nothing to compute.
        let b64: [f64; 0] = [];
        let mut c64: [f64; 0] = [];
        DenseGemm::<f64>::gemm(
            be.as_ref(),
            &GemmParams::default(),
            MatRef::new(&b64, 0, k, k).unwrap(),
            MatRef::new(&b64, k, 0, 0).unwrap(),
            MatMut::new(&mut c64, 0, 0, 0).unwrap(),
        )
        .unwrap();
    }
}

/// k = 0 with a non-empty C: C <- beta C, whatever C holds where beta = 0.
#[test]
fn gemm_with_k_zero_scales_c() {
    for (name, be) in backends() {
        let mut c = [f32::NAN, 2.0];
        let p = GemmParams::<f32> {
            beta: 0.0,
            ..Default::default()
        };
        let none: [f32; 0] = [];
        DenseGemm::<f32>::gemm(
            be.as_ref(),
            &p,
            MatRef::new(&none, 1, 0, 0).unwrap(),
            MatRef::new(&none, 0, 2, 2).unwrap(),
            MatMut::dense(&mut c, 1, 2).unwrap(),
        )
        .unwrap();
        assert_eq!(c, [0.0, 0.0], "{name}");
    }
}

const COPIES: usize = 100_000;

fn copies(n: usize) -> Vec<Point> {
    vec![[1.5f32, -2.0, 7.25]; n]
}

/// 1e5 identical points in A and B: each query used to visit every leaf
/// (34 s on rayon, minutes on the reference). The tie rule picks j = 0.
#[test]
fn nearest_among_many_identical_points_is_not_quadratic() {
    let (a, b) = (copies(COPIES), copies(COPIES));
    for (name, be) in backends() {
        let mut out = vec![Neighbor::default(); a.len()];
        be.nearest(&a, &b, &mut out).unwrap();
        assert!(
            out.iter().all(|n| n.index == 0 && n.d2 == 0.0),
            "{name}: {:?}",
            out.iter().find(|n| n.index != 0)
        );
    }
}

#[test]
fn closest_pairs_among_many_identical_points_is_not_quadratic() {
    let (a, b) = (copies(COPIES), copies(COPIES));
    for (name, be) in backends() {
        let pairs = be.closest_pairs(&a, &b, 10).unwrap();
        let got: Vec<(u32, u32)> = pairs.iter().map(|p| (p.a, p.b)).collect();
        let want: Vec<(u32, u32)> = (0..10).map(|i| (i, 0)).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn knn_among_many_identical_points_is_not_quadratic() {
    let (a, b) = (copies(20_000), copies(COPIES));
    let k = 8;
    for (name, be) in backends() {
        let mut out = vec![Neighbor::default(); a.len() * k];
        be.knn(&a, &b, k, &mut out).unwrap();
        for row in out.chunks(k) {
            let idx: Vec<u32> = row.iter().map(|n| n.index).collect();
            assert_eq!(idx, (0..k as u32).collect::<Vec<_>>(), "{name}");
        }
    }
}

/// Identical points mixed with distinct ones, and copies at two places:
/// the answer must still follow `(d2, j)`.
#[test]
fn ties_between_groups_of_copies_follow_the_index_rule() {
    let mut b = Vec::new();
    for j in 0..4000u32 {
        // Copies of two points alternate, so each group's indices interleave.
        b.push(if j % 2 == 0 {
            [1.0f32, 0.0, 0.0]
        } else {
            [-1.0, 0.0, 0.0]
        });
    }
    b.push([0.0, 0.0, 0.0]);
    let a = vec![[0.0f32, 0.0, 0.0], [0.0, 0.0, 0.5]];
    for (name, be) in backends() {
        let mut out = vec![Neighbor::default(); a.len() * 3];
        be.knn(&a, &b, 3, &mut out).unwrap();
        let idx: Vec<u32> = out.iter().map(|n| n.index).collect();
        assert_eq!(idx, [4000, 0, 1, 4000, 0, 1], "{name}");
    }
}

/// 100,000 threads used to hang in the pool's start-up.
#[test]
fn rayon_with_absurd_thread_count_is_an_error() {
    match RayonBackend::with_threads(100_000) {
        Err(Error::TooLarge { field, value, .. }) => {
            assert_eq!((field, value), ("threads", 100_000));
        }
        other => panic!("expected TooLarge, got {:?}", other.map(|b| b.threads())),
    }
    assert_eq!(RayonBackend::with_threads(3).unwrap().threads(), 3);
}
