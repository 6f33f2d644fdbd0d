//! Checks every backend runs first, so that no backend re-checks by hand and all
//! of them reject the same inputs with the same error.
//!
//! Types that are valid by construction ([`crate::CsrMatrix`], [`crate::Dictionary`],
//! [`crate::GridGraph`], [`crate::FlowNetwork`], [`crate::MatRef`]) need only the
//! checks that relate several arguments; those live here.

use crate::{
    CsrMatrix, Dictionary, Error, GemmDims, GemmParams, MatMut, MatRef, Neighbor, Point, Result,
    Scalar, SparseCodes, StopRule,
};

/// Fails on the first NaN or infinity in `data`, naming `field` and its index.
pub fn check_finite<T: Scalar>(field: &'static str, data: &[T]) -> Result<()> {
    // A sum is a fast screen: it is finite iff all entries are (barring overflow,
    // which the scan below then sorts out).
    if data
        .iter()
        .copied()
        .fold(T::ZERO, |a, b| a + b * T::ZERO)
        .is_finite()
    {
        return Ok(());
    }
    match data.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(Error::NonFinite {
            field,
            index: i,
            value: data[i].to_f64(),
        }),
        None => Ok(()),
    }
}

fn check_view_finite<T: Scalar>(field: &'static str, m: &MatRef<'_, T>) -> Result<()> {
    // A view with no elements may still have 2^40 rows of length 0: do not
    // walk them (nothing to compute must cost nothing).
    if m.rows() == 0 || m.cols() == 0 {
        return Ok(());
    }
    for i in 0..m.rows() {
        if let Err(Error::NonFinite { index, value, .. }) = check_finite(field, m.row(i)) {
            return Err(Error::NonFinite {
                field,
                index: i * m.ld() + index,
                value,
            });
        }
    }
    Ok(())
}

/// Checks a GEMM call and returns its m, n, k.
pub fn gemm<T: Scalar>(
    p: &GemmParams<T>,
    a: &MatRef<'_, T>,
    b: &MatRef<'_, T>,
    c: &MatMut<'_, T>,
) -> Result<GemmDims> {
    let (m, k) = a.op_shape(p.op_a);
    let (kb, n) = b.op_shape(p.op_b);
    if k != kb {
        return Err(Error::dim(
            "b",
            format!("op(A) is {m} x {k} but op(B) is {kb} x {n}"),
        ));
    }
    if c.rows() != m || c.cols() != n {
        return Err(Error::dim(
            "c",
            format!("C is {} x {}, op(A) op(B) is {m} x {n}", c.rows(), c.cols()),
        ));
    }
    if !p.alpha.is_finite() {
        return Err(Error::NonFinite {
            field: "alpha",
            index: 0,
            value: p.alpha.to_f64(),
        });
    }
    if !p.beta.is_finite() {
        return Err(Error::NonFinite {
            field: "beta",
            index: 0,
            value: p.beta.to_f64(),
        });
    }
    // Checked even when alpha == 0: "not read" is about the arithmetic, not
    // about argument checking (docs/semantics.md, DenseGemm).
    check_view_finite("a", a)?;
    check_view_finite("b", b)?;
    if p.beta != T::ZERO {
        check_view_finite("c", &c.as_ref())?;
    }
    Ok(GemmDims { m, n, k })
}

/// Checks the operands of `A * B`: shapes that fit and finite values (a
/// [`CsrMatrix`] built by [`CsrMatrix::from_result`], e.g. an earlier product
/// that overflowed, may hold `inf`; it is not a valid input).
pub fn spgemm<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<()> {
    check_finite("a.values", a.values())?;
    check_finite("b.values", b.values())?;
    if a.cols() != b.rows() {
        return Err(Error::dim(
            "b.rows",
            format!(
                "A is {} x {} but B is {} x {}",
                a.rows(),
                a.cols(),
                b.rows(),
                b.cols()
            ),
        ));
    }
    Ok(())
}

/// Checks a point set: at most `u32::MAX` points, all coordinates finite.
pub fn points(field: &'static str, p: &[Point]) -> Result<()> {
    if p.len() > u32::MAX as usize {
        return Err(Error::TooLarge {
            field,
            value: p.len() as u128,
            limit: u32::MAX as u128,
        });
    }
    let flat: &[f32] = bytemuck::cast_slice(p);
    check_finite(field, flat).map_err(|e| match e {
        Error::NonFinite {
            field,
            index,
            value,
        } => Error::arg(
            field,
            format!(
                "point {} coordinate {} = {value} is not finite",
                index / 3,
                index % 3
            ),
        ),
        e => e,
    })
}

/// For backends that compute squared distances in f32 and do not rescale
/// (see [`crate::f32_overflow_shift`]): [`Error::Unsupported`] naming the
/// first point with a coordinate beyond [`crate::F32_SAFE_COORD`], whose f32
/// squared distances could overflow and silently pick a wrong neighbour.
/// `Unsupported` hands the call on to the next backend of a facade chain.
pub fn f32_distances_fit(a: &[Point], b: &[Point]) -> Result<()> {
    for (field, pts) in [("a", a), ("b", b)] {
        for (i, p) in pts.iter().enumerate() {
            if let Some(d) = (0..3).find(|&d| p[d].abs() > crate::F32_SAFE_COORD) {
                return Err(Error::Unsupported(format!(
                    "{field}[{i}] coordinate {d} = {:e} exceeds {:e}: f32 squared distances \
                     would overflow, and this backend does not rescale",
                    p[d],
                    crate::F32_SAFE_COORD
                )));
            }
        }
    }
    Ok(())
}

/// Checks `nearest(a, b, out)`.
pub fn nearest(a: &[Point], b: &[Point], out: &[Neighbor]) -> Result<()> {
    points("a", a)?;
    points("b", b)?;
    if b.is_empty() {
        return Err(Error::arg("b", "B is empty: there is no nearest point"));
    }
    if out.len() != a.len() {
        return Err(Error::dim(
            "out",
            format!("length {}, expected |A| = {}", out.len(), a.len()),
        ));
    }
    Ok(())
}

/// Checks `knn(a, b, k, out)`.
pub fn knn(a: &[Point], b: &[Point], k: usize, out: &[Neighbor]) -> Result<()> {
    points("a", a)?;
    points("b", b)?;
    if b.is_empty() && k > 0 {
        return Err(Error::arg("b", "B is empty: there is no nearest point"));
    }
    if k > b.len() {
        return Err(Error::arg(
            "k",
            format!("k = {k} exceeds |B| = {}", b.len()),
        ));
    }
    if Some(out.len()) != a.len().checked_mul(k) {
        return Err(Error::dim(
            "out",
            format!("length {}, expected |A| * k = {} * {k}", out.len(), a.len()),
        ));
    }
    Ok(())
}

/// Checks `closest_pairs(a, b, k)`.
pub fn closest_pairs(a: &[Point], b: &[Point]) -> Result<()> {
    points("a", a)?;
    points("b", b)?;
    if b.is_empty() {
        return Err(Error::arg("b", "B is empty: there is no nearest point"));
    }
    Ok(())
}

/// Checks an OMP call.
pub fn encode<T: Scalar>(
    dict: &Dictionary<T>,
    signals: &MatRef<'_, T>,
    rule: &StopRule,
) -> Result<()> {
    if signals.cols() != dict.n() {
        return Err(Error::dim(
            "signals",
            format!(
                "signals have length {}, the dictionary's atoms {}",
                signals.cols(),
                dict.n()
            ),
        ));
    }
    if let Some(e) = rule.error_target()
        && (e.is_nan() || e < 0.0 || e.is_infinite())
    {
        return Err(Error::arg(
            "rule",
            format!("error target {e} must be finite and >= 0"),
        ));
    }
    check_view_finite("signals", signals)
}

/// Checks OMP output shape invariants (used by verification, cheap).
pub fn sparse_codes<T: Scalar>(codes: &SparseCodes<T>, signals: usize, atoms: usize) -> Result<()> {
    if codes.offsets.len() != signals + 1 || codes.residual_norm2.len() != signals {
        return Err(Error::dim(
            "codes",
            format!(
                "{} offsets and {} residuals for {signals} signals",
                codes.offsets.len(),
                codes.residual_norm2.len()
            ),
        ));
    }
    let nnz = *codes.offsets.last().unwrap_or(&0);
    if codes.offsets[0] != 0
        || codes.offsets.windows(2).any(|w| w[1] < w[0])
        || codes.atoms.len() != nnz
        || codes.coefs.len() != nnz
    {
        return Err(Error::dim(
            "codes.offsets",
            "not a valid offset array for atoms/coefs",
        ));
    }
    if let Some(p) = codes.atoms.iter().position(|&j| j as usize >= atoms) {
        return Err(Error::csr(
            "codes.atoms",
            p,
            format!("atom {} out of range for {atoms}", codes.atoms[p]),
        ));
    }
    Ok(())
}
