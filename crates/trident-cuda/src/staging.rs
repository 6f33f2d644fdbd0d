//! Host <-> device copies through a bounded pool of page-locked staging
//! buffers, reused across calls.
//!
//! Why: a copy from pageable memory makes the driver stage it through its own
//! small pinned buffers one piece at a time, and a download into a fresh `Vec`
//! page-faults on every 4 KiB page inside the copy. Measured on the H100
//! machine that made host-to-host SpGEMM slower than the CPU. Here
//! a large copy is split into pieces of at most `CHUNK` bytes and shared among a few
//! worker threads; each worker owns two pinned buffers and alternates them, so
//! its `memcpy` into (or out of) one buffer overlaps the DMA of the other, and
//! the page faults of a fresh output are taken by several threads at once.
//! The buffers of one call (the six arrays of SpGEMM's A and B, the three of
//! C) go as one list of pieces to one set of workers: copied one buffer at a
//! time, each paid its own thread start, ramp-up and drain, and host-to-host
//! poisson2d SpGEMM took 39-41 ms instead of 26-29 on the H100 machine.
//! All DMAs go to the backend's one stream, so they stay ordered after the
//! kernels queued before them.
//!
//! The pool itself (`Pool`) knows nothing of CUDA: it takes its buffers from
//! a `HostAlloc`, so its reuse, bound and release are tested here with a
//! fake allocator.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex};

use cudarc::driver::{CudaContext, CudaEvent, CudaStream, PinnedHostSlice};
use trident_core::{Error, Result};

use crate::error::driver_error;

/// Bytes per staging buffer and per DMA: large enough that the per-copy
/// overhead (a few microseconds) is lost in the transfer, small enough that
/// the first chunks reach the device while later ones are being copied.
pub(crate) const CHUNK: usize = 4 << 20;
/// Copies smaller than this go through the driver's own pageable path: at
/// that size the copy is dominated by latency, not bandwidth.
pub(crate) const STAGED_MIN: usize = 1 << 20;
/// Most worker threads one copy uses (each holds two buffers), and the
/// default: on the H100 machine's 16 cores, 16 workers against 8 took a
/// staged download into a resident buffer from 30.3 to 40.7 GB/s and
/// host-to-host poisson2d SpGEMM from 51.3 to 37.8 ms.
const MAX_WORKERS: usize = 16;
/// Buffers the pool may hold: every worker of one copy at once (32 x 4 MiB
/// of page-locked memory at most).
pub const POOL_BUFFERS: usize = 2 * MAX_WORKERS;

/// Worker threads per copy (never more than the cores):
/// `TRIDENT_STAGING_WORKERS` (1 to 16) if set, else 16. Copies into fresh
/// host memory are bound by page faults, which more threads take in
/// parallel. Read once per process.
fn max_workers() -> usize {
    static W: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *W.get_or_init(|| {
        std::env::var("TRIDENT_STAGING_WORKERS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map_or(MAX_WORKERS, |w| w.clamp(1, MAX_WORKERS))
    })
}

/// Where a [`Pool`] gets its buffers: page-locked memory on the GPU
/// machine, plain vectors in tests.
pub(crate) trait HostAlloc: Send + Sync {
    /// One buffer.
    type Buf: Send;
    /// A new buffer of `bytes` bytes.
    fn alloc(&self, bytes: usize) -> Result<Self::Buf>;
}

/// What a pool holds now (for tests and reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers that exist (idle or lent out).
    pub live: usize,
    /// Buffers waiting in the pool.
    pub idle: usize,
    /// Allocations made since the pool was created.
    pub allocations: usize,
}

struct State<B> {
    idle: Vec<B>,
    live: usize,
    allocations: usize,
}

/// A bounded pool of equal-sized host buffers: at most `max` exist at once;
/// a returned buffer is reused by the next taker; [`Pool::release_idle`]
/// frees those not lent out.
pub(crate) struct Pool<A: HostAlloc> {
    alloc: A,
    bytes: usize,
    max: usize,
    state: Mutex<State<A::Buf>>,
    returned: Condvar,
}

/// Buffers lent by a [`Pool`]; they go back to it when this is dropped.
pub(crate) struct Lease<'a, A: HostAlloc> {
    pool: &'a Pool<A>,
    bufs: Vec<A::Buf>,
}

impl<A: HostAlloc> Deref for Lease<'_, A> {
    type Target = [A::Buf];
    fn deref(&self) -> &[A::Buf] {
        &self.bufs
    }
}

impl<A: HostAlloc> DerefMut for Lease<'_, A> {
    fn deref_mut(&mut self) -> &mut [A::Buf] {
        &mut self.bufs
    }
}

impl<A: HostAlloc> Drop for Lease<'_, A> {
    fn drop(&mut self) {
        // The pool's state stays consistent under a panic of another taker
        // (every update is one statement), so a poisoned lock is still used.
        let mut s = self
            .pool
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        s.idle.append(&mut self.bufs);
        drop(s);
        self.pool.returned.notify_all();
    }
}

fn poisoned() -> Error {
    Error::Backend("staging pool lock poisoned by a panic".into())
}

impl<A: HostAlloc> Pool<A> {
    /// A pool of buffers of `bytes` bytes, at most `max` of them.
    pub(crate) fn new(alloc: A, bytes: usize, max: usize) -> Self {
        Self {
            alloc,
            bytes,
            max: max.max(1),
            state: Mutex::new(State {
                idle: Vec::new(),
                live: 0,
                allocations: 0,
            }),
            returned: Condvar::new(),
        }
    }

    /// `n` buffers at once (`n` is clipped to the bound), reusing idle ones
    /// first and allocating only what is missing. Waits while other callers
    /// hold too many: all `n` are taken together, so two callers can never
    /// each hold part of what the other waits for.
    pub(crate) fn take(&self, n: usize) -> Result<Lease<'_, A>> {
        let n = n.clamp(1, self.max);
        let mut s = self.state.lock().map_err(|_| poisoned())?;
        while s.idle.len() + (self.max - s.live) < n {
            s = self.returned.wait(s).map_err(|_| poisoned())?;
        }
        self.take_locked(s, n)
    }

    /// [`Pool::take`] without waiting: `None` when the bound leaves too few
    /// (tests check the bound with it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn try_take(&self, n: usize) -> Result<Option<Lease<'_, A>>> {
        let n = n.clamp(1, self.max);
        let s = self.state.lock().map_err(|_| poisoned())?;
        if s.idle.len() + (self.max - s.live) < n {
            return Ok(None);
        }
        self.take_locked(s, n).map(Some)
    }

    fn take_locked(
        &self,
        mut s: std::sync::MutexGuard<'_, State<A::Buf>>,
        n: usize,
    ) -> Result<Lease<'_, A>> {
        let reuse = n.min(s.idle.len());
        let at = s.idle.len() - reuse;
        let mut bufs: Vec<A::Buf> = s.idle.split_off(at);
        let missing = n - reuse;
        s.live += missing;
        s.allocations += missing;
        drop(s);
        // Allocate outside the lock (pinning memory takes milliseconds).
        let mut lease = Lease {
            pool: self,
            bufs: Vec::new(),
        };
        for i in 0..missing {
            match self.alloc.alloc(self.bytes) {
                Ok(b) => bufs.push(b),
                Err(e) => {
                    // Give back what this call reserved but did not get.
                    if let Ok(mut s) = self.state.lock() {
                        s.live -= missing - i;
                    }
                    lease.bufs = bufs;
                    return Err(e);
                }
            }
        }
        lease.bufs = bufs;
        Ok(lease)
    }

    /// Frees every idle buffer; returns how many.
    pub(crate) fn release_idle(&self) -> Result<usize> {
        let idle = {
            let mut s = self.state.lock().map_err(|_| poisoned())?;
            let idle = std::mem::take(&mut s.idle);
            s.live -= idle.len();
            idle
        };
        let n = idle.len();
        drop(idle);
        self.returned.notify_all();
        Ok(n)
    }

    /// What the pool holds now.
    pub(crate) fn stats(&self) -> Result<PoolStats> {
        let s = self.state.lock().map_err(|_| poisoned())?;
        Ok(PoolStats {
            live: s.live,
            idle: s.idle.len(),
            allocations: s.allocations,
        })
    }
}

/// Page-locked host memory of one context, with the event that marks the
/// last DMA queued on it.
pub(crate) struct PinnedBuf {
    mem: PinnedHostSlice<u8>,
    ptr: *mut u8,
    event: CudaEvent,
}

// SAFETY: `ptr` points into `mem`, which is `Send`; a buffer is used by one
// thread at a time (it is moved, never shared).
unsafe impl Send for PinnedBuf {}

impl PinnedBuf {
    fn bytes(&mut self, n: usize) -> &mut [u8] {
        let n = n.min(self.mem.len());
        // SAFETY: `ptr` is the start of `mem` (len bytes), exclusively ours
        // through `&mut self`; the caller has waited for `event`, so no DMA
        // touches it now.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, n) }
    }
}

/// [`HostAlloc`] of page-locked memory (`cuMemHostAlloc`, without the
/// write-combined flag: downloads are read back by the CPU), with the
/// backend's staging workers.
pub(crate) struct PinnedAlloc {
    pub(crate) ctx: Arc<CudaContext>,
    /// Worker threads bound to `ctx`, made at the first staged copy and kept:
    /// spawning 16 threads per copy cost about a millisecond, most of an 8 MB
    /// copy, which the pipelined host calls make two of per chunk.
    crew: std::sync::OnceLock<std::result::Result<rayon::ThreadPool, String>>,
}

impl PinnedAlloc {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> Self {
        Self {
            ctx,
            crew: std::sync::OnceLock::new(),
        }
    }

    fn crew(&self) -> Result<&rayon::ThreadPool> {
        let ctx = Arc::clone(&self.ctx);
        self.crew
            .get_or_init(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(max_workers().min(cores()))
                    .thread_name(|i| format!("trident-staging-{i}"))
                    .start_handler(move |_| {
                        // A thread that cannot bind fails its copies below
                        // (each job binds again, which is then a no-op).
                        let _ = ctx.bind_to_thread();
                    })
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| Error::Backend(format!("starting the staging workers: {e}").into()))
    }
}

impl HostAlloc for PinnedAlloc {
    type Buf = PinnedBuf;
    fn alloc(&self, bytes: usize) -> Result<PinnedBuf> {
        // SAFETY: the memory is uninitialised; it is only ever written (by a
        // memcpy or a DMA) before being read.
        let mut mem = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }.map_err(|e| {
            if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
                Error::OutOfMemory {
                    bytes: bytes as u64,
                    detail: "page-locked staging buffer".into(),
                }
            } else {
                driver_error("allocating a page-locked staging buffer")(e)
            }
        })?;
        let ptr = mem
            .as_mut_ptr()
            .map_err(driver_error("page-locked staging buffer"))?;
        let event = self
            .ctx
            .new_event(None)
            .map_err(driver_error("creating a staging event"))?;
        Ok(PinnedBuf { mem, ptr, event })
    }
}

/// The staging pool of a backend.
pub(crate) type Staging = Pool<PinnedAlloc>;

/// A host range workers write into (each its own part).
#[derive(Clone, Copy)]
struct RawOut(*mut u8);
// SAFETY: the workers write disjoint ranges of memory the caller holds
// exclusively for the duration of the copy.
unsafe impl Send for RawOut {}
unsafe impl Sync for RawOut {}

impl RawOut {
    /// The address (a method, so closures capture the whole `Sync` wrapper
    /// rather than its raw-pointer field).
    fn at(self, offset: usize) -> *mut u8 {
        self.0.wrapping_add(offset)
    }
}

/// The pieces of a list of copies of `lens` bytes, in order: (copy, byte
/// offset in it, bytes). Several buffers copied at once share one set of
/// workers (one ramp-up and drain, not one per buffer). Pieces are
/// [`piece_bytes`] long, at offsets that are multiples of it.
fn pieces(lens: &[usize]) -> Vec<(usize, usize, usize)> {
    let piece = piece_bytes(lens.iter().sum());
    let mut v = Vec::new();
    for (s, &len) in lens.iter().enumerate() {
        let mut o = 0;
        while o < len {
            let n = piece.min(len - o);
            v.push((s, o, n));
            o += n;
        }
    }
    v
}

/// Fewest bytes per piece: below it a DMA's fixed cost (a few
/// microseconds) is no longer lost in its transfer.
const PIECE_MIN: usize = 256 << 10;

/// Bytes per piece of a copy of `total` bytes: about four pieces per
/// worker, so that every worker has work and the last DMAs are short,
/// between [`PIECE_MIN`] and [`CHUNK`], a multiple of 64 KiB. With whole
/// 4 MiB pieces a 100 MB upload was 25 pieces over 13 workers, two each,
/// and a fill that converts as it copies ran at 16 GB/s on the H200 machine.
fn piece_bytes(total: usize) -> usize {
    (total / (4 * max_workers()))
        .clamp(PIECE_MIN, CHUNK)
        .next_multiple_of(64 << 10)
        .min(CHUNK)
}

/// The range `[lo, hi)` of `pieces` that worker `w` of `workers` takes.
fn plan(pieces: usize, workers: usize, w: usize) -> (usize, usize) {
    let per = pieces.div_ceil(workers);
    ((w * per).min(pieces), ((w + 1) * per).min(pieces))
}

fn cores() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn workers_for(pieces: usize) -> usize {
    pieces.min(cores()).clamp(1, max_workers())
}

/// Runs `f(worker, its two buffers)` for each pair of leased buffers, on
/// the pool's workers; returns the first error.
fn on_workers(
    pool: &Staging,
    bufs: &mut [PinnedBuf],
    f: impl Fn(usize, &mut [PinnedBuf]) -> Result<()> + Sync,
) -> Result<()> {
    let ctx = &pool.alloc.ctx;
    let results: Vec<Mutex<Result<()>>> = (0..bufs.len().div_ceil(2))
        .map(|_| Mutex::new(Ok(())))
        .collect();
    let job = |w: usize, pair: &mut [PinnedBuf]| -> Result<()> {
        ctx.bind_to_thread()
            .map_err(driver_error("binding the context"))?;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(w, pair)))
            .unwrap_or_else(|_| Err(Error::Backend("a staging worker panicked".into())));
        // Whatever happened, no DMA may still use a buffer that goes back
        // to the pool.
        for b in pair.iter() {
            b.event
                .synchronize()
                .map_err(driver_error("waiting for a staged copy"))?;
        }
        r
    };
    pool.alloc.crew()?.scope(|s| {
        for (w, pair) in bufs.chunks_mut(2).enumerate() {
            let (job, slot) = (&job, &results[w]);
            s.spawn(move |_| {
                let r = job(w, pair);
                *slot.lock().unwrap_or_else(|p| p.into_inner()) = r;
            });
        }
    });
    results
        .into_iter()
        .try_for_each(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// Copies each host range of `parts` to its device address through the
/// pool, on `stream`, all with one set of workers. Returns once every DMA
/// has completed (each worker waits for its buffers' events before they go
/// back to the pool), so the sources may be reused at once.
pub(crate) fn htod_many(
    pool: &Staging,
    stream: &Arc<CudaStream>,
    parts: &[(&[u8], u64)],
) -> Result<()> {
    let dst: Vec<(usize, u64)> = parts.iter().map(|p| (p.0.len(), p.1)).collect();
    htod_fill(pool, stream, &dst, |p, off, stage| {
        stage.copy_from_slice(&parts[p].0[off..off + stage.len()]);
    })
}

/// Fills device ranges `(bytes, dst)` through the pool, on `stream`: the
/// workers call `fill(part, byte offset, staging bytes)` to write each piece
/// (a conversion or a computed array goes up without a host copy of its
/// own), then queue its DMA. Pieces are multiples of 64 KiB at offsets that
/// are multiples of their size (the last of a part may be shorter), so a
/// fill may view them as any `Pod` type of size 16 or less. Returns once
/// every DMA has completed.
pub(crate) fn htod_fill(
    pool: &Staging,
    stream: &Arc<CudaStream>,
    parts: &[(usize, u64)],
    fill: impl Fn(usize, usize, &mut [u8]) + Sync,
) -> Result<()> {
    let pieces = pieces(&parts.iter().map(|p| p.0).collect::<Vec<_>>());
    if pieces.is_empty() {
        return Ok(());
    }
    let mut lease = pool.take(2 * workers_for(pieces.len()))?;
    let workers = lease.len() / 2;
    on_workers(pool, &mut lease[..2 * workers], |w, pair| {
        let (lo, hi) = plan(pieces.len(), workers, w);
        for (k, &(p, off, n)) in pieces[lo..hi].iter().enumerate() {
            let buf = &mut pair[k % 2];
            if k >= 2 {
                buf.event
                    .synchronize()
                    .map_err(driver_error("waiting for a staged upload"))?;
            }
            let dst = parts[p].1;
            let stage = buf.bytes(n);
            fill(p, off, stage);
            // SAFETY: `dst + off .. dst + off + n` lies inside the caller's
            // device buffer; the staging bytes stay untouched until `event`
            // (recorded right after) completes.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    dst + off as u64,
                    stage,
                    stream.cu_stream(),
                )
            }
            .map_err(driver_error("staged upload (host -> device copy)"))?;
            buf.event
                .record(stream)
                .map_err(driver_error("recording a staging event"))?;
        }
        Ok(())
    })
}

/// Copies each device range `(src, len)` of `parts` to its host address
/// through the pool, all with one set of workers, and waits for them.
/// Errors of kernels queued before surface here.
///
/// # Safety
/// Each `(src, dst, len)`: `src` holds `len` bytes; `dst` is valid for
/// writes of `len` bytes (it may be uninitialised memory), exclusively the
/// caller's during the call, and no two destinations overlap.
pub(crate) unsafe fn dtoh_many(
    pool: &Staging,
    stream: &Arc<CudaStream>,
    parts: &[(u64, *mut u8, usize)],
) -> Result<()> {
    let outs: Vec<(u64, RawOut)> = parts.iter().map(|&(s, d, _)| (s, RawOut(d))).collect();
    let pieces = pieces(&parts.iter().map(|p| p.2).collect::<Vec<_>>());
    if pieces.is_empty() {
        return Ok(());
    }
    let mut lease = pool.take(2 * workers_for(pieces.len()))?;
    let workers = lease.len() / 2;
    let queue = |buf: &mut PinnedBuf, (p, off, n): (usize, usize, usize)| -> Result<()> {
        let stage = buf.bytes(n);
        // SAFETY: `src + off .. src + off + n` lies inside the caller's device
        // range; the staging bytes are read only after `event` completes.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                stage,
                outs[p].0 + off as u64,
                stream.cu_stream(),
            )
        }
        .map_err(driver_error("staged download (device -> host copy)"))?;
        buf.event
            .record(stream)
            .map_err(driver_error("recording a staging event"))
    };
    on_workers(pool, &mut lease[..2 * workers], |w, pair| {
        let (lo, hi) = plan(pieces.len(), workers, w);
        if lo < hi {
            queue(&mut pair[0], pieces[lo])?;
        }
        for (k, c) in (lo..hi).enumerate() {
            if c + 1 < hi {
                queue(&mut pair[(k + 1) % 2], pieces[c + 1])?;
            }
            let buf = &mut pair[k % 2];
            buf.event
                .synchronize()
                .map_err(driver_error("staged download (device -> host copy)"))?;
            let (p, off, n) = pieces[c];
            let stage = buf.bytes(n);
            // SAFETY: `off..off + n` is this worker's own part of destination
            // `p` (see the function's contract).
            unsafe { std::ptr::copy_nonoverlapping(stage.as_ptr(), outs[p].1.at(off), n) };
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts live buffers; each buffer remembers its serial number.
    #[derive(Default)]
    struct Fake {
        made: AtomicUsize,
        dropped: Arc<AtomicUsize>,
        fail_after: Option<usize>,
    }

    struct FakeBuf {
        id: usize,
        dropped: Arc<AtomicUsize>,
    }

    impl Drop for FakeBuf {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl HostAlloc for Fake {
        type Buf = FakeBuf;
        fn alloc(&self, _bytes: usize) -> Result<FakeBuf> {
            let id = self.made.fetch_add(1, Ordering::SeqCst);
            if self.fail_after.is_some_and(|n| id >= n) {
                return Err(Error::OutOfMemory {
                    bytes: 0,
                    detail: "fake".into(),
                });
            }
            Ok(FakeBuf {
                id,
                dropped: Arc::clone(&self.dropped),
            })
        }
    }

    #[test]
    fn returned_buffers_are_reused() {
        let pool = Pool::new(Fake::default(), 64, 4);
        let ids: Vec<usize> = pool.take(2).unwrap().iter().map(|b| b.id).collect();
        let again: Vec<usize> = pool.take(2).unwrap().iter().map(|b| b.id).collect();
        assert_eq!(ids.len(), 2);
        let (mut x, mut y) = (ids.clone(), again);
        x.sort();
        y.sort();
        assert_eq!(x, y, "the second take reuses the first's buffers");
        let s = pool.stats().unwrap();
        assert_eq!((s.live, s.idle, s.allocations), (2, 2, 2));
        // A larger take reuses both and allocates only the difference.
        assert_eq!(pool.take(3).unwrap().len(), 3);
        assert_eq!(pool.stats().unwrap().allocations, 3);
    }

    #[test]
    fn the_bound_holds_and_waiters_resume_on_return() {
        let pool = Arc::new(Pool::new(Fake::default(), 64, 3));
        let held = pool.take(2).unwrap();
        assert!(pool.try_take(2).unwrap().is_none(), "2 + 2 exceeds 3");
        assert_eq!(pool.try_take(1).unwrap().map(|l| l.len()), Some(1));
        // Asking beyond the bound is clipped to it, never an endless wait.
        drop(held);
        assert_eq!(pool.take(10).unwrap().len(), 3);
        let held = pool.take(3).unwrap();
        let p = Arc::clone(&pool);
        let waiter = std::thread::spawn(move || p.take(2).map(|l| l.len()).unwrap());
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(held);
        assert_eq!(waiter.join().unwrap(), 2);
        assert!(pool.stats().unwrap().live <= 3);
        assert_eq!(pool.stats().unwrap().allocations, 3);
    }

    #[test]
    fn release_frees_idle_buffers_only() {
        let fake = Fake::default();
        let dropped = Arc::clone(&fake.dropped);
        let pool = Pool::new(fake, 64, 4);
        drop(pool.take(3).unwrap());
        let held = pool.take(1).unwrap();
        assert_eq!(pool.release_idle().unwrap(), 2);
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
        let s = pool.stats().unwrap();
        assert_eq!((s.live, s.idle), (1, 0));
        drop(held);
        assert_eq!(pool.stats().unwrap().idle, 1);
        // After a release the pool allocates again as needed.
        assert_eq!(pool.take(4).unwrap().len(), 4);
        assert_eq!(pool.stats().unwrap().allocations, 6);
    }

    #[test]
    fn a_failed_allocation_gives_its_reservation_back() {
        let fake = Fake {
            fail_after: Some(2),
            ..Default::default()
        };
        let pool = Pool::new(fake, 64, 4);
        assert!(matches!(pool.take(3), Err(Error::OutOfMemory { .. })));
        // The two buffers that were made went back to the pool.
        let s = pool.stats().unwrap();
        assert_eq!((s.live, s.idle), (2, 2));
        assert_eq!(pool.take(2).unwrap().len(), 2);
    }

    #[test]
    fn pieces_tile_every_copy_and_workers_take_them_all() {
        for lens in [
            vec![0, 1, CHUNK, CHUNK + 1, 7 * CHUNK + 5, 0, 3],
            vec![1000, PIECE_MIN + 3],
            vec![100 << 20, 4 << 20, 12],
            vec![1 << 30],
        ] {
            let ps = pieces(&lens);
            let piece = piece_bytes(lens.iter().sum());
            assert!((PIECE_MIN..=CHUNK).contains(&piece) && piece.is_multiple_of(64 << 10));
            // Each copy is covered in order, without gaps, by pieces at
            // offsets that are multiples of the piece size.
            for (c, &len) in lens.iter().enumerate() {
                let mut next = 0;
                for &(_, off, n) in ps.iter().filter(|p| p.0 == c) {
                    assert_eq!(off, next);
                    assert!(n > 0 && n <= piece && off.is_multiple_of(piece));
                    next = off + n;
                }
                assert_eq!(next, len);
            }
        }
        let ps = pieces(&[7 * CHUNK + 5]);
        for count in [1, 2, 15, 16, 17, ps.len(), 100] {
            let w = workers_for(count);
            let mut next = 0;
            for i in 0..w {
                let (lo, hi) = plan(count, w, i);
                assert_eq!(lo, next);
                assert!(lo <= hi);
                next = hi;
            }
            assert_eq!(next, count);
        }
    }
}
