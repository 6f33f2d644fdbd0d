//! The NearestPairs checker: compares a backend's answer with the reference's under
//! `docs/tolerances.md` (see [`crate::check`] for the flow).

use crate::check::*;
use trident_core::*;

fn check_neighbor(
    v: &mut Verdict,
    what: &str,
    a: &Point,
    b: &[Point],
    got: &Neighbor,
    optimum: f64,
) -> f64 {
    if got.index as usize >= b.len() {
        v.fail(format!(
            "{what}: index {} out of range for |B| = {}",
            got.index,
            b.len()
        ));
        return f64::INFINITY;
    }
    let d = dist2_f64(a, &b[got.index as usize]);
    v.ratio(Tol::NEAREST.ratio(optimum, d), || {
        format!(
            "{what}: returned B[{}] at d2 = {d} but the optimum is {optimum}",
            got.index
        )
    });
    v.ratio(Tol::NEAREST.ratio(d, got.d2 as f64), || {
        format!(
            "{what}: reported d2 = {} but B[{}] is at exactly {d}",
            got.d2, got.index
        )
    });
    d
}

/// Checks `nearest`: each returned point's exact distance within [`Tol::NEAREST`]
/// of the optimum, and the reported `d2` with it.
pub fn check_nearest(a: &[Point], b: &[Point], expected: &[Neighbor], got: &[Neighbor]) -> Verdict {
    let mut v = Verdict::default();
    if got.len() != a.len() {
        v.fail(format!("{} answers for |A| = {}", got.len(), a.len()));
        return v;
    }
    for i in 0..a.len() {
        let opt = dist2_f64(&a[i], &b[expected[i].index as usize]);
        check_neighbor(&mut v, &format!("A[{i}]"), &a[i], b, &got[i], opt);
    }
    v
}

/// Checks `knn`: per query, `k` distinct points whose exact distances match
/// the reference's sorted distances position by position.
pub fn check_knn(
    a: &[Point],
    b: &[Point],
    k: usize,
    expected: &[Neighbor],
    got: &[Neighbor],
) -> Verdict {
    let mut v = Verdict::default();
    if got.len() != a.len() * k {
        v.fail(format!(
            "{} answers for |A| * k = {} * {k}",
            got.len(),
            a.len()
        ));
        return v;
    }
    for i in 0..a.len() {
        let row = &got[i * k..(i + 1) * k];
        for t in 0..k {
            let opt = dist2_f64(&a[i], &b[expected[i * k + t].index as usize]);
            check_neighbor(
                &mut v,
                &format!("A[{i}] neighbour {t}"),
                &a[i],
                b,
                &row[t],
                opt,
            );
            if row[..t].iter().any(|n| n.index == row[t].index) {
                v.fail(format!("A[{i}]: B[{}] returned twice", row[t].index));
            }
        }
    }
    v
}

/// Checks `closest_pairs`: `min(k, |A|)` pairs of distinct A points, each
/// paired with a nearest B point (within [`Tol::NEAREST`]), distances matching the
/// reference's sorted distances position by position.
pub fn check_pairs(
    a: &[Point],
    b: &[Point],
    k: usize,
    nearest: &[Neighbor],
    expected: &[Pair],
    got: &[Pair],
) -> Verdict {
    let mut v = Verdict::default();
    let want = k.min(a.len());
    if got.len() != want {
        v.fail(format!(
            "{} pairs, expected min(k, |A|) = {want}",
            got.len()
        ));
        return v;
    }
    let mut seen = std::collections::HashSet::new();
    for (t, p) in got.iter().enumerate() {
        if p.a as usize >= a.len() {
            v.fail(format!(
                "pair {t}: a = {} out of range for |A| = {}",
                p.a,
                a.len()
            ));
            continue;
        }
        if !seen.insert(p.a) {
            v.fail(format!("pair {t}: A[{}] appears twice", p.a));
        }
        let ai = p.a as usize;
        let own_opt = dist2_f64(&a[ai], &b[nearest[ai].index as usize]);
        let n = Neighbor {
            index: p.b,
            d2: p.d2,
        };
        let d = check_neighbor(
            &mut v,
            &format!("pair {t} (A[{ai}])"),
            &a[ai],
            b,
            &n,
            own_opt,
        );
        let e = &expected[t];
        let rank_opt = dist2_f64(&a[e.a as usize], &b[e.b as usize]);
        if d.is_finite() {
            v.ratio(Tol::NEAREST.ratio(rank_opt, d), || {
                format!(
                    "pair {t}: d2 = {d}, but the {t}-th smallest nearest distance is {rank_opt}"
                )
            });
        }
    }
    v
}
