//! Checks every backend runs first, so that no backend re-checks by hand and all
//! of them reject the same inputs with the same error.
//!
//! Types that are valid by construction ([`crate::CsrMatrix`], [`crate::Dictionary`],
//! [`crate::GridGraph`], [`crate::FlowNetwork`], [`crate::MatRef`]) need only the
//! checks that relate several arguments; those live here.
//!
//! Device-resident arguments (the `*Device` traits of [`crate::device`]) are
//! checked here too, one function per primitive (`gemm_device`,
//! `spgemm_device`, `nearest_device`, `knn_device`, `closest_pairs_device`),
//! sharing the shape rules with the host checks so that a host call and a
//! device call reject the same shapes with the same error. Device values are
//! not re-checked for finiteness (that would need a pass over device memory).

use crate::device::{DeviceCsr, DeviceMat, DeviceMemory, Element};
use crate::{
    Coord, CsrMatrix, Dictionary, Error, GemmDims, GemmParams, MatMut, MatRef, Neighbor, Op, Point,
    Result, Scalar, SparseCodes, StopRule,
};

/// Fails unless a row-major `rows x cols` matrix stored without padding fills
/// exactly `len` elements, naming `field` and both counts.
pub fn exact_len(field: &'static str, rows: usize, cols: usize, len: usize) -> Result<()> {
    if rows.checked_mul(cols) == Some(len) {
        return Ok(());
    }
    Err(Error::dim(
        field,
        format!(
            "{rows} x {cols} needs {} elements, the slice has {len}",
            rows as u128 * cols as u128
        ),
    ))
}

/// Fails on the first NaN or infinity in `data`, naming `field` and its index.
///
/// Fast because it runs on every host call of every backend, ahead of the
/// work: blocks are screened branch-free (the compiler vectorizes the `&`
/// fold), large slices on several threads, and only a failing block is
/// searched for its first bad entry. A single chain of adds here took 40 ms
/// of a 52 ms host-to-host gemm-4096 on the H100 machine.
pub fn check_finite<T: Scalar>(field: &'static str, data: &[T]) -> Result<()> {
    match first_bad(data, |v: T| v.is_finite()) {
        Some(i) => Err(Error::NonFinite {
            field,
            index: i,
            value: data[i].to_f64(),
        }),
        None => Ok(()),
    }
}

/// Runs the input check `check` beside `upload` (a backend's copy of the
/// same inputs to its device) and returns the upload's result, the check's
/// error first: nothing has been computed when it is reported. When `large`
/// the check runs on another thread, hidden behind the copy; otherwise on
/// this thread first, as a thread's start costs more than a small check (a
/// 10K-nnz SpGEMM took 0.45 ms host-to-host with the extra thread, 0.24 ms
/// without, on the H100 machine).
pub fn check_beside<R>(
    large: bool,
    check: impl Fn() -> Result<()> + Sync,
    upload: impl FnOnce() -> Result<R>,
) -> Result<R> {
    if !large {
        check()?;
        return upload();
    }
    let (checked, uploaded) = std::thread::scope(|s| {
        let scan = s.spawn(&check);
        let up = upload();
        // A check thread cannot panic; if one did, check again here.
        (scan.join().unwrap_or_else(|_| check()), up)
    });
    checked?;
    uploaded
}

/// Elements per branch-free block of [`first_bad`].
const FINITE_BLOCK: usize = 512;
/// From this many elements the scan is split over threads.
const FINITE_PAR_MIN: usize = 1 << 20;
/// Most threads one scan starts when it has no pool (without the `rayon`
/// feature): a few saturate a socket's memory bandwidth.
#[cfg(any(test, not(feature = "rayon")))]
const SCAN_MAX_THREADS: usize = 8;
/// Parts per pool thread of a scan on rayon's pool (with the `rayon`
/// feature), so that threads that finish early take more.
#[cfg(feature = "rayon")]
const SCAN_PARTS_PER_THREAD: usize = 4;

/// `f` over `0..len` cut into consecutive parts, run in parallel when `par`
/// (the caller's estimate that the work is large enough) holds and several
/// threads are there; else `f(0..len)` alone. The answers come in part
/// order. The input checks of this crate share it: each screens its parts
/// cheaply and only the caller searches a failing part for the first fault,
/// so the parts never change which fault is reported.
///
/// With the `rayon` feature (which the rayon backend turns on) the parts run
/// on the current rayon pool (`scan_on_pool`), else each on a fresh
/// thread (`scan_on_threads`). On 16 cores a scan of 1M f32 took 295 us
/// on fresh threads (their start and join alone 130-180 us) and 41 us on
/// the pool; 4M, 366 against 97 us.
pub(crate) fn scan_parts<R: Send>(
    len: usize,
    par: bool,
    f: impl Fn(std::ops::Range<usize>) -> R + Sync,
) -> Vec<R> {
    if !par {
        return vec![f(0..len)];
    }
    #[cfg(feature = "rayon")]
    return scan_on_pool(len, f);
    #[cfg(not(feature = "rayon"))]
    scan_on_threads(len, f)
}

/// [`scan_parts`] on the current rayon pool: inside a backend's `install`
/// its pool, else rayon's global one; [`SCAN_PARTS_PER_THREAD`] parts a
/// thread.
#[cfg(feature = "rayon")]
fn scan_on_pool<R: Send>(len: usize, f: impl Fn(std::ops::Range<usize>) -> R + Sync) -> Vec<R> {
    use rayon::prelude::*;
    let threads = rayon::current_num_threads();
    if threads < 2 || len < 2 {
        return vec![f(0..len)];
    }
    let per = len.div_ceil((SCAN_PARTS_PER_THREAD * threads).min(len));
    (0..len.div_ceil(per))
        .into_par_iter()
        .map(|i| f(i * per..((i + 1) * per).min(len)))
        .collect()
}

/// [`scan_parts`] without a pool: a fresh thread a part, at most
/// [`SCAN_MAX_THREADS`]. Compiled for the tests too, so that the workspace's
/// tests (where the feature is on) cover it.
#[cfg(any(test, not(feature = "rayon")))]
fn scan_on_threads<R: Send>(len: usize, f: impl Fn(std::ops::Range<usize>) -> R + Sync) -> Vec<R> {
    let threads = machine_threads().min(SCAN_MAX_THREADS).min(len);
    if threads < 2 {
        return vec![f(0..len)];
    }
    let per = len.div_ceil(threads);
    let f = &f;
    std::thread::scope(|s| {
        let parts: Vec<_> = (0..len)
            .step_by(per)
            .map(|lo| {
                let r = lo..(lo + per).min(len);
                (r.clone(), s.spawn(move || f(r)))
            })
            .collect();
        parts
            .into_iter()
            // A scan thread cannot panic; if one did, redo its part here.
            .map(|(r, h)| h.join().unwrap_or_else(|_| f(r)))
            .collect()
    })
}

/// The machine's thread count, read once: `available_parallelism` reads the
/// cgroup files on Linux at every call (tens of microseconds), which made the
/// row-by-row scan of a padded 1024 x 1024 view take 150 ms.
#[cfg(any(test, not(feature = "rayon")))]
fn machine_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The index of the first element of `data` that is not `ok`.
fn first_bad<T: Copy + Sync>(data: &[T], ok: impl Fn(T) -> bool + Sync) -> Option<usize> {
    scan_parts(data.len(), data.len() >= FINITE_PAR_MIN, |r| {
        first_bad_serial(&data[r.clone()], &ok).map(|i| r.start + i)
    })
    .into_iter()
    .find_map(|first| first)
}

fn first_bad_serial<T: Copy>(data: &[T], ok: &impl Fn(T) -> bool) -> Option<usize> {
    let bad = data
        .chunks(FINITE_BLOCK)
        .position(|b| !b.iter().fold(true, |all, &v| all & ok(v)))?;
    let start = bad * FINITE_BLOCK;
    data[start..]
        .iter()
        .position(|&v| !ok(v))
        .map(|i| start + i)
}

fn check_view_finite<T: Scalar>(field: &'static str, m: &MatRef<'_, T>) -> Result<()> {
    // A view with no elements may still have 2^40 rows of length 0: do not
    // walk them (nothing to compute must cost nothing).
    if m.rows() == 0 || m.cols() == 0 {
        return Ok(());
    }
    if m.ld() == m.cols() {
        // Packed: one slice, scanned on several threads when large; its
        // indices are the view's `i * ld + j`.
        return check_finite(field, &m.data()[..m.rows() * m.cols()]);
    }
    // Padded: bands of rows, on several threads when the view is large,
    // reporting the first bad element in row-major order.
    let (rows, cols) = (m.rows(), m.cols());
    let bad = scan_parts(rows, rows * cols >= FINITE_PAR_MIN, |r| {
        r.into_iter()
            .find_map(|i| first_bad_serial(m.row(i), &|v: T| v.is_finite()).map(|j| (i, j)))
    })
    .into_iter()
    .find_map(|first| first);
    match bad {
        Some((i, j)) => Err(Error::NonFinite {
            field,
            index: i * m.ld() + j,
            value: m.row(i)[j].to_f64(),
        }),
        None => Ok(()),
    }
}

fn op_shape((rows, cols): (usize, usize), op: Op) -> (usize, usize) {
    match op {
        Op::N => (rows, cols),
        Op::T => (cols, rows),
    }
}

/// The shape and scalar rules of a GEMM call, on `(rows, cols)` as stored:
/// op(A) and op(B) conform, C is m x n, alpha and beta finite.
fn gemm_shapes<T: Scalar>(
    p: &GemmParams<T>,
    a: (usize, usize),
    b: (usize, usize),
    c: (usize, usize),
) -> Result<GemmDims> {
    let (m, k) = op_shape(a, p.op_a);
    let (kb, n) = op_shape(b, p.op_b);
    if k != kb {
        return Err(Error::dim(
            "b",
            format!("op(A) is {m} x {k} but op(B) is {kb} x {n}"),
        ));
    }
    if c != (m, n) {
        return Err(Error::dim(
            "c",
            format!("C is {} x {}, op(A) op(B) is {m} x {n}", c.0, c.1),
        ));
    }
    for (field, v) in [("alpha", p.alpha), ("beta", p.beta)] {
        if !v.is_finite() {
            return Err(Error::NonFinite {
                field,
                index: 0,
                value: v.to_f64(),
            });
        }
    }
    Ok(GemmDims { m, n, k })
}

/// Checks a GEMM call and returns its m, n, k.
pub fn gemm<T: Scalar>(
    p: &GemmParams<T>,
    a: &MatRef<'_, T>,
    b: &MatRef<'_, T>,
    c: &MatMut<'_, T>,
) -> Result<GemmDims> {
    let dims = gemm_dims(p, a, b, c)?;
    gemm_finite(p, a, b, &c.as_ref())?;
    Ok(dims)
}

/// The shape and scalar checks of [`gemm`] alone (no pass over the values).
/// A backend that overlaps the value scan with other work calls this first,
/// then [`gemm_finite`], and reports the latter's error before any other.
pub fn gemm_dims<T: Scalar>(
    p: &GemmParams<T>,
    a: &MatRef<'_, T>,
    b: &MatRef<'_, T>,
    c: &MatMut<'_, T>,
) -> Result<GemmDims> {
    gemm_shapes(
        p,
        (a.rows(), a.cols()),
        (b.rows(), b.cols()),
        (c.rows(), c.cols()),
    )
}

/// The value checks of [`gemm`]: A and B finite, and C too when `beta != 0`
/// (it is read).
pub fn gemm_finite<T: Scalar>(
    p: &GemmParams<T>,
    a: &MatRef<'_, T>,
    b: &MatRef<'_, T>,
    c: &MatRef<'_, T>,
) -> Result<()> {
    check_view_finite("a", a)?;
    check_view_finite("b", b)?;
    if p.beta != T::ZERO {
        check_view_finite("c", c)?;
    }
    Ok(())
}

/// Checks the operands of `A * B`: shapes that fit and finite values (a
/// [`CsrMatrix`] built by [`CsrMatrix::from_result`], e.g. an earlier product
/// that overflowed, may hold `inf`; it is not a valid input).
pub fn spgemm<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<()> {
    spgemm_dims(a, b)?;
    spgemm_finite(a, b)
}

/// The shape check of [`spgemm`] alone (for a backend that overlaps the
/// value scan, [`spgemm_finite`], with other work and reports it first).
pub fn spgemm_dims<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<()> {
    spgemm_shapes((a.rows(), a.cols()), (b.rows(), b.cols()))
}

/// The value check of [`spgemm`]: every stored value of A and B finite.
pub fn spgemm_finite<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<()> {
    check_finite("a.values", a.values())?;
    check_finite("b.values", b.values())
}

fn spgemm_shapes(a: (usize, usize), b: (usize, usize)) -> Result<()> {
    if a.1 != b.0 {
        return Err(Error::dim(
            "b.rows",
            format!("A is {} x {} but B is {} x {}", a.0, a.1, b.0, b.1),
        ));
    }
    Ok(())
}

/// Checks a point count: at most `u32::MAX` (indices are `u32`).
pub fn point_count(field: &'static str, len: usize) -> Result<()> {
    if len > u32::MAX as usize {
        return Err(Error::TooLarge {
            field,
            value: len as u128,
            limit: u32::MAX as u128,
        });
    }
    Ok(())
}

/// Checks a point set: at most `u32::MAX` points, all coordinates finite.
pub fn points<T: Coord>(field: &'static str, p: &[Point<T>]) -> Result<()> {
    point_count(field, p.len())?;
    let flat: &[T] = p.as_flattened();
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

fn b_not_empty(b_len: usize) -> Result<()> {
    if b_len == 0 {
        return Err(Error::arg("b", "B is empty: there is no nearest point"));
    }
    Ok(())
}

/// The size rules of `nearest` on lengths: B not empty, `|out| == |A|`.
fn nearest_sizes(a_len: usize, b_len: usize, out_len: usize) -> Result<()> {
    b_not_empty(b_len)?;
    if out_len != a_len {
        return Err(Error::dim(
            "out",
            format!("length {out_len}, expected |A| = {a_len}"),
        ));
    }
    Ok(())
}

/// The size rules of `knn` on lengths: `k <= |B|`, `|out| == |A| * k`.
fn knn_sizes(a_len: usize, b_len: usize, k: usize, out_len: usize) -> Result<()> {
    if k > 0 {
        b_not_empty(b_len)?;
    }
    if k > b_len {
        return Err(Error::arg("k", format!("k = {k} exceeds |B| = {b_len}")));
    }
    if Some(out_len) != a_len.checked_mul(k) {
        return Err(Error::dim(
            "out",
            format!("length {out_len}, expected |A| * k = {a_len} * {k}"),
        ));
    }
    Ok(())
}

/// Checks `nearest(a, b, out)`.
pub fn nearest<T: Coord>(a: &[Point<T>], b: &[Point<T>], out: &[Neighbor<T>]) -> Result<()> {
    points("a", a)?;
    points("b", b)?;
    nearest_sizes(a.len(), b.len(), out.len())
}

/// Checks `knn(a, b, k, out)`.
pub fn knn<T: Coord>(a: &[Point<T>], b: &[Point<T>], k: usize, out: &[Neighbor<T>]) -> Result<()> {
    points("a", a)?;
    points("b", b)?;
    knn_sizes(a.len(), b.len(), k, out.len())
}

/// Checks `closest_pairs(a, b, k)`.
pub fn closest_pairs<T: Coord>(a: &[Point<T>], b: &[Point<T>]) -> Result<()> {
    points("a", a)?;
    points("b", b)?;
    b_not_empty(b.len())
}

/// Checks a search radius: finite and `>= 0`.
pub fn radius<T: Coord>(r: T) -> Result<()> {
    if !r.is_finite() || r < T::ZERO {
        return Err(Error::arg(
            "r",
            format!("radius {r} must be finite and >= 0"),
        ));
    }
    Ok(())
}

/// Checks `within(a, b, r, max_pairs)`: the points and the radius (B may be
/// empty: every row is then empty).
pub fn within<T: Coord>(a: &[Point<T>], b: &[Point<T>], r: T) -> Result<()> {
    points("a", a)?;
    points("b", b)?;
    radius(r)
}

/// Checks `self_pairs(p, r, max_pairs)`.
pub fn self_pairs<T: Coord>(p: &[Point<T>], r: T) -> Result<()> {
    points("p", p)?;
    radius(r)
}

/// The size rule of a radius search, once its pairs are counted and before
/// the result is allocated: at most `max_pairs`.
pub fn radius_count(count: u128, max_pairs: usize) -> Result<()> {
    if count > max_pairs as u128 {
        return Err(Error::TooLarge {
            field: "pairs within r",
            value: count,
            limit: max_pairs as u128,
        });
    }
    Ok(())
}

/// Checks an OMP call.
pub fn encode<T: Scalar>(
    dict: &Dictionary<T>,
    signals: &MatRef<'_, T>,
    rule: &StopRule,
) -> Result<()> {
    encode_shape(dict, signals.cols(), rule)?;
    check_view_finite("signals", signals)
}

/// The checks of [`encode`] that read no signal value: the signal length
/// against the dictionary and the stop rule. For signals already in device
/// memory, whose values a backend does not read back to check.
pub fn encode_shape<T: Scalar>(
    dict: &Dictionary<T>,
    signal_len: usize,
    rule: &StopRule,
) -> Result<()> {
    if signal_len != dict.n() {
        return Err(Error::dim(
            "signals",
            format!(
                "signals have length {signal_len}, the dictionary's atoms {}",
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
    Ok(())
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

// ------------------------------------------------------------ device views

/// Checks that a device matrix view fits its buffer (`ld >= cols`,
/// `(rows - 1) * ld + cols <= len`), naming `field`.
pub fn device_mat<M: DeviceMemory + ?Sized, T: Element>(
    mem: &M,
    field: &'static str,
    m: &DeviceMat<M::Buffer<T>>,
) -> Result<()> {
    crate::dense::check_view_fields(field, field, mem.buffer_len(&m.buf), m.rows, m.cols, m.ld)
}

/// Checks that a device CSR matrix's buffers hold what its shape says:
/// `rows + 1` offsets and at least `nnz` indices and values. (Its contents
/// were valid when it was uploaded or produced; they are not re-read.)
pub fn device_csr<M: DeviceMemory + ?Sized, T: Scalar>(
    mem: &M,
    field: &'static str,
    m: &DeviceCsr<M, T>,
) -> Result<()> {
    let (offsets, indices, values) = (
        mem.buffer_len(&m.offsets),
        mem.buffer_len(&m.indices),
        mem.buffer_len(&m.values),
    );
    if offsets != m.rows() + 1 || indices < m.nnz() || values < m.nnz() {
        return Err(Error::dim(
            field,
            format!(
                "a {} x {} matrix with {} entries has buffers of {offsets} offsets, {indices} indices, {values} values",
                m.rows(),
                m.cols(),
                m.nnz(),
            ),
        ));
    }
    Ok(())
}

/// Checks a device GEMM call ([`crate::DenseGemmDevice::gemm_device`]): each
/// view fits its buffer, then the same shape and scalar rules as [`gemm`].
pub fn gemm_device<M: DeviceMemory + ?Sized, T: Scalar>(
    mem: &M,
    p: &GemmParams<T>,
    a: &DeviceMat<M::Buffer<T>>,
    b: &DeviceMat<M::Buffer<T>>,
    c: &DeviceMat<M::Buffer<T>>,
) -> Result<GemmDims> {
    device_mat(mem, "a", a)?;
    device_mat(mem, "b", b)?;
    device_mat(mem, "c", c)?;
    gemm_shapes(p, (a.rows, a.cols), (b.rows, b.cols), (c.rows, c.cols))
}

/// Checks a device SpGEMM call ([`crate::SparseGemmDevice::spgemm_device`]).
pub fn spgemm_device<M: DeviceMemory + ?Sized, T: Scalar>(
    mem: &M,
    a: &DeviceCsr<M, T>,
    b: &DeviceCsr<M, T>,
) -> Result<()> {
    device_csr(mem, "a", a)?;
    device_csr(mem, "b", b)?;
    spgemm_shapes((a.rows(), a.cols()), (b.rows(), b.cols()))
}

/// Checks a device `nearest` call: point counts, B not empty, `|out| == |A|`.
pub fn nearest_device<M: DeviceMemory + ?Sized>(
    mem: &M,
    a: &M::Buffer<Point>,
    b: &M::Buffer<Point>,
    out: &M::Buffer<Neighbor>,
) -> Result<()> {
    let (a, b) = device_points(mem, a, b)?;
    nearest_sizes(a, b, mem.buffer_len(out))
}

/// Checks a device `knn` call: point counts, `k <= |B|`, `|out| == |A| * k`.
pub fn knn_device<M: DeviceMemory + ?Sized>(
    mem: &M,
    a: &M::Buffer<Point>,
    b: &M::Buffer<Point>,
    k: usize,
    out: &M::Buffer<Neighbor>,
) -> Result<()> {
    let (a, b) = device_points(mem, a, b)?;
    knn_sizes(a, b, k, mem.buffer_len(out))
}

/// Checks a device `closest_pairs` call: point counts, B not empty.
pub fn closest_pairs_device<M: DeviceMemory + ?Sized>(
    mem: &M,
    a: &M::Buffer<Point>,
    b: &M::Buffer<Point>,
) -> Result<()> {
    let (_, b) = device_points(mem, a, b)?;
    b_not_empty(b)
}

/// Checks the points a kept index is built over: a point count, B not empty.
pub fn index_points<M: DeviceMemory + ?Sized>(mem: &M, b: &M::Buffer<Point>) -> Result<()> {
    let b = mem.buffer_len(b);
    point_count("b", b)?;
    b_not_empty(b)
}

/// Checks a device `nearest` call against an index of `index_len` points.
pub fn nearest_indexed<M: DeviceMemory + ?Sized>(
    mem: &M,
    a: &M::Buffer<Point>,
    index_len: usize,
    out: &M::Buffer<Neighbor>,
) -> Result<()> {
    let a = mem.buffer_len(a);
    point_count("a", a)?;
    nearest_sizes(a, index_len, mem.buffer_len(out))
}

/// Checks a device `closest_pairs` call against an index: A's point count.
pub fn closest_pairs_indexed<M: DeviceMemory + ?Sized>(
    mem: &M,
    a: &M::Buffer<Point>,
) -> Result<()> {
    point_count("a", mem.buffer_len(a))
}

fn device_points<M: DeviceMemory + ?Sized>(
    mem: &M,
    a: &M::Buffer<Point>,
    b: &M::Buffer<Point>,
) -> Result<(usize, usize)> {
    let (a, b) = (mem.buffer_len(a), mem.buffer_len(b));
    point_count("a", a)?;
    point_count("b", b)?;
    Ok((a, b))
}

#[cfg(test)]
mod finite_tests {
    use super::*;

    /// The first bad entry is found wherever it sits: inside or at the edge
    /// of a block, in any part of a scan split over threads, with a second
    /// bad entry later on.
    #[test]
    fn the_first_non_finite_entry_is_reported() {
        for len in [0, 1, 511, 512, 513, 5000, FINITE_PAR_MIN + 12_345] {
            let mut v = vec![1.5f32; len];
            assert!(check_finite("v", &v).is_ok(), "{len}");
            let spots = [
                0,
                FINITE_BLOCK - 1,
                FINITE_BLOCK,
                len / 3,
                len / 2 + 7,
                len.saturating_sub(1),
            ];
            for &at in spots.iter().filter(|&&at| at < len) {
                for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                    v[at] = bad;
                    if at + 100 < len {
                        v[at + 100] = f32::NAN;
                    }
                    match check_finite("v", &v) {
                        Err(Error::NonFinite {
                            field: "v", index, ..
                        }) => {
                            assert_eq!(index, at, "len {len}")
                        }
                        other => panic!("len {len} at {at}: {other:?}"),
                    }
                    v[at] = 1.5;
                    if at + 100 < len {
                        v[at + 100] = 1.5;
                    }
                }
            }
        }
        // Large finite values whose sum would overflow are still finite.
        assert!(check_finite("v", &vec![f64::MAX; 2000]).is_ok());
    }

    /// Both ways of running a scan cut `0..len` into consecutive, non-empty
    /// parts, in order, covering it once: whichever the build takes, the
    /// first failing part holds the first fault.
    #[test]
    fn scans_cover_every_index_in_order() {
        let check = |parts: Vec<std::ops::Range<usize>>, len: usize, how: &str| {
            let mut next = 0;
            for r in &parts {
                assert_eq!(r.start, next, "{how}, len {len}: {parts:?}");
                assert!(r.end > r.start || len == 0, "{how}, len {len}: empty part");
                next = r.end;
            }
            assert_eq!(next, len, "{how}, len {len}");
        };
        for len in [0, 1, 2, 7, 1000, FINITE_PAR_MIN + 3] {
            check(scan_on_threads(len, |r| r), len, "threads");
            #[cfg(feature = "rayon")]
            check(scan_on_pool(len, |r| r), len, "pool");
            check(scan_parts(len, true, |r| r), len, "scan_parts");
        }
    }
}
