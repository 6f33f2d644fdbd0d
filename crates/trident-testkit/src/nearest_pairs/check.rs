//! The NearestPairs checker: compares a backend's answer with the reference's under
//! `docs/tolerances.md` (see [`crate::check`] for the flow).

use crate::check::*;
use trident_core::*;

fn check_neighbor<T: Coord>(
    v: &mut Verdict,
    what: &str,
    a: &Point<T>,
    b: &[Point<T>],
    got: &Neighbor<T>,
    optimum: f64,
) -> f64 {
    let tol = Tol::nearest::<T>();
    if got.index as usize >= b.len() {
        v.fail(format!(
            "{what}: index {} out of range for |B| = {}",
            got.index,
            b.len()
        ));
        return f64::INFINITY;
    }
    let d = T::exact_d2(a, &b[got.index as usize]);
    v.ratio(tol.ratio(optimum, d), || {
        format!(
            "{what}: returned B[{}] at d2 = {d} but the optimum is {optimum}",
            got.index
        )
    });
    v.ratio(tol.ratio(d, got.d2.to_f64()), || {
        format!(
            "{what}: reported d2 = {} but B[{}] is at exactly {d}",
            got.d2, got.index
        )
    });
    d
}

/// Checks `nearest`: each returned point's exact distance within [`Tol::NEAREST`]
/// of the optimum, and the reported `d2` with it.
pub fn check_nearest<T: Coord>(
    a: &[Point<T>],
    b: &[Point<T>],
    expected: &[Neighbor<T>],
    got: &[Neighbor<T>],
) -> Verdict {
    let mut v = Verdict::default();
    if got.len() != a.len() {
        v.fail(format!("{} answers for |A| = {}", got.len(), a.len()));
        return v;
    }
    for i in 0..a.len() {
        let opt = T::exact_d2(&a[i], &b[expected[i].index as usize]);
        check_neighbor(&mut v, &format!("A[{i}]"), &a[i], b, &got[i], opt);
    }
    v
}

/// Checks `knn`: per query, `k` distinct points whose exact distances match
/// the reference's sorted distances position by position.
pub fn check_knn<T: Coord>(
    a: &[Point<T>],
    b: &[Point<T>],
    k: usize,
    expected: &[Neighbor<T>],
    got: &[Neighbor<T>],
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
            let opt = T::exact_d2(&a[i], &b[expected[i * k + t].index as usize]);
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
pub fn check_pairs<T: Coord>(
    a: &[Point<T>],
    b: &[Point<T>],
    k: usize,
    nearest: &[Neighbor<T>],
    expected: &[Pair<T>],
    got: &[Pair<T>],
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
        let own_opt = T::exact_d2(&a[ai], &b[nearest[ai].index as usize]);
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
        let rank_opt = T::exact_d2(&a[e.a as usize], &b[e.b as usize]);
        if d.is_finite() {
            v.ratio(Tol::nearest::<T>().ratio(rank_opt, d), || {
                format!(
                    "pair {t}: d2 = {d}, but the {t}-th smallest nearest distance is {rank_opt}"
                )
            });
        }
    }
    v
}

/// Checks a radius search (`within`, or `self_pairs` when `upper`) against
/// the reference's rows: the same number of rows; in each, every index in
/// range (above the row for `self_pairs`) and returned once, its exact
/// distance at most `r^2` and its reported `d2` matching it (both under
/// [`Tol::nearest`]), sorted by `(d2, j)` (judged on exact distances: out
/// of order beyond the tolerance fails, and so does a tie in both the exact
/// and the reported distance out of index order; equal exact distances may
/// round to different computed ones, which then decide); and every
/// reference pair present
/// unless its exact distance is within the tolerance of `r^2` (a boundary
/// pair either side may keep or drop).
pub fn check_within<T: Coord>(
    a: &[Point<T>],
    b: &[Point<T>],
    r: T,
    upper: bool,
    expected: &RadiusNeighbors<T>,
    got: &RadiusNeighbors<T>,
) -> Verdict {
    let mut v = Verdict::default();
    let rows = a.len();
    if got.offsets.len() != rows + 1
        || got.offsets.first() != Some(&0)
        || got.offsets.windows(2).any(|w| w[0] > w[1])
        || got.offsets.last() != Some(&got.indices.len())
        || got.indices.len() != got.d2.len()
    {
        v.fail(format!(
            "malformed result: {} offsets for {rows} rows, {} indices, {} distances",
            got.offsets.len(),
            got.indices.len(),
            got.d2.len()
        ));
        return v;
    }
    let tol = Tol::nearest::<T>();
    let r2 = r.to_f64() * r.to_f64();
    let band = tol.bound(r2);
    for i in 0..rows {
        let (idx, d2) = got.row(i);
        let mut seen = std::collections::HashSet::with_capacity(idx.len());
        let mut prev: Option<(f64, T, u32)> = None;
        for (&j, &d) in idx.iter().zip(d2) {
            if j as usize >= b.len() || (upper && j as usize <= i) {
                v.fail(format!(
                    "row {i}: index {j} not allowed (|B| = {})",
                    b.len()
                ));
                continue;
            }
            if !seen.insert(j) {
                v.fail(format!("row {i}: B[{j}] returned twice"));
            }
            let exact = T::exact_d2(&a[i], &b[j as usize]);
            if exact > r2 + band {
                v.fail(format!(
                    "row {i}: B[{j}] at exact d2 = {exact} is beyond r^2 = {r2}"
                ));
            }
            v.ratio(tol.ratio(exact, d.to_f64()), || {
                format!("row {i}: reported d2 = {d} but B[{j}] is at exactly {exact}")
            });
            if let Some((pe, pd, pj)) = prev
                && (exact < pe - tol.bound(pe) || (exact == pe && d == pd && j < pj))
            {
                v.fail(format!(
                    "row {i}: B[{j}] (d2 = {exact}) comes after B[{pj}] (d2 = {pe}): not sorted by (d2, j)"
                ));
            }
            prev = Some((exact, d, j));
        }
        if i < expected.rows() {
            let (want, _) = expected.row(i);
            for &j in want {
                if !seen.contains(&j) {
                    let exact = T::exact_d2(&a[i], &b[j as usize]);
                    if exact < r2 - band {
                        v.fail(format!(
                            "row {i}: B[{j}] at exact d2 = {exact} (r^2 = {r2}) is missing"
                        ));
                    }
                }
            }
        }
    }
    v
}
