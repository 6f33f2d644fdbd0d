//! Dictionaries, stop rules, sparse codes and the [`SparseCoder`] trait (OMP).

use crate::tol::UNIT_NORM_TOL;
use crate::validate::{check_finite, exact_len};
use crate::{Error, MatRef, Result, Scalar};

/// An overcomplete dictionary `D`: `n` rows (signal length) by `atoms` columns,
/// row-major, every column of unit Euclidean norm (within [`UNIT_NORM_TOL`]).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(
    feature = "serde",
    derive(serde::Deserialize),
    serde(
        try_from = "crate::serde_impls::DictionaryParts<T>",
        bound(deserialize = "T: Scalar + serde::Deserialize<'de>")
    )
)]
pub struct Dictionary<T> {
    n: usize,
    atoms: usize,
    data: Vec<T>,
}

impl<T: Scalar> Dictionary<T> {
    /// Checks and wraps a row-major `n x atoms` matrix whose columns are the atoms.
    ///
    /// Errors: wrong length, non-finite entries, a column whose norm is not 1
    /// within 1e-3 (use [`Dictionary::normalize`]), more than `u32::MAX` atoms.
    pub fn new(n: usize, atoms: usize, data: Vec<T>) -> Result<Self> {
        Self::check_shape(n, atoms, &data)?;
        let norms = column_norms(n, atoms, &data);
        for (j, &nj) in norms.iter().enumerate() {
            if (nj - 1.0).abs() > UNIT_NORM_TOL {
                return Err(Error::arg(
                    "dictionary",
                    format!(
                        "column {j} has norm {nj:.6}, expected 1 within {UNIT_NORM_TOL}; call Dictionary::normalize"
                    ),
                ));
            }
        }
        Ok(Self { n, atoms, data })
    }

    /// Scales every column of a row-major `n x atoms` matrix to unit norm.
    /// Errors as [`Dictionary::new`], and for a zero column.
    ///
    /// ```
    /// # use trident_core::Dictionary;
    /// let d = Dictionary::normalize(2, 2, vec![3.0f64, 0.0, 4.0, 2.0]).unwrap();
    /// assert_eq!(d.data(), &[0.6, 0.0, 0.8, 1.0]);
    /// ```
    pub fn normalize(n: usize, atoms: usize, mut data: Vec<T>) -> Result<Self> {
        Self::check_shape(n, atoms, &data)?;
        let norms = column_norms(n, atoms, &data);
        for (j, &nj) in norms.iter().enumerate() {
            if nj == 0.0 {
                return Err(Error::arg(
                    "dictionary",
                    format!("column {j} is zero and cannot be normalized"),
                ));
            }
        }
        for i in 0..n {
            for j in 0..atoms {
                let v = &mut data[i * atoms + j];
                *v = T::from_f64(v.to_f64() / norms[j]);
            }
        }
        Self::new(n, atoms, data)
    }

    fn check_shape(n: usize, atoms: usize, data: &[T]) -> Result<()> {
        if atoms > u32::MAX as usize {
            return Err(Error::TooLarge {
                field: "atoms",
                value: atoms as u128,
                limit: u32::MAX as u128,
            });
        }
        exact_len("dictionary.data", n, atoms, data.len())?;
        check_finite("dictionary.data", data)
    }

    /// Signal length (rows of D).
    pub fn n(&self) -> usize {
        self.n
    }
    /// Number of atoms (columns of D).
    pub fn atoms(&self) -> usize {
        self.atoms
    }
    /// Row-major `n x atoms` entries.
    pub fn data(&self) -> &[T] {
        &self.data
    }
    /// The dictionary as a matrix view.
    // The shape was checked when the dictionary was built, so the view is valid.
    #[allow(clippy::expect_used)]
    pub fn as_mat(&self) -> MatRef<'_, T> {
        MatRef::new(&self.data, self.n, self.atoms, self.atoms)
            .expect("shape checked at construction")
    }
    /// Atom `j` copied out as a contiguous vector.
    pub fn atom(&self, j: usize) -> Vec<T> {
        (0..self.n).map(|i| self.data[i * self.atoms + j]).collect()
    }
}

fn column_norms<T: Scalar>(n: usize, atoms: usize, data: &[T]) -> Vec<f64> {
    let mut s = vec![0.0f64; atoms];
    for i in 0..n {
        for j in 0..atoms {
            let v = data[i * atoms + j].to_f64();
            s[j] += v * v;
        }
    }
    s.into_iter().map(f64::sqrt).collect()
}

/// The largest `|<d_j, r>|` that counts as zero up to rounding for a signal of
/// length `n` and norm `x_norm`: `64 sqrt(n) eps_f64 ||x||`.
///
/// OMP never selects an atom whose correlation with the residual is at or
/// below it (the signal stops there, as when the best correlation is exactly
/// 0). The case is an atom the residual is orthogonal to in exact arithmetic,
/// above all an exact duplicate of a selected atom: rounding leaves it a
/// correlation of a few `eps ||x||`, and selecting it would make the
/// least-squares system singular up to rounding (coefficients of 1e15).
/// Computing the residual (or the Gram-based correlations) costs rounding
/// errors of about `sqrt(n) eps ||x||`; the factor 64 keeps clear of them,
/// while any correlation a user could mean lies far above (`1e-14 ||x||` at
/// n = 64). It is an f64 bound, for both precisions, computed on the signal
/// as coded (scaled by its power of two, [`crate::omp::SignalScale`]): a
/// backend that runs its loop in f32 settles correlations near its own f32
/// rounding level in f64 (the rayon backend codes such signals again in its
/// f64 loop, the wgpu backend on the host with [`crate::omp::plain_omp`]).
///
/// ```
/// # use trident_core::omp_zero_correlation;
/// assert!(omp_zero_correlation(64, 1.0) < 1e-12);
/// assert_eq!(omp_zero_correlation(64, 0.0), 0.0);
/// ```
pub fn omp_zero_correlation(n: usize, x_norm: f64) -> f64 {
    64.0 * (n.max(1) as f64).sqrt() * f64::EPSILON * x_norm
}

/// When OMP stops adding atoms to a signal. It also always stops at
/// `min(n, atoms)` atoms, when the residual is exactly zero, and when the best
/// correlation is zero up to rounding ([`omp_zero_correlation`]).
/// Non-exhaustive: other stopping rules may come.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum StopRule {
    /// Stop after this many atoms.
    Sparsity(usize),
    /// Stop once `||r||^2 <= eps`.
    Error(f64),
    /// Whichever of the two comes first.
    SparsityOrError {
        /// Most atoms per signal.
        sparsity: usize,
        /// Target squared residual norm.
        error: f64,
    },
}

impl StopRule {
    /// The most atoms a signal can get under this rule for a dictionary of
    /// signal length `n` with `atoms` atoms.
    pub fn max_atoms(&self, n: usize, atoms: usize) -> usize {
        let cap = n.min(atoms);
        match *self {
            StopRule::Sparsity(t) | StopRule::SparsityOrError { sparsity: t, .. } => t.min(cap),
            StopRule::Error(_) => cap,
        }
    }
    /// The squared-residual target, if any.
    pub fn error_target(&self) -> Option<f64> {
        match *self {
            StopRule::Sparsity(_) => None,
            StopRule::Error(e) | StopRule::SparsityOrError { error: e, .. } => Some(e),
        }
    }
}

/// OMP output for L signals, laid out like CSR: signal `i` has the atoms
/// `atoms[offsets[i]..offsets[i+1]]` in selection order, with their coefficients.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SparseCodes<T> {
    /// `L + 1` offsets starting at 0.
    pub offsets: Vec<usize>,
    /// Selected atoms, in selection order per signal.
    pub atoms: Vec<u32>,
    /// Least-squares coefficients, parallel to `atoms`.
    pub coefs: Vec<T>,
    /// Final squared residual norm `||x - D_S g_S||^2` per signal.
    pub residual_norm2: Vec<T>,
}

impl<T: Scalar> SparseCodes<T> {
    /// Number of signals coded.
    pub fn len(&self) -> usize {
        self.residual_norm2.len()
    }
    /// `true` when no signal was coded.
    pub fn is_empty(&self) -> bool {
        self.residual_norm2.is_empty()
    }
    /// Atoms and coefficients of signal `i`.
    pub fn signal(&self, i: usize) -> (&[u32], &[T]) {
        let (s, e) = (self.offsets[i], self.offsets[i + 1]);
        (&self.atoms[s..e], &self.coefs[s..e])
    }
}

/// Sparse coding by Orthogonal Matching Pursuit.
pub trait SparseCoder<T: Scalar>: Send + Sync {
    /// Codes each row of `signals` (L x n) over `dict` (n x K). Each step picks
    /// the unselected atom maximising `|<d_j, r>|` (ties: smaller j); the
    /// coefficients are the least-squares fit on the selected atoms.
    ///
    /// Errors: `signals.cols() != dict.n()`, non-finite signals, a negative or NaN
    /// error target.
    ///
    /// ```
    /// use trident_core::{Dictionary, MatRef, SparseCoder, StopRule};
    /// # fn demo(backend: &dyn SparseCoder<f64>) -> trident_core::Result<()> {
    /// let d = Dictionary::new(2, 2, vec![1.0, 0.0, 0.0, 1.0])?; // identity
    /// let x = [0.0, 3.0];
    /// let codes = backend.encode(&d, MatRef::dense(&x, 1, 2)?, StopRule::Sparsity(1))?;
    /// assert_eq!(codes.signal(0), (&[1u32][..], &[3.0][..]));
    /// # Ok(()) }
    /// # demo(&trident_reference::ReferenceBackend::new().unwrap()).unwrap();
    /// ```
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>>;
}
