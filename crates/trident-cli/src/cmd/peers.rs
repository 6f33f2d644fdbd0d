//! The peers `trident bench` times beside the backends, on the same generated
//! input in the same run, so that its table and plot say how Trident compares
//! with what one would use otherwise.
//!
//! In process (always; Rust crates the reference backend already pulls in, or
//! `sprs`, which the CLI uses for Matrix Market interop tests anyway):
//!
//! | primitive | peer | timed |
//! | --- | --- | --- |
//! | dense_gemm | nalgebra `DMatrix::gemm` (matrixmultiply) | `C <- alpha op(A) op(B) + beta C`; copying into nalgebra's column-major matrices is not timed |
//! | sparse_gemm | sprs `&A * &B` (one thread) | the product; conversion from `CsrMatrix` is not timed |
//! | nearest_pairs | kiddo `ImmutableKdTree` (f32, one thread) | tree on B, k nearest per point of A, the k closest pairs |
//! | sparse_coder, max_flow | none in Rust | the Python peers below (scikit-learn, PyMaxflow) |
//!
//! With `--py-peers benches/peers.py`: the Python peers of the repository's
//! benchmark suite (numpy, scipy, scikit-learn, PyMaxflow) on the same input,
//! written to a temporary `TRIDENT-CASE` file. Where `python3` or its modules
//! are missing the run goes on and the report says why the peer is absent.

use std::num::NonZeroUsize;
use std::path::Path;
use std::process::Command;

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use trident::{CsrMatrix, Op, Scalar};
use trident_testkit::cases::{GemmCase, Input, PairsCase, SpgemmCase};
use trident_testkit::peers;
use trident_testkit::timing::median_secs as median;

/// One peer's time on one case, or why it has none.
pub struct PeerTiming {
    /// Library and version, e.g. `"sprs 0.11"`.
    pub peer: String,
    /// Median seconds of the timed calls.
    pub median_s: Option<f64>,
    /// What was timed, or why nothing was.
    pub note: String,
}

/// One untimed warm-up, then `reps` timed calls of `call(setup())`; the median.
pub fn rust(input: &Input, reps: usize) -> Option<PeerTiming> {
    if let Some(c) = input.downcast_ref::<GemmCase<f32>>() {
        return Some(gemm(c, reps, "f32"));
    }
    if let Some(c) = input.downcast_ref::<GemmCase<f64>>() {
        return Some(gemm(c, reps, "f64"));
    }
    if let Some(c) = input.downcast_ref::<SpgemmCase<f32>>() {
        return Some(spgemm(&c.a, &c.b, reps, "f32"));
    }
    if let Some(c) = input.downcast_ref::<SpgemmCase<f64>>() {
        return Some(spgemm(&c.a, &c.b, reps, "f64"));
    }
    input.downcast_ref::<PairsCase>().map(|c| pairs(c, reps))
}

fn gemm<T: Scalar + nalgebra::RealField>(c: &GemmCase<T>, reps: usize, ty: &str) -> PeerTiming {
    let (a, b) = (c.a_ref(), c.b_ref());
    let op = |m: trident::MatRef<'_, T>, op: Op, rows: usize, cols: usize| {
        nalgebra::DMatrix::from_fn(rows, cols, |i, j| {
            if op.is_transposed() {
                m.get(j, i)
            } else {
                m.get(i, j)
            }
        })
    };
    let (m, n, k) = (c.m, c.n, c.k);
    let na = op(a, c.params.op_a, m, k);
    let nb = op(b, c.params.op_b, k, n);
    let c0 = nalgebra::DMatrix::from_fn(m, n, |i, j| c.c[i * c.c_shape.ld + j]);
    let (alpha, beta) = (c.params.alpha, c.params.beta);
    let s = median(
        reps,
        || c0.clone(),
        |mut out| {
            out.gemm(alpha, &na, &nb, beta);
            out
        },
    );
    PeerTiming {
        peer: "nalgebra 0.35".into(),
        median_s: Some(s),
        note: format!("DMatrix::gemm ({ty}, matrixmultiply); layout copies untimed"),
    }
}

fn spgemm<T>(a: &CsrMatrix<T>, b: &CsrMatrix<T>, reps: usize, ty: &str) -> PeerTiming
where
    T: Scalar,
    for<'r> &'r sprs::CsMat<T>: std::ops::Mul<&'r sprs::CsMat<T>, Output = sprs::CsMat<T>>,
{
    let peer = "sprs 0.11".to_string();
    let conv =
        sprs::CsMat::<T>::try_from(a).and_then(|sa| Ok((sa, sprs::CsMat::<T>::try_from(b)?)));
    match conv {
        Ok((sa, sb)) => PeerTiming {
            peer,
            median_s: Some(median(reps, || (), |_| &sa * &sb)),
            note: format!("&A * &B ({ty}, one thread); conversion untimed"),
        },
        Err(e) => PeerTiming {
            peer,
            median_s: None,
            note: format!("not run: {e}"),
        },
    }
}

fn pairs(c: &PairsCase, reps: usize) -> PeerTiming {
    let peer = "kiddo 6".to_string();
    let k = NonZeroUsize::new(c.knn_k).unwrap_or(NonZeroUsize::MIN);
    if c.b.is_empty() {
        return PeerTiming {
            peer,
            median_s: None,
            note: "not run: B is empty".into(),
        };
    }
    let call = |_| -> Option<Vec<(f32, u32, u32)>> {
        let tree: ImmutableKdTree<f32, 3> = ImmutableKdTree::new_from_slice(&c.b).ok()?;
        let mut near = Vec::with_capacity(c.a.len());
        for (i, q) in c.a.iter().enumerate() {
            let kn = tree
                .query(q)
                .nearest_n::<SquaredEuclidean<f32>>(k)
                .execute();
            if let Some(first) = kn.first() {
                near.push((first.distance, i as u32, first.item));
            }
        }
        let top = c.pairs_k.min(near.len());
        if top > 0 && top < near.len() {
            near.select_nth_unstable_by(top - 1, |x, y| x.0.total_cmp(&y.0));
        }
        near.truncate(top);
        near.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        Some(near)
    };
    if call(()).is_none() {
        return PeerTiming {
            peer,
            median_s: None,
            note: "not run: kiddo could not build the tree".into(),
        };
    }
    PeerTiming {
        peer,
        median_s: Some(median(reps, || (), call)),
        note: format!(
            "tree on B, {} nearest per point of A, the {} closest pairs (f32, one thread)",
            c.knn_k, c.pairs_k
        ),
    }
}

/// The Python peers of `script` (`benches/peers.py`) on `input`, written to a
/// temporary case file. `Err` says why there are none (no python3, a missing
/// module, a failed script), for the report.
pub fn python(
    script: &Path,
    case: &str,
    input: &Input,
    reps: usize,
) -> Result<Vec<PeerTiming>, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    input
        .write(&dir.path().join(format!("{case}.case")))
        .map_err(|e| format!("writing the case file: {e}"))?;
    let out = Command::new("python3")
        .arg(script)
        .arg(dir.path())
        .args(["--reps", &reps.max(1).to_string()])
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!("{} failed: {last}", script.display()));
    }
    // The results file of benches/peers.py (trident_testkit::peers).
    let text = String::from_utf8_lossy(&out.stdout);
    let file = peers::parse(&text).map_err(|e| format!("{}: {e}", script.display()))?;
    let mut rows: Vec<PeerTiming> = file
        .results
        .into_iter()
        .filter(|r| r.case == case)
        .map(|r| PeerTiming {
            peer: r.peer,
            median_s: Some(r.median_s),
            note: r.note,
        })
        .collect();
    rows.extend(
        file.skipped
            .into_iter()
            .filter(|s| s.case == case)
            .map(|s| PeerTiming {
                peer: "-".into(),
                median_s: None,
                note: format!("skipped: {}", s.note),
            }),
    );
    Ok(rows)
}
