//! Device buffers: allocation with limit checks, host <-> device copies, and
//! the [`DeviceMemory`] implementation.
//!
//! Every buffer is a storage buffer that can also be copied from and to. Its
//! byte size is rounded up to a multiple of 4 (copies and bindings need it) and
//! is at least 16, so a buffer of zero elements is still a real, bindable
//! buffer; the padding is never read back.
//!
//! Released buffers go to a bounded `Pool` (the role `cudaMallocAsync`'s
//! pool plays for the CUDA backend): creating a buffer of hundreds of MB costs
//! milliseconds in wgpu (the driver's allocation plus wgpu's zero fill on
//! first use), and an SpGEMM creates C afresh on every call. Only
//! [`WgpuBackend::alloc_uninit`] draws from the pool, for outputs that kernels
//! overwrite completely; [`WgpuBackend::alloc`] still returns a fresh, zeroed
//! buffer.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use trident_core::{DeviceMemory, Element, Error, Result};
use wgpu::util::DeviceExt;

use crate::WgpuBackend;
use crate::error::failure;

/// Idle device buffers kept for reuse, at most `limit` bytes in all.
///
/// A buffer enters when the last handle to it is dropped (a [`WgpuBuffer`]
/// and all its [`WgpuBuffer::cast_ref`] views): wgpu orders later queued
/// work after the work already queued on it, so reuse never races. When a
/// buffer would take the pool past its bound, the buffers released longest
/// ago are dropped to make room (a buffer larger than the bound is dropped
/// itself), so the pool never holds more than `limit` bytes of device memory
/// that no one uses, and it follows the sizes in use now. (Keeping the old
/// buffers instead left a bench run's pool full of an earlier case's sizes:
/// every later SpGEMM created C afresh, 7x slower on the H100.)
pub(crate) struct Pool {
    state: Mutex<PoolState>,
    limit: AtomicU64,
}

#[derive(Default)]
struct PoolState {
    /// Idle buffers by byte size, each with its release stamp (ascending).
    free: BTreeMap<u64, Vec<(u64, wgpu::Buffer)>>,
    /// Release stamp -> size of every idle buffer, oldest first.
    order: BTreeMap<u64, u64>,
    /// Sum of their sizes.
    bytes: u64,
    /// The next release stamp.
    next: u64,
}

impl PoolState {
    /// Drops the idle buffer released longest ago; `false` when none is left.
    fn drop_oldest(&mut self) -> bool {
        let Some((stamp, size)) = self.order.pop_first() else {
            return false;
        };
        if let Some(list) = self.free.get_mut(&size) {
            list.retain(|(s, _)| *s != stamp);
            if list.is_empty() {
                self.free.remove(&size);
            }
        }
        self.bytes -= size;
        true
    }
}

impl Pool {
    /// An empty pool that keeps at most `limit` bytes.
    pub(crate) fn new(limit: u64) -> Self {
        Self {
            state: Mutex::default(),
            limit: AtomicU64::new(limit),
        }
    }

    /// Keeps `b` for reuse, dropping the oldest idle buffers to make room,
    /// or drops `b` when it alone exceeds the bound. (A poisoned lock only
    /// turns pooling off: the buffer is dropped.)
    fn give(&self, b: wgpu::Buffer) {
        let size = b.size();
        let limit = self.limit.load(Ordering::Relaxed);
        if size > limit {
            return;
        }
        if let Ok(mut st) = self.state.lock() {
            while st.bytes + size > limit && st.drop_oldest() {}
            let stamp = st.next;
            st.next += 1;
            st.bytes += size;
            st.order.insert(stamp, size);
            st.free.entry(size).or_default().push((stamp, b));
        }
    }

    /// The smallest idle buffer of `min..=max` bytes (of those, the one
    /// released last), if any.
    fn take(&self, min: u64, max: u64) -> Option<wgpu::Buffer> {
        let mut st = self.state.lock().ok()?;
        let (&size, list) = st.free.range_mut(min..=max).next()?;
        let (stamp, b) = list.pop()?;
        if list.is_empty() {
            st.free.remove(&size);
        }
        st.order.remove(&stamp);
        st.bytes -= size;
        Some(b)
    }

    /// Sets the bound and releases the oldest idle buffers until the pool
    /// holds at most that many bytes.
    fn set_limit(&self, limit: u64) {
        self.limit.store(limit, Ordering::Relaxed);
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        while st.bytes > limit && st.drop_oldest() {}
    }

    /// Bytes held idle now.
    fn bytes(&self) -> u64 {
        self.state.lock().map_or(0, |st| st.bytes)
    }
}

/// Default bound of the pool: `TRIDENT_WGPU_POOL_MB` when set, else 4 GiB on
/// a GPU (room for SpGEMM's C on the benchmark cases, twice over) and 256 MiB
/// on a CPU adapter (llvmpipe), whose "device memory" is the host's.
pub(crate) fn default_pool_limit(info: &wgpu::AdapterInfo) -> u64 {
    if let Some(mb) = std::env::var("TRIDENT_WGPU_POOL_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        return mb << 20;
    }
    if info.device_type == wgpu::DeviceType::Cpu {
        256 << 20
    } else {
        4 << 30
    }
}

/// One wgpu buffer shared by a [`WgpuBuffer`] and its views; given to the
/// pool when the last of them is dropped.
struct Raw {
    buf: wgpu::Buffer,
    pool: Option<Arc<Pool>>,
}

impl Drop for Raw {
    fn drop(&mut self) {
        if let Some(p) = self.pool.take() {
            p.give(self.buf.clone());
        }
    }
}

/// `len` elements of `T` in device memory.
pub struct WgpuBuffer<T: Element> {
    raw: Arc<Raw>,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element> WgpuBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// `true` when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size of the elements in bytes (without the padding to 4).
    pub fn num_bytes(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }
    /// The wgpu buffer, to bind in a dispatch.
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.raw.buf
    }
    /// Bytes a binding of this buffer covers: its elements, padded as at
    /// creation (the wgpu buffer may be larger when it came from the pool).
    pub fn binding_bytes(&self) -> u64 {
        padded(self.num_bytes())
    }
    /// The same memory as `U` elements (the byte length must divide evenly):
    /// one scratch buffer for kernels of several element types, or an `f32`
    /// buffer behind a generic `T` that is known to be `f32`.
    pub fn cast<U: Element>(self) -> Result<WgpuBuffer<U>> {
        let bytes = self.num_bytes() as usize;
        let size = std::mem::size_of::<U>();
        if size == 0 || !bytes.is_multiple_of(size) {
            return Err(Error::dim(
                "buffer",
                format!("{bytes} bytes is not a whole number of {size}-byte elements"),
            ));
        }
        Ok(WgpuBuffer {
            raw: self.raw,
            len: bytes / size,
            _t: PhantomData,
        })
    }
    /// A borrowed view as `U` elements (same rule as [`WgpuBuffer::cast`]).
    pub fn cast_ref<U: Element>(&self) -> Result<WgpuBuffer<U>> {
        WgpuBuffer {
            raw: Arc::clone(&self.raw),
            len: self.len,
            _t: PhantomData::<fn() -> T>,
        }
        .cast()
    }
}

impl<T: Element> std::fmt::Debug for WgpuBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WgpuBuffer<{}>[{}]",
            std::any::type_name::<T>(),
            self.len
        )
    }
}

/// Bytes a buffer of `bytes` content occupies: a multiple of 4, at least 16
/// (so that even an empty buffer binds where a shader expects one element
/// of up to a `vec4`).
fn padded(bytes: u64) -> u64 {
    bytes.max(16).next_multiple_of(4)
}

/// Size class of a buffer of `bytes` (padded) bytes: rounded up to 1/8 of
/// its power of two (256 bytes at least), so pooled buffers waste at most
/// 1/8 and calls of slightly different sizes share them.
fn size_class(bytes: u64) -> u64 {
    let step = (bytes.next_power_of_two() / 8).max(256);
    bytes.next_multiple_of(step)
}

/// Usages of every device buffer: storage, copies, and the workgroup counts
/// of an indirect dispatch that a kernel computed ([`crate::Encoder::dispatch_indirect`]).
const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::INDIRECT);

impl WgpuBackend {
    /// Wraps a buffer this backend created (it returns to the pool when dropped).
    fn wrap<T: Element>(&self, buf: wgpu::Buffer, len: usize) -> WgpuBuffer<T> {
        WgpuBuffer {
            raw: Arc::new(Raw {
                buf,
                pool: Some(Arc::clone(&self.ctx.pool)),
            }),
            len,
            _t: PhantomData,
        }
    }

    /// A buffer of `len` elements whose contents are unspecified (left over
    /// from an earlier use): for outputs that the kernels overwrite entirely.
    /// Taken from the pool when an idle buffer of the size class is there;
    /// otherwise created at the class's size (`len`'s bytes rounded up by at
    /// most 1/8), so that it fits later calls of a similar size.
    pub fn alloc_uninit<T: Element>(&self, len: usize, what: &str) -> Result<WgpuBuffer<T>> {
        let need = padded(self.checked_bytes::<T>(len, what)?);
        let class = size_class(need)
            .min(self.ctx.limits.max_buffer_size)
            .max(need);
        if let Some(buf) = self.ctx.pool.take(need, class) {
            return Ok(self.wrap(buf, len));
        }
        let raw = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(what),
            size: class,
            usage: STORAGE,
            mapped_at_creation: false,
        });
        Ok(self.wrap(raw, len))
    }

    /// Sets the bound of the buffer pool in bytes (0 turns pooling off) and
    /// releases idle buffers beyond it. The default is 4 GiB on a GPU, 256
    /// MiB on a CPU adapter, or `TRIDENT_WGPU_POOL_MB` MiB when set.
    pub fn set_buffer_pool_limit(&self, bytes: u64) {
        self.ctx.pool.set_limit(bytes);
    }

    /// Drops the idle staging buffers that host copies go through (kept
    /// otherwise for the next copy: 96 MiB each way on a GPU); returns how
    /// many were dropped.
    pub fn release_staging(&self) -> usize {
        self.ctx.staging.release()
    }

    /// Bytes of device memory the pool holds idle now.
    pub fn buffer_pool_bytes(&self) -> u64 {
        self.ctx.pool.bytes()
    }

    /// Byte size of `len` elements of `T`, checked against the adapter's
    /// `max_buffer_size`; `what` names the buffer in the error.
    fn checked_bytes<T: Element>(&self, len: usize, what: &str) -> Result<u64> {
        let bytes = (len as u128) * (std::mem::size_of::<T>() as u128);
        let limit = self.ctx.limits.max_buffer_size;
        if bytes > limit as u128 {
            return Err(Error::OutOfMemory {
                bytes: bytes.min(u64::MAX as u128) as u64,
                detail: format!(
                    "device buffer `{what}` exceeds this adapter's max_buffer_size of {limit} bytes"
                ),
            });
        }
        Ok(bytes as u64)
    }

    /// A buffer of `len` elements whose contents are zero; `what` names it
    /// in errors. It comes from the pool like [`WgpuBackend::alloc_uninit`]'s,
    /// with a clear submitted at once (so work queued later, a
    /// `write_buffer` included, sees zeros first): a fresh buffer per call
    /// costs the driver's allocation, and its release evicted other
    /// buffers from the pool.
    pub fn alloc<T: Element>(&self, len: usize, what: &str) -> Result<WgpuBuffer<T>> {
        let buf = self.alloc_uninit::<T>(len, what)?;
        let mut enc = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
        enc.clear_buffer(buf.raw(), 0, Some(buf.binding_bytes()));
        self.ctx.queue.submit([enc.finish()]);
        Ok(buf)
    }

    /// Copies `host` into a new buffer (from the pool, see
    /// [`WgpuBackend::alloc_uninit`]); `what` names it in errors. The copy is
    /// queued, not waited for.
    pub fn upload_named<T: Element>(&self, host: &[T], what: &str) -> Result<WgpuBuffer<T>> {
        let buf = self.alloc_uninit::<T>(host.len(), what)?;
        let src: &[u8] = bytemuck::cast_slice(host);
        self.upload_bytes(src, buf.raw(), padded(src.len() as u64) as usize, what)?;
        Ok(buf)
    }

    /// Copies `src` to the start of `dst` and zeros after it up to `total`
    /// bytes (a multiple of 4): large copies through the staging buffers,
    /// small ones through wgpu's `write_buffer` (queued with the next
    /// submission, no submission of their own).
    fn upload_bytes(&self, src: &[u8], dst: &wgpu::Buffer, total: usize, what: &str) -> Result<()> {
        if src.len() >= STAGED_MIN {
            return self.stage_up(dst, src.len(), total, 1, what, &|at, mut out| {
                out.copy_from_slice(&src[at..at + out.len()]);
                Ok(())
            });
        }
        if src.len() == total {
            self.ctx.queue.write_buffer(dst, 0, src);
        } else {
            let mut v = src.to_vec();
            v.resize(total, 0);
            self.ctx.queue.write_buffer(dst, 0, &v);
        }
        Ok(())
    }

    /// A new buffer of `len` elements computed on the host by `fill`, which
    /// is called on consecutive blocks (with the index of the block's first
    /// element) from several threads and must set every element it is given;
    /// the first error, in element order, is returned (and the buffer is not
    /// made). Each block goes straight into the mapped staging memory wgpu
    /// uploads from: host data converted on the way (i64 capacities to i32,
    /// say) needs no intermediate `Vec`, and the conversion runs on several
    /// cores.
    pub fn upload_filled<T: Element>(
        &self,
        len: usize,
        what: &str,
        fill: impl Fn(usize, &mut [T]) -> Result<()> + Sync,
    ) -> Result<WgpuBuffer<T>> {
        let bytes = self.checked_bytes::<T>(len, what)? as usize;
        let size = std::mem::size_of::<T>();
        let buf = self.alloc_uninit::<T>(len, what)?;
        // One block of elements at a time is converted in a small host
        // buffer that stays in cache, then copied into the mapped memory.
        let per = (BLOCK_BYTES / size.max(1)).max(1);
        let first_err: Mutex<Option<(usize, Error)>> = Mutex::new(None);
        let total = padded(bytes as u64) as usize;
        let staged = self.stage_up(buf.raw(), bytes, total, size, what, &|at, out| {
            let (first, count) = (at / size, out.len() / size);
            let mut block = vec![T::zeroed(); per.min(count)];
            let mut out = out;
            let mut i = 0;
            while i < count {
                let n = per.min(count - i);
                if let Err(e) = fill(first + i, &mut block[..n]) {
                    if let Ok(mut slot) = first_err.lock()
                        && slot.as_ref().is_none_or(|(f, _)| first + i < *f)
                    {
                        *slot = Some((first + i, e));
                    }
                    return Err(failure(what, "a block could not be filled"));
                }
                let (mut head, tail) = out.split_at(n * size);
                head.copy_from_slice(bytemuck::cast_slice(&block[..n]));
                out = tail;
                i += n;
            }
            Ok(())
        });
        if let Err(e) = staged {
            return Err(match first_err.lock().ok().and_then(|mut s| s.take()) {
                Some((_, fill_err)) => fill_err,
                None => e,
            });
        }
        Ok(buf)
    }

    /// Copies `host` into the start of an existing buffer (`host.len() <= buf.len()`),
    /// queued before the next submission.
    pub fn upload_into<T: Element>(&self, host: &[T], buf: &WgpuBuffer<T>) -> Result<()> {
        if host.len() > buf.len {
            return Err(Error::dim(
                "buf",
                format!("{} elements do not fit a buffer of {}", host.len(), buf.len),
            ));
        }
        let src: &[u8] = bytemuck::cast_slice(host);
        if src.is_empty() {
            return Ok(());
        }
        self.upload_bytes(src, buf.raw(), src.len().next_multiple_of(4), "upload_into")
    }

    /// Copies `host` into `buf` from element `start` on (the range must lie
    /// inside `buf`; 4-byte elements, so offsets meet the copy alignment),
    /// queued before the next submission.
    pub(crate) fn upload_at<T: Element>(
        &self,
        host: &[T],
        buf: &WgpuBuffer<T>,
        start: usize,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        if start + host.len() > buf.len || !size.is_multiple_of(4) {
            return Err(Error::dim(
                "buf",
                format!(
                    "{} elements at {start} do not fit a buffer of {}",
                    host.len(),
                    buf.len
                ),
            ));
        }
        if !host.is_empty() {
            let src: &[u8] = bytemuck::cast_slice(host);
            self.ctx
                .queue
                .write_buffer(buf.raw(), (start * size) as u64, src);
        }
        Ok(())
    }

    /// The ranges `start..start + len` of `buf`, for each start, in one copy
    /// to the host (4-byte elements). Errors of earlier queued work surface
    /// here.
    pub(crate) fn download_ranges<T: Element>(
        &self,
        buf: &WgpuBuffer<T>,
        starts: &[usize],
        len: usize,
    ) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>();
        let total = starts.len() * len;
        if total == 0 {
            return Ok(Vec::new());
        }
        if starts.iter().any(|&s| s + len > buf.len) || !size.is_multiple_of(4) {
            return Err(Error::dim(
                "starts",
                format!("a range of {len} lies outside a buffer of {}", buf.len),
            ));
        }
        let mut out =
            trident_core::mem::fresh_vec::<T>(total, || format!("{total} downloaded elements"))?;
        let spans: Vec<(u64, usize)> = starts
            .iter()
            .map(|&s| ((s * size) as u64, len * size))
            .collect();
        // SAFETY: the spans are `total` elements and `out` is empty with room
        // for them.
        unsafe { self.download_spans_new(buf, &spans, &mut out, total, "download ranges")? };
        Ok(out)
    }

    /// A small uniform buffer holding `params` (a `#[repr(C)]` Pod struct whose
    /// layout matches the WGSL struct; padded to 16 bytes as uniforms need).
    pub fn uniform<P: bytemuck::Pod>(&self, params: &P) -> wgpu::Buffer {
        let src: &[u8] = bytemuck::bytes_of(params);
        let mut v = src.to_vec();
        v.resize(src.len().max(16).next_multiple_of(16), 0);
        self.ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: &v,
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    /// Copies the first `host.len()` elements of `buf` to the host and waits
    /// for it (`host.len() <= buf.len()`). Errors of earlier queued work
    /// surface here.
    pub fn download_into<T: Element>(&self, buf: &WgpuBuffer<T>, host: &mut [T]) -> Result<()> {
        if host.len() > buf.len {
            return Err(Error::dim(
                "host",
                format!(
                    "length {} but the device buffer holds {}",
                    host.len(),
                    buf.len
                ),
            ));
        }
        let n = std::mem::size_of_val(host);
        if n == 0 {
            return Ok(());
        }
        // SAFETY: a `T` slice is as many initialised bytes; written back as
        // bytes only, which any `Pod` accepts.
        let dst: &mut [std::mem::MaybeUninit<u8>] =
            unsafe { std::slice::from_raw_parts_mut(host.as_mut_ptr().cast(), n) };
        let job = crate::staging::Down {
            src: buf.raw(),
            spans: vec![(0, n)],
            dst,
        };
        self.stage_down(vec![job], "download")
    }

    /// Downloads a whole buffer into a new `Vec`.
    /// Its bytes go straight into the `Vec`'s fresh memory (advised onto
    /// huge pages), on several threads: no zero fill first, and the page
    /// faults taken in parallel.
    pub fn download_vec<T: Element>(&self, buf: &WgpuBuffer<T>) -> Result<Vec<T>> {
        self.download_prefix(buf, buf.len)
    }

    /// The first `n` elements of `buf` in a new `Vec`, as [`WgpuBackend::download_vec`].
    pub(crate) fn download_prefix<T: Element>(
        &self,
        buf: &WgpuBuffer<T>,
        n: usize,
    ) -> Result<Vec<T>> {
        if n > buf.len {
            return Err(Error::dim(
                "n",
                format!("{n} elements but the device buffer holds {}", buf.len),
            ));
        }
        let mut v = trident_core::mem::fresh_vec::<T>(n, || format!("host copy of {n} elements"))?;
        let spans = [(0u64, n * std::mem::size_of::<T>())];
        // SAFETY: one span of all `n` elements; `v` is empty with room for them.
        unsafe { self.download_spans_new(buf, &spans, &mut v, n, "download")? };
        Ok(v)
    }

    /// Fills the spare capacity of the empty `out` with the `spans` of `buf`
    /// (see [`WgpuBackend::stage_down`]) and sets its length to `len`.
    ///
    /// # Safety
    /// The spans must add up to exactly `len` elements of `T`, and `out`
    /// must be empty with room for `len`.
    unsafe fn download_spans_new<T: Element>(
        &self,
        buf: &WgpuBuffer<T>,
        spans: &[(u64, usize)],
        out: &mut Vec<T>,
        len: usize,
        what: &str,
    ) -> Result<()> {
        let bytes = len * std::mem::size_of::<T>();
        // SAFETY: the spare capacity is at least `len` elements (the
        // caller's contract), viewed as uninitialised bytes.
        let dst: &mut [std::mem::MaybeUninit<u8>] =
            unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast(), bytes) };
        let job = crate::staging::Down {
            src: buf.raw(),
            spans: spans.to_vec(),
            dst,
        };
        self.stage_down(vec![job], what)?;
        // SAFETY: `stage_down` wrote all `bytes` (it fails otherwise), and
        // any bit pattern is a valid `T` (`Pod`).
        unsafe { out.set_len(len) };
        Ok(())
    }
}

/// The first `len` elements of `v`'s spare capacity as bytes, for a
/// download to write (`v` must have room for them).
pub(crate) fn spare_bytes<T: Element>(
    v: &mut Vec<T>,
    len: usize,
) -> &mut [std::mem::MaybeUninit<u8>] {
    let spare = &mut v.spare_capacity_mut()[..len];
    let bytes = std::mem::size_of_val(spare);
    // SAFETY: the same memory, as bytes (alignment 1); uninitialised bytes
    // stay `MaybeUninit`.
    unsafe { std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast(), bytes) }
}

/// Uploads of this many bytes and more go through the staging buffers;
/// smaller ones through `write_buffer`, which needs no submission of its own.
const STAGED_MIN: usize = 1 << 18;
/// Bytes converted per step of [`WgpuBackend::upload_filled`] (a small
/// host buffer that stays in cache, then one copy into the mapped memory).
const BLOCK_BYTES: usize = 1 << 14;

impl DeviceMemory for WgpuBackend {
    type Buffer<T: Element> = WgpuBuffer<T>;

    fn upload<T: Element>(&self, host: &[T]) -> Result<WgpuBuffer<T>> {
        self.scoped("upload", || self.upload_named(host, "upload"))
    }

    fn alloc_zeroed<T: Element>(&self, len: usize) -> Result<WgpuBuffer<T>> {
        self.scoped("alloc_zeroed", || self.alloc(len, "alloc_zeroed"))
    }

    fn download<T: Element>(&self, buf: &WgpuBuffer<T>, host: &mut [T]) -> Result<()> {
        if host.len() != buf.len {
            return Err(Error::dim(
                "host",
                format!(
                    "length {} but the device buffer holds {}",
                    host.len(),
                    buf.len
                ),
            ));
        }
        self.scoped("download", || self.download_into(buf, host))
    }

    fn buffer_len<T: Element>(&self, buf: &WgpuBuffer<T>) -> usize {
        buf.len
    }

    fn synchronize(&self) -> Result<()> {
        self.ctx.wait("synchronize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A released buffer is reused by the next `alloc_uninit` of its size
    /// class, not while a view of it lives, and the pool never holds more
    /// than its bound.
    #[test]
    fn pool_reuses_and_stays_bounded() {
        let Ok(be) = WgpuBackend::new() else {
            println!("SKIPPED: no wgpu adapter");
            return;
        };
        be.set_buffer_pool_limit(0);
        be.set_buffer_pool_limit(1 << 20);
        assert_eq!(be.buffer_pool_bytes(), 0);
        let a = be.alloc_uninit::<u32>(10_000, "a").unwrap();
        let first = a.raw().clone();
        let view = a.cast_ref::<f32>().unwrap();
        drop(a);
        assert_eq!(be.buffer_pool_bytes(), 0, "a live view keeps the buffer");
        drop(view);
        let size = first.size();
        assert!((40_000..=45_000).contains(&size), "{size}");
        assert_eq!(be.buffer_pool_bytes(), size);
        // A slightly smaller request of the same class gets the same buffer.
        let b = be.alloc_uninit::<u32>(9_500, "b").unwrap();
        assert!(*b.raw() == first, "the pooled buffer was not reused");
        assert_eq!(be.buffer_pool_bytes(), 0);
        // It works as a buffer of its own length.
        let host: Vec<u32> = (0..9_500).collect();
        be.upload_into(&host, &b).unwrap();
        assert_eq!(be.download_vec(&b).unwrap(), host);
        drop(b);
        // Bound: 40 buffers of 100 KB released, at most 1 MiB kept.
        let many: Vec<_> = (0..40)
            .map(|_| be.alloc_uninit::<u8>(100_000, "m").unwrap())
            .collect();
        drop(many);
        let kept = be.buffer_pool_bytes();
        assert!((900_000..=1 << 20).contains(&kept), "{kept}");
        // A full pool makes room for the newest buffer (the oldest go), so
        // it follows the sizes in use: 100 KB buffers fill it, then a 600 KB
        // one released is kept and served again.
        let big = be.alloc_uninit::<u8>(600_000, "big").unwrap();
        let big_raw = big.raw().clone();
        drop(big);
        let kept = be.buffer_pool_bytes();
        assert!((600_000..=1 << 20).contains(&kept), "{kept}");
        let again = be.alloc_uninit::<u8>(600_000, "big again").unwrap();
        assert!(*again.raw() == big_raw, "the newest buffer was not kept");
        drop(again);
        // A buffer larger than the bound is not kept and evicts nothing.
        let before = be.buffer_pool_bytes();
        drop(be.alloc_uninit::<u8>(2 << 20, "huge").unwrap());
        assert_eq!(be.buffer_pool_bytes(), before);
        // Lowering the bound releases the excess; zero turns pooling off.
        be.set_buffer_pool_limit(300_000);
        assert!(be.buffer_pool_bytes() <= 300_000);
        be.set_buffer_pool_limit(0);
        assert_eq!(be.buffer_pool_bytes(), 0);
        drop(be.alloc::<u32>(10, "z").unwrap());
        assert_eq!(be.buffer_pool_bytes(), 0);
    }
}
