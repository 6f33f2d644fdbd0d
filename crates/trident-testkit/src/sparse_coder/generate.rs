//! Dictionaries and signals for SparseCoder (OMP).

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use trident_core::{Dictionary, MatRef, Scalar, StopRule};

use crate::cases::rng;

/// One OMP call: code `count` signals (rows of `signals`) over `dict`.
#[derive(Clone, Debug, PartialEq)]
pub struct OmpCase<T> {
    /// The dictionary (n x atoms, unit columns).
    pub dict: Dictionary<T>,
    /// Row-major `count x n` signals.
    pub signals: Vec<T>,
    /// Number of signals.
    pub count: usize,
    /// The stop rule.
    pub rule: StopRule,
}

impl<T: Scalar> OmpCase<T> {
    /// The signals as a `count x n` view.
    pub fn signals_ref(&self) -> MatRef<'_, T> {
        MatRef::dense(&self.signals, self.count, self.dict.n()).expect("consistent by construction")
    }
    /// Signal `i`.
    pub fn signal(&self, i: usize) -> &[T] {
        let n = self.dict.n();
        &self.signals[i * n..(i + 1) * n]
    }
}

/// The 1-D overcomplete DCT: `len x freqs`, column `k` = `cos(pi i k / freqs)`
/// for `i < len`, mean removed for `k > 0`, unit norm (the `odctdict`
/// construction of Rubinstein's KSVD-Box). Column-major in the return value:
/// `out[k][i]`.
fn odct_1d(len: usize, freqs: usize) -> Vec<Vec<f64>> {
    (0..freqs)
        .map(|k| {
            let mut v: Vec<f64> = (0..len)
                .map(|i| (std::f64::consts::PI * (i * k) as f64 / freqs as f64).cos())
                .collect();
            if k > 0 {
                let mean = v.iter().sum::<f64>() / len as f64;
                v.iter_mut().for_each(|x| *x -= mean);
            }
            let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            v
        })
        .collect()
}

/// The overcomplete 2-D DCT dictionary for `patch x patch` patches with
/// `freqs` 1-D frequencies per axis: `patch^2 x freqs^2`, atom `k1 * freqs +
/// k2` the outer product of 1-D atoms `k1` (rows of the patch) and `k2`
/// (columns), pixel `r1 * patch + r2`. Separable products of unit vectors are
/// unit vectors. `dct_dictionary(8, 16)` is the contract's 64 x 256.
pub fn dct_dictionary<T: Scalar>(patch: usize, freqs: usize) -> Dictionary<T> {
    let d1 = odct_1d(patch, freqs);
    let n = patch * patch;
    let atoms = freqs * freqs;
    let mut data = vec![T::ZERO; n * atoms];
    for r1 in 0..patch {
        for r2 in 0..patch {
            for k1 in 0..freqs {
                for k2 in 0..freqs {
                    data[(r1 * patch + r2) * atoms + k1 * freqs + k2] =
                        T::from_f64(d1[k1][r1] * d1[k2][r2]);
                }
            }
        }
    }
    Dictionary::normalize(n, atoms, data).expect("DCT atoms are non-zero")
}

/// A random dictionary: Gaussian entries, columns normalized.
pub fn random_dictionary<T: Scalar>(n: usize, atoms: usize, seed: u64) -> Dictionary<T> {
    let mut r = rng(seed);
    let data: Vec<T> = (0..n * atoms)
        .map(|_| T::from_f64(StandardNormal.sample(&mut r)))
        .collect();
    Dictionary::normalize(n, atoms, data).expect("a Gaussian column is non-zero")
}

/// `count` signals, each `sum of sparsity random distinct atoms * N(0,1)` plus
/// Gaussian noise scaled to `noise` times the clean signal's norm (docs/semantics.md: 16
/// atoms, 1% noise). Row-major `count x n`, computed in f64.
pub fn sparse_signals<T: Scalar>(
    dict: &Dictionary<T>,
    count: usize,
    sparsity: usize,
    noise: f64,
    seed: u64,
) -> Vec<T> {
    let mut r = rng(seed);
    let (n, k) = (dict.n(), dict.atoms());
    let d: Vec<f64> = dict.data().iter().map(|v| v.to_f64()).collect();
    let mut out = Vec::with_capacity(count * n);
    let mut x = vec![0.0f64; n];
    for _ in 0..count {
        x.iter_mut().for_each(|v| *v = 0.0);
        if k > 0 {
            for j in rand::seq::index::sample(&mut r, k, sparsity.min(k)) {
                let g: f64 = StandardNormal.sample(&mut r);
                for i in 0..n {
                    x[i] += g * d[i * k + j];
                }
            }
        }
        let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        let e: Vec<f64> = (0..n).map(|_| StandardNormal.sample(&mut r)).collect();
        let en = e.iter().map(|v| v * v).sum::<f64>().sqrt();
        let scale = if en > 0.0 { noise * norm / en } else { 0.0 };
        out.extend(
            x.iter()
                .zip(&e)
                .map(|(xi, ei)| T::from_f64(xi + scale * ei)),
        );
    }
    out
}

/// The `omp-64x256-k16` benchmark case with `count` signals: DCT dictionary,
/// 16-atom signals with 1% noise, `Sparsity(16)`.
pub fn omp_dct<T: Scalar>(count: usize, seed: u64) -> OmpCase<T> {
    let dict = dct_dictionary::<T>(8, 16);
    let signals = sparse_signals(&dict, count, 16, 0.01, seed);
    OmpCase {
        dict,
        signals,
        count,
        rule: StopRule::Sparsity(16),
    }
}

/// The `omp-256x1024-k32` case with `count` signals: the overcomplete 2-D
/// DCT for 16 x 16 patches (256 x 1024), 32-atom signals with 1% noise,
/// `Sparsity(32)`; built like [`omp_dct`]. Here the f32 Gram matrix (4 MB)
/// no longer fits a GPU's shared memory.
pub fn omp_dct_256<T: Scalar>(count: usize, seed: u64) -> OmpCase<T> {
    let dict = dct_dictionary::<T>(16, 32);
    let signals = sparse_signals(&dict, count, 32, 0.01, seed);
    OmpCase {
        dict,
        signals,
        count,
        rule: StopRule::Sparsity(32),
    }
}

/// Random dictionary and signals for randomized tests: `count` signals of
/// `sparsity` atoms plus `noise`, under `rule`.
pub fn omp_random<T: Scalar>(
    n: usize,
    atoms: usize,
    count: usize,
    sparsity: usize,
    noise: f64,
    rule: StopRule,
    seed: u64,
) -> OmpCase<T> {
    let dict = random_dictionary::<T>(n, atoms, seed ^ 0xD1C7);
    let signals = sparse_signals(&dict, count, sparsity, noise, seed);
    OmpCase {
        dict,
        signals,
        count,
        rule,
    }
}

/// `count` signals with i.i.d. U[-1,1) entries (no sparse structure).
pub fn dense_signals<T: Scalar>(n: usize, count: usize, seed: u64) -> Vec<T> {
    let mut r = rng(seed);
    (0..n * count)
        .map(|_| T::from_f64(r.random_range(-1.0..1.0)))
        .collect()
}
