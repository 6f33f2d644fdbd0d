//! The SparseCoder (Batch-OMP) checker: compares a backend's answer with the reference's under
//! `docs/tolerances.md` (see [`crate::check`] for the flow).

use crate::cases::*;
use crate::check::*;
use trident_core::omp::{OMP_WINDOW_F64, SignalScale};
use trident_core::*;
use trident_reference::certify;

/// The residual of `x` after the least-squares fit on the atoms `sel` of the
/// f64 dictionary `d` (row-major `n x k`), by modified Gram-Schmidt with
/// re-orthogonalisation: an independent computation, not the reference's.
pub fn omp_residual(d: &[f64], n: usize, k: usize, x: &[f64], sel: &[u32]) -> Vec<f64> {
    let mut q: Vec<Vec<f64>> = Vec::with_capacity(sel.len());
    let mut r = x.to_vec();
    for &j in sel {
        let mut u: Vec<f64> = (0..n).map(|i| d[i * k + j as usize]).collect();
        for _ in 0..2 {
            for qv in &q {
                let c: f64 = qv.iter().zip(&u).map(|(a, b)| a * b).sum();
                u.iter_mut().zip(qv).for_each(|(a, b)| *a -= c * b);
            }
        }
        let nu = u.iter().map(|a| a * a).sum::<f64>().sqrt();
        if nu <= 1e-12 {
            continue; // dependent on the atoms already chosen: adds nothing to the span
        }
        u.iter_mut().for_each(|a| *a /= nu);
        for _ in 0..2 {
            let c: f64 = u.iter().zip(&r).map(|(a, b)| a * b).sum();
            r.iter_mut().zip(&u).for_each(|(a, b)| *a -= c * b);
        }
        q.push(u);
    }
    r
}

fn norm2(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum()
}

/// Checks OMP codes against the reference's (see the module docs for the
/// tie and stopping rules).
///
/// Each signal is judged scaled by its [`SignalScale`] (a power of two, exact,
/// 1 for every signal whose largest entry lies in `[2^-256, 2^256)`: every
/// f32 signal), with the codes scaled alike, so that `||x||^2` of a signal of
/// `1e200` or `1e-200` is finite and non-zero in the checker's f64 as in the
/// backends. A code with an infinite coefficient or residual (a true value
/// beyond `T`'s range, docs/semantics.md) is judged by the certificate
/// along its own path, which knows when an infinity is the answer.
pub fn omp<T: Scalar>(
    case: &OmpCase<T>,
    expected: &SparseCodes<f64>,
    got: &SparseCodes<T>,
) -> Verdict {
    let mut v = Verdict::default();
    let (n, k, l) = (case.dict.n(), case.dict.atoms(), case.count);
    if let Err(e) = trident_core::validate::sparse_codes(got, l, k) {
        v.fail(format!("malformed codes: {e}"));
        return v;
    }
    let t = tol::Omp::of::<T>();
    let (coef_tol, tie_tol) = (Tol::rel(t.coef_rel), Tol::rel(t.tie_rel));
    let d: Vec<f64> = case.dict.data().iter().map(|x| x.to_f64()).collect();
    let max_atoms = case.rule.max_atoms(n, k);
    // The rounding error of a value rounded into the subnormals, of T (the
    // backend's output) and of f64 (the reference's).
    let tiny = T::MIN_SUBNORMAL.to_f64() + f64::MIN_SUBNORMAL;
    for i in 0..l {
        let scale = SignalScale::of(case.signal(i), OMP_WINDOW_F64);
        let x: Vec<f64> = case
            .signal(i)
            .iter()
            .map(|t| scale.apply(t.to_f64()))
            .collect();
        let xx = norm2(&x);
        let res_tol = t.residual(xx);
        let res_tol = Tol::new(res_tol.rel, res_tol.abs + scale.apply2(tiny));
        let (ga, gc) = got.signal(i);
        let (ea, ec) = expected.signal(i);
        let reported = got.residual_norm2[i].to_f64();
        if ga.len() > max_atoms {
            v.fail(format!(
                "signal {i}: {} atoms, the stop rule allows {max_atoms}",
                ga.len()
            ));
            continue;
        }
        if let Some(p) = (1..ga.len()).find(|&p| ga[..p].contains(&ga[p])) {
            v.fail(format!(
                "signal {i}: atom {} selected twice (step {p})",
                ga[p]
            ));
            continue;
        }
        if gc.iter().any(|c| c.to_f64().is_nan()) || reported.is_nan() {
            v.fail(format!("signal {i}: NaN coefficient or residual"));
            continue;
        }
        if gc.iter().any(|c| !c.is_finite()) || !reported.is_finite() {
            let own = certify::omp(
                &case.dict,
                case.signal(i),
                case.rule,
                ga,
                gc,
                got.residual_norm2[i],
                &t,
            );
            match own {
                Ok(r) => v.ratio(r, || {
                    format!("signal {i}: an infinite value, along its own path")
                }),
                Err(e) => v.fail(format!(
                    "signal {i}: an infinite value, along its own path: {e}"
                )),
            }
            continue;
        }
        let gs: Vec<f64> = gc.iter().map(|c| scale.apply(c.to_f64())).collect();
        let reported = scale.apply2(reported);
        // The reported residual must be the residual of the reported code.
        let mut r = x.clone();
        for (&j, &c) in ga.iter().zip(&gs) {
            for t in 0..n {
                r[t] -= c * d[t * k + j as usize];
            }
        }
        let own = norm2(&r);
        v.ratio(res_tol.ratio(own, reported), || {
            format!(
                "signal {i}: reported ||r||^2 = {:e} but its atoms and coefficients leave {:e}",
                scale.undo2(reported),
                scale.undo2(own)
            )
        });
        let common = ga.iter().zip(ea).take_while(|(a, b)| a == b).count();
        let diverged = common < ga.len().min(ea.len());
        if !diverged {
            // The reported residual is that of the code rounded to T: allow
            // for that rounding (docs/semantics.md).
            let want = scale.apply2(expected.residual_norm2[i]);
            let g_sum = ec.iter().map(|g| scale.apply(g.abs())).sum();
            let allow = res_tol.bound(want) + t.rounding(want, g_sum);
            v.ratio(tol::ratio((want - reported).abs(), allow), || {
                format!(
                    "signal {i}: ||r||^2 = {:e}, reference {:e}",
                    scale.undo2(reported),
                    expected.residual_norm2[i]
                )
            });
        }
        if common == ga.len() && common == ea.len() {
            // Same path: coefficients must match.
            let diff = gs
                .iter()
                .zip(ec)
                .map(|(a, b)| (a - scale.apply(*b)).powi(2))
                .sum::<f64>()
                .sqrt();
            let gn = ec
                .iter()
                .map(|b| scale.apply(*b).powi(2))
                .sum::<f64>()
                .sqrt();
            let floor = (ga.len() as f64).sqrt() * scale.apply(tiny);
            let rr = tol::ratio(diff, coef_tol.bound(gn) + floor);
            v.ratio(rr, || {
                format!(
                    "signal {i}: ||g - g_ref|| / ||g_ref|| = {:.3e} exceeds {:.0e}",
                    diff / gn,
                    coef_tol.rel
                )
            });
            continue;
        }
        if common == ga.len().min(ea.len()) {
            // One path is a prefix of the other: accepted only where the
            // stopping decision was a rounding-level call.
            let at = residual_at(&d, n, k, &x, &ea[..common]);
            let ok = match case.rule.error_target() {
                Some(eps) => {
                    Tol::rel(tol::OMP_RESIDUAL).accepts(scale.apply2(eps), at)
                        || res_tol.accepts(0.0, at)
                }
                None => res_tol.accepts(0.0, at),
            };
            if !ok {
                v.fail(format!(
                    "signal {i}: {} atoms, reference {} (same first {common}); residual after {common} is {:e}, not at the stop threshold",
                    ga.len(),
                    ea.len(),
                    scale.undo2(at)
                ));
            }
            continue;
        }
        // Diverged at step `common`: accepted only at a near tie.
        let rs = omp_residual(&d, n, k, &x, &ea[..common]);
        let corr: Vec<f64> = (0..k)
            .map(|j| (0..n).map(|t| d[t * k + j] * rs[t]).sum::<f64>().abs())
            .collect();
        let chosen = &ea[..common];
        let best = (0..k)
            .filter(|j| !chosen.contains(&(*j as u32)))
            .map(|j| corr[j])
            .fold(0.0, f64::max);
        let mine = corr[ga[common] as usize];
        if mine.is_nan() || mine < best - tie_tol.bound(best) || chosen.contains(&ga[common]) {
            v.fail(format!(
                "signal {i} step {common}: picked atom {} (|<d,r>| = {:.6e}), the reference atom {} (|<d,r>| = {:.6e}, best {:.6e}); not a near tie",
                ga[common],
                scale.undo(mine),
                ea[common],
                scale.undo(corr[ea[common] as usize]),
                scale.undo(best)
            ));
        }
        // Past a near tie the backend is judged along its own path: every
        // later pick within the tie window of the best at its step, the
        // coefficients and residual those of the least-squares fit on its
        // atoms, and its stop justified (docs/semantics.md#sparsecoder).
        let forced = certify::omp(
            &case.dict,
            case.signal(i),
            case.rule,
            ga,
            gc,
            got.residual_norm2[i],
            &t,
        );
        match forced {
            Ok(r) => v.ratio(r, || {
                format!("signal {i}: along its own path after the near tie at step {common}")
            }),
            Err(e) => v.fail(format!(
                "signal {i}: along its own path after the near tie at step {common}: {e}"
            )),
        }
    }
    v
}

fn residual_at(d: &[f64], n: usize, k: usize, x: &[f64], sel: &[u32]) -> f64 {
    norm2(&omp_residual(d, n, k, x, sel))
}
