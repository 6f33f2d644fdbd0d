use trident_core::{Dictionary, Error, MatRef, Scalar, SparseCoder, SparseCodes, StopRule};
use trident_reference::certify::{self, OmpTol};
use trident_reference::{OmpStop, omp_path};

use crate::{Rng, backend};

fn random_dict<T: Scalar>(rng: &mut Rng, n: usize, k: usize) -> Dictionary<T> {
    let data: Vec<T> = (0..n * k).map(|_| T::from_f64(rng.normal())).collect();
    Dictionary::normalize(n, k, data).unwrap()
}

/// Signals that are sparse combinations of `s` atoms plus a little noise.
fn random_signals<T: Scalar>(
    rng: &mut Rng,
    d: &Dictionary<T>,
    l: usize,
    s: usize,
    noise: f64,
) -> Vec<T> {
    let (n, k) = (d.n(), d.atoms());
    let mut x = vec![0.0f64; l * n];
    for i in 0..l {
        for _ in 0..s {
            let j = rng.below(k);
            let g = rng.normal();
            for r in 0..n {
                x[i * n + r] += g * d.data()[r * k + j].to_f64();
            }
        }
        for r in 0..n {
            x[i * n + r] += noise * rng.normal();
        }
    }
    x.into_iter().map(T::from_f64).collect()
}

fn encode_and_certify<T: Scalar>(d: &Dictionary<T>, x: &[T], rule: StopRule) -> SparseCodes<T> {
    let l = x.len() / d.n().max(1);
    let sig = MatRef::new(x, l, d.n(), d.n()).unwrap();
    let codes = backend().encode(d, sig, rule).unwrap();
    let r = certify::omp_codes(d, sig, rule, &codes);
    assert!(r.is_ok(), "{} {rule:?}: {r:?}", T::NAME);
    // encode and omp_path agree signal by signal.
    for i in 0..l {
        let p = omp_path(d, sig.row(i), rule).unwrap();
        let (atoms, coefs) = codes.signal(i);
        assert_eq!(p.atoms(), atoms);
        assert!(
            p.coefs
                .iter()
                .zip(coefs)
                .all(|(a, b)| T::from_f64(*a) == *b)
        );
        assert_eq!(T::from_f64(p.residual_norm2), codes.residual_norm2[i]);
    }
    codes
}

#[test]
fn random_dictionaries_all_rules_f32_f64() {
    let mut rng = Rng::new(6);
    for t in 0..12 {
        let (n, k) = (4 + rng.below(9), 6 + rng.below(20));
        let rules = [
            StopRule::Sparsity(1 + rng.below(5)),
            StopRule::Error(0.05 * (1 + t) as f64),
            StopRule::SparsityOrError {
                sparsity: 3,
                error: 0.2,
            },
            StopRule::Error(0.0),
        ];
        let d64 = random_dict::<f64>(&mut rng, n, k);
        let x64 = random_signals(&mut rng, &d64, 10, 3, 0.05);
        let d32 = random_dict::<f32>(&mut rng, n, k);
        let x32 = random_signals(&mut rng, &d32, 10, 3, 0.05);
        for rule in rules {
            encode_and_certify(&d64, &x64, rule);
            encode_and_certify(&d32, &x32, rule);
        }
    }
}

#[test]
fn identity_dictionary_recovers_exactly() {
    let d = Dictionary::new(3, 3, vec![1.0f64, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]).unwrap();
    let x = [0.5, -3.0, 2.0];
    let codes = encode_and_certify(&d, &x, StopRule::Sparsity(3));
    assert_eq!(codes.signal(0), (&[1u32, 2, 0][..], &[-3.0, 2.0, 0.5][..]));
    assert_eq!(codes.residual_norm2[0], 0.0);
    let p = omp_path(&d, &x, StopRule::Sparsity(3)).unwrap();
    assert_eq!(p.stop, OmpStop::ZeroResidual);
    assert_eq!((p.steps[0].best, p.steps[0].second), (3.0, Some(2.0)));
    assert_eq!(p.steps[2].second, None);
    // Sparsity(2): stops at the budget with ||r||^2 = 0.25.
    let codes = encode_and_certify(&d, &x, StopRule::Sparsity(2));
    assert_eq!(codes.residual_norm2[0], 0.25);
}

#[test]
fn signal_equal_to_one_atom() {
    let mut rng = Rng::new(7);
    let d = random_dict::<f64>(&mut rng, 8, 16);
    let x = d.atom(5);
    let codes = encode_and_certify(&d, &x, StopRule::Error(1e-20));
    let (atoms, coefs) = codes.signal(0);
    assert_eq!(atoms, &[5]);
    assert!((coefs[0] - 1.0).abs() < 1e-14);
    // Under a pure sparsity rule the first pick is still atom 5.
    let codes = encode_and_certify(&d, &x, StopRule::Sparsity(4));
    assert_eq!(codes.signal(0).0[0], 5);
    let d32 = random_dict::<f32>(&mut rng, 8, 16);
    let x32 = d32.atom(3);
    let codes = encode_and_certify(&d32, &x32, StopRule::Error(1e-10));
    assert_eq!(codes.signal(0).0, &[3]);
    encode_and_certify(&d32, &x32, StopRule::Sparsity(2));
}

#[test]
fn exact_ties_pick_the_smaller_atom() {
    // Atoms e0, e1 and x = (1, 1): |c| ties at 1; atom 0 first.
    let d = Dictionary::new(2, 2, vec![1.0f64, 0.0, 0.0, 1.0]).unwrap();
    let p = omp_path(&d, &[1.0, 1.0], StopRule::Sparsity(2)).unwrap();
    assert_eq!(p.atoms(), [0, 1]);
    assert!(p.steps[0].is_near_tie(certify::omp_tie_rel::<f64>()));
    assert!(!p.steps[1].is_near_tie(1e-4));
    // Negative correlations count by magnitude.
    let p = omp_path(&d, &[1.0, -2.0], StopRule::Sparsity(1)).unwrap();
    assert_eq!((p.atoms(), p.coefs.clone()), (vec![1], vec![-2.0]));
}

#[test]
fn stop_rules_and_edges() {
    let mut rng = Rng::new(8);
    let d = random_dict::<f64>(&mut rng, 4, 10);
    let x = random_signals(&mut rng, &d, 1, 4, 0.1);
    let xn2: f64 = x.iter().map(|v| v * v).sum();
    // ||x||^2 <= eps: no atom at all.
    let p = omp_path(&d, &x, StopRule::Error(xn2)).unwrap();
    assert_eq!(
        (p.steps.len(), p.stop, p.residual_norm2),
        (0, OmpStop::ErrorTarget, xn2)
    );
    // Never more than min(n, K) atoms, even with Error(0).
    let p = omp_path(&d, &x, StopRule::Error(0.0)).unwrap();
    assert!(p.steps.len() <= 4);
    // Sparsity(0).
    let codes = encode_and_certify(&d, &x, StopRule::Sparsity(0));
    assert_eq!((codes.atoms.len(), codes.residual_norm2[0]), (0, xn2));
    // A zero signal stops at once.
    let p = omp_path(&d, &[0.0; 4], StopRule::Sparsity(3)).unwrap();
    assert_eq!((p.steps.len(), p.stop), (0, OmpStop::ZeroResidual));
    // Both limits: whichever comes first.
    let p = omp_path(
        &d,
        &x,
        StopRule::SparsityOrError {
            sparsity: 1,
            error: 0.0,
        },
    )
    .unwrap();
    assert_eq!((p.steps.len(), p.stop), (1, OmpStop::MaxAtoms));
    // No signals, and a dictionary without atoms.
    let codes = backend()
        .encode(&d, MatRef::dense(&[], 0, 4).unwrap(), StopRule::Sparsity(2))
        .unwrap();
    assert_eq!((codes.offsets.as_slice(), codes.len()), (&[0][..], 0));
    let empty = Dictionary::<f32>::new(3, 0, vec![]).unwrap();
    let codes = encode_and_certify(&empty, &[1.0, 2.0, 3.0], StopRule::Error(0.0));
    assert_eq!((codes.atoms.len(), codes.residual_norm2[0]), (0, 14.0));
}

#[test]
fn bad_input_is_an_error() {
    let d = Dictionary::new(2, 2, vec![1.0f32, 0.0, 0.0, 1.0]).unwrap();
    let e = backend().encode(
        &d,
        MatRef::dense(&[1.0, 2.0, 3.0], 1, 3).unwrap(),
        StopRule::Sparsity(1),
    );
    assert!(matches!(
        e,
        Err(Error::DimensionMismatch {
            field: "signals",
            ..
        })
    ));
    let e = backend().encode(
        &d,
        MatRef::dense(&[1.0, 2.0], 1, 2).unwrap(),
        StopRule::Error(-1.0),
    );
    assert!(matches!(
        e,
        Err(Error::InvalidArgument { field: "rule", .. })
    ));
    assert!(omp_path(&d, &[f32::NAN, 0.0], StopRule::Sparsity(1)).is_err());
}

#[test]
fn certificate_rejects_wrong_answers() {
    let mut rng = Rng::new(9);
    let d = random_dict::<f64>(&mut rng, 8, 20);
    let x = random_signals(&mut rng, &d, 1, 3, 0.01);
    let rule = StopRule::Sparsity(3);
    let p = omp_path(&d, &x, rule).unwrap();
    let atoms = p.atoms();
    let tol = OmpTol::of::<f64>();
    let cert =
        |atoms: &[u32], coefs: &[f64], r2: f64| certify::omp(&d, &x, rule, atoms, coefs, r2, &tol);
    assert!(cert(&atoms, &p.coefs, p.residual_norm2).is_ok());
    // Perturbed coefficient.
    let mut c2 = p.coefs.clone();
    c2[1] += 1e-3;
    assert!(cert(&atoms, &c2, p.residual_norm2).is_err());
    // Wrong residual.
    assert!(cert(&atoms, &p.coefs, p.residual_norm2 * 1.1 + 1e-3).is_err());
    // Too few atoms without a reason.
    assert!(cert(&atoms[..2], &p.coefs[..2], p.residual_norm2).is_err());
    // A non-greedy first pick (unless it was a near tie).
    if !p.steps[0].is_near_tie(1e-3) {
        let mut a2 = atoms.clone();
        a2.swap(0, 1);
        let g: Vec<f64> = {
            let q = omp_path(&d, &x, rule).unwrap();
            q.coefs
        };
        assert!(cert(&a2, &[g[1], g[0], g[2]], p.residual_norm2).is_err());
    }
    // A repeated atom.
    assert!(cert(&[atoms[0], atoms[0]], &[1.0, 1.0], 0.0).is_err());
    // Continuing past the error target.
    let r1 = omp_path(&d, &x, StopRule::Sparsity(1))
        .unwrap()
        .residual_norm2;
    let rule_e = StopRule::Error(r1 * 1.5);
    assert!(certify::omp(&d, &x, rule_e, &atoms[..2], &[0.0, 0.0], 0.0, &tol).is_err());
}
