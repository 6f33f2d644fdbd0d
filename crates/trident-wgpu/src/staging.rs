//! Host <-> device copies through staging buffers kept for reuse.
//!
//! wgpu moves host data only through mapped buffers. Making a new one for
//! every copy (what `create_buffer_init` and a fresh read-back buffer do)
//! pays the driver's allocation, wgpu's zero fill and a page fault per 4 KiB
//! each time: on the H200 through Vulkan a 256 MiB upload took 100 ms and a
//! download 120 ms that way, against 27 + 1.7 ms and 5.3 + 25 ms through
//! buffers mapped before (one thread copying). So each direction keeps a few
//! chunk-sized staging buffers, and a copy walks its bytes chunk by chunk:
//!
//! - **up**: the host bytes go into a mapped upload buffer on several
//!   threads, the buffer is unmapped and its copy to the destination
//!   submitted, and it is mapped again at once (wgpu maps it when that copy
//!   is done); the next chunk fills the next buffer meanwhile. The call
//!   returns with the copies queued: later work on the queue runs after them.
//! - **down**: the copies of two chunks into read-back buffers are in flight
//!   while the chunk before them is copied out on several threads, straight
//!   into the caller's memory (a fresh `Vec`'s spare capacity needs no zero
//!   fill first).
//!
//! Buffers in use by one call are its own; beyond the kept number a busy
//! backend (several threads) makes more, and drops them when they come back.

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use trident_core::Result;

use crate::WgpuBackend;
use crate::error::failure;

/// Map states of an upload buffer (set by wgpu's map callback).
pub(crate) const PENDING: u8 = 0;
pub(crate) const MAPPED: u8 = 1;
pub(crate) const FAILED: u8 = 2;

/// Copies of at least this many bytes are split over several threads.
const PAR_BYTES: usize = 1 << 20;
/// At most this many threads copy one chunk (memory bandwidth is shared).
const MAX_THREADS: usize = 8;
/// Bytes an upload's copy threads write at a time: 48 KiB, a multiple of
/// every element size the backend uploads (4, 8, 12, 16).
const BLOCK: usize = 3 << 14;

/// An upload buffer, mapped or on its way to being mapped again after the
/// copy out of it that `after` submitted.
struct UpSlot {
    buf: wgpu::Buffer,
    state: Arc<AtomicU8>,
    after: Option<wgpu::SubmissionIndex>,
}

/// Buffers of one direction kept between calls.
struct Side<S> {
    idle: VecDeque<S>,
    /// Buffers that exist now (idle or held by a call).
    live: usize,
}

impl<S> Default for Side<S> {
    fn default() -> Self {
        Self {
            idle: VecDeque::new(),
            live: 0,
        }
    }
}

/// The staging buffers of one device.
pub(crate) struct Staging {
    /// Bytes of each staging buffer.
    chunk: u64,
    /// Buffers kept per direction.
    keep: usize,
    up: Mutex<Side<UpSlot>>,
    down: Mutex<Side<wgpu::Buffer>>,
}

impl Staging {
    /// 32 MiB buffers, three each way, on a GPU (96 MiB of mapped memory per
    /// direction); 4 MiB, two each way, on a CPU adapter, whose copies are
    /// plain memory copies anyway.
    pub(crate) fn for_adapter(info: &wgpu::AdapterInfo) -> Self {
        let (chunk, keep) = if info.device_type == wgpu::DeviceType::Cpu {
            (4 << 20, 2)
        } else {
            (32 << 20, 3)
        };
        Self {
            chunk,
            keep,
            up: Mutex::default(),
            down: Mutex::default(),
        }
    }

    /// Drops the idle staging buffers; returns how many.
    pub(crate) fn release(&self) -> usize {
        let mut n = 0;
        if let Ok(mut s) = self.up.lock() {
            n += s.idle.len();
            s.live -= s.idle.len();
            s.idle.clear();
        }
        if let Ok(mut s) = self.down.lock() {
            n += s.idle.len();
            s.live -= s.idle.len();
            s.idle.clear();
        }
        n
    }
}

/// Threads for copying `bytes` at once.
fn threads_for(bytes: usize) -> usize {
    if bytes < PAR_BYTES {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .min(MAX_THREADS)
    }
}

/// Bytes of one part of `len` split into `parts`, a multiple of `unit`.
fn part_bytes(len: usize, parts: usize, unit: usize) -> usize {
    len.div_ceil(parts).next_multiple_of(unit).max(unit)
}

/// How an upload's bytes are produced: `fill(offset, dst)` writes the bytes
/// `offset .. offset + dst.len()` of the data; offsets and lengths are
/// multiples of the element size given with it.
pub(crate) type Fill<'f> = &'f (dyn Fn(usize, wgpu::WriteOnly<'_, [u8]>) -> Result<()> + Sync);

impl WgpuBackend {
    /// Writes `data` bytes, produced by `fill` in pieces of whole `elem`-byte
    /// elements, into `dst` from byte 0, then zeros up to `total` (a multiple
    /// of 4, at least `data`). The copies are queued, not waited for.
    pub(crate) fn stage_up(
        &self,
        dst: &wgpu::Buffer,
        data: usize,
        total: usize,
        elem: usize,
        what: &str,
        fill: Fill<'_>,
    ) -> Result<()> {
        let st = &self.ctx.staging;
        // Blocks of whole elements go to the copy threads (wgpu's write-only
        // view of a fixed-size array can cross threads, a slice view cannot);
        // elements that do not divide a block are copied on this thread, in
        // chunks of whole elements.
        let elem = elem.max(1);
        let blocks = BLOCK.is_multiple_of(elem);
        let unit = if blocks { BLOCK } else { elem * 64 };
        let chunk = (st.chunk as usize / unit * unit).max(unit);
        let mut at = 0;
        while at < total {
            let len = chunk.min(total - at);
            let mut slot = self.take_up(what)?;
            let filled = (|| -> Result<()> {
                let mut view = slot
                    .buf
                    .slice(..len as u64)
                    .get_mapped_range_mut()
                    .map_err(|e| failure(what, e))?;
                let out = view.slice(..);
                let real = data.saturating_sub(at).min(len);
                let (body, mut pad) = out.split_at(real);
                pad.fill(0);
                let parts = if blocks { threads_for(real) } else { 1 };
                if parts <= 1 {
                    return fill(at, body);
                }
                let (whole, tail) = body.into_chunks::<BLOCK>();
                let whole: Vec<_> = whole.into_iter().collect();
                let per = whole.len().div_ceil(parts).max(1);
                let tail_at = at + whole.len() * BLOCK;
                std::thread::scope(|s| {
                    let mut jobs = Vec::with_capacity(parts);
                    let mut it = whole.into_iter();
                    let mut off = at;
                    loop {
                        let group: Vec<_> = it.by_ref().take(per).collect();
                        if group.is_empty() {
                            break;
                        }
                        let start = off;
                        off += group.len() * BLOCK;
                        jobs.push(s.spawn(move || {
                            group
                                .into_iter()
                                .enumerate()
                                .try_for_each(|(i, b)| fill(start + i * BLOCK, b.into()))
                        }));
                    }
                    let last = if !tail.is_empty() {
                        fill(tail_at, tail)
                    } else {
                        Ok(())
                    };
                    jobs.into_iter().try_for_each(|j| {
                        j.join()
                            .map_err(|_| failure(what, "a staging copy thread panicked"))?
                    })?;
                    last
                })
            })();
            if let Err(e) = filled {
                // Still mapped and unused: it goes back as it is.
                self.give_up(slot);
                return Err(e);
            }
            slot.buf.unmap();
            let mut enc = self
                .ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
            enc.copy_buffer_to_buffer(&slot.buf, 0, dst, at as u64, len as u64);
            let idx = self.ctx.queue.submit([enc.finish()]);
            let state = Arc::new(AtomicU8::new(PENDING));
            let flag = Arc::clone(&state);
            slot.buf
                .slice(..)
                .map_async(wgpu::MapMode::Write, move |r| {
                    flag.store(if r.is_ok() { MAPPED } else { FAILED }, Ordering::Release);
                });
            slot.state = state;
            slot.after = Some(idx);
            self.give_up(slot);
            at += len;
        }
        Ok(())
    }

    /// A mapped upload buffer: an idle one that is mapped again, a new one
    /// while fewer than the kept number exist, else the oldest idle one once
    /// its copy is done (or a new one when other calls hold them all).
    fn take_up(&self, what: &str) -> Result<UpSlot> {
        let st = &self.ctx.staging;
        // Runs the map callbacks of copies that have finished.
        self.ctx
            .device
            .poll(wgpu::PollType::Poll)
            .map_err(|e| failure(what, e))?;
        let oldest = {
            let mut side = st.up.lock().map_err(|_| failure(what, "staging lock"))?;
            let before = side.idle.len();
            side.idle
                .retain(|s| s.state.load(Ordering::Acquire) != FAILED);
            side.live -= before - side.idle.len();
            if let Some(i) = side
                .idle
                .iter()
                .position(|s| s.state.load(Ordering::Acquire) == MAPPED)
            {
                return side
                    .idle
                    .remove(i)
                    .ok_or_else(|| failure(what, "staging slot vanished"));
            }
            if side.live < st.keep || side.idle.is_empty() {
                side.live += 1;
                None
            } else {
                side.idle.pop_front()
            }
        };
        match oldest {
            Some(slot) => {
                self.ctx.wait_flag(what, &slot.state, slot.after.as_ref())?;
                Ok(slot)
            }
            None => Ok(UpSlot {
                buf: self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("staging up"),
                    size: st.chunk,
                    usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: true,
                }),
                state: Arc::new(AtomicU8::new(MAPPED)),
                after: None,
            }),
        }
    }

    /// Returns an upload buffer to the idle list (or drops it when enough
    /// are kept).
    fn give_up(&self, slot: UpSlot) {
        let st = &self.ctx.staging;
        if let Ok(mut side) = st.up.lock() {
            if side.idle.len() < st.keep {
                side.idle.push_back(slot);
            } else {
                side.live -= 1;
            }
        }
    }

    /// A read-back buffer (unmapped, idle).
    fn take_down(&self, what: &str) -> Result<wgpu::Buffer> {
        let st = &self.ctx.staging;
        {
            let mut side = st.down.lock().map_err(|_| failure(what, "staging lock"))?;
            if let Some(b) = side.idle.pop_front() {
                return Ok(b);
            }
            side.live += 1;
        }
        Ok(self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("staging down"),
            size: st.chunk,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        }))
    }

    fn give_down(&self, buf: wgpu::Buffer) {
        let st = &self.ctx.staging;
        if let Ok(mut side) = st.down.lock() {
            if side.idle.len() < st.keep {
                side.idle.push_back(buf);
            } else {
                side.live -= 1;
            }
        }
    }

    /// Copies the byte ranges `spans` (`(offset, length)`) of `src`, one after
    /// another, into `dst` (as long as their sum) and waits for it. Offsets
    /// are multiples of 4, and so are the lengths of all spans but the last;
    /// `src` holds at least the last span's end rounded up to 4. Errors of
    /// earlier queued work surface here.
    pub(crate) fn stage_down(
        &self,
        src: &wgpu::Buffer,
        spans: &[(u64, usize)],
        dst: &mut [MaybeUninit<u8>],
        what: &str,
    ) -> Result<()> {
        let total: usize = spans.iter().map(|s| s.1).sum();
        let bad_span = spans.iter().enumerate().any(|(i, &(off, len))| {
            !off.is_multiple_of(4)
                || (i + 1 < spans.len() && !len.is_multiple_of(4))
                || off + len.next_multiple_of(4) as u64 > src.size()
        });
        if total != dst.len() || bad_span {
            return Err(failure(what, "read-back ranges do not match the buffer"));
        }
        let chunk = self.ctx.staging.chunk as usize;
        // Per chunk: its bytes, and its pieces as (offset in `src`, offset
        // in the chunk, length).
        type Piece = (u64, usize, usize);
        let mut plan: Vec<(usize, Vec<Piece>)> = Vec::new();
        let mut fill = chunk;
        for &(mut off, mut len) in spans {
            while len > 0 {
                if fill == chunk {
                    plan.push((0, Vec::new()));
                    fill = 0;
                }
                let take = len.min(chunk - fill);
                if let Some((n, pieces)) = plan.last_mut() {
                    pieces.push((off, fill, take));
                    *n += take;
                }
                fill += take;
                off += take as u64;
                len -= take;
            }
        }
        let mut flight: VecDeque<(wgpu::Buffer, Arc<AtomicU8>, wgpu::SubmissionIndex, usize)> =
            VecDeque::new();
        let mut rest = dst;
        let result = (|| -> Result<()> {
            for (bytes, pieces) in plan {
                let rb = self.take_down(what)?;
                let mut enc = self
                    .ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
                for &(off, at, len) in &pieces {
                    enc.copy_buffer_to_buffer(
                        src,
                        off,
                        &rb,
                        at as u64,
                        len.next_multiple_of(4) as u64,
                    );
                }
                let idx = self.ctx.queue.submit([enc.finish()]);
                let state = Arc::new(AtomicU8::new(PENDING));
                let flag = Arc::clone(&state);
                rb.slice(..bytes.next_multiple_of(4) as u64).map_async(
                    wgpu::MapMode::Read,
                    move |r| {
                        flag.store(if r.is_ok() { MAPPED } else { FAILED }, Ordering::Release);
                    },
                );
                flight.push_back((rb, state, idx, bytes));
                if flight.len() >= 2
                    && let Some(f) = flight.pop_front()
                {
                    let (head, tail) = std::mem::take(&mut rest).split_at_mut(f.3);
                    rest = tail;
                    self.drain(f, head, what)?;
                }
            }
            while let Some(f) = flight.pop_front() {
                let (head, tail) = std::mem::take(&mut rest).split_at_mut(f.3);
                rest = tail;
                self.drain(f, head, what)?;
            }
            Ok(())
        })();
        // On an error the buffers still in flight are dropped (wgpu frees
        // them once their copies are done).
        if result.is_err()
            && let Ok(mut side) = self.ctx.staging.down.lock()
        {
            side.live -= flight.len();
        }
        result
    }

    /// Waits for a read-back buffer's map and copies its first `dst.len()`
    /// bytes out on several threads; the buffer goes back to the idle list.
    fn drain(
        &self,
        (rb, state, idx, bytes): (wgpu::Buffer, Arc<AtomicU8>, wgpu::SubmissionIndex, usize),
        dst: &mut [MaybeUninit<u8>],
        what: &str,
    ) -> Result<()> {
        let copied = self.ctx.wait_flag(what, &state, Some(&idx)).and_then(|()| {
            let view = rb
                .slice(..bytes.next_multiple_of(4) as u64)
                .get_mapped_range()
                .map_err(|e| failure(what, e))?;
            copy_out(&view[..bytes], dst);
            Ok(())
        });
        match copied {
            Ok(()) => {
                rb.unmap();
                self.give_down(rb);
                Ok(())
            }
            Err(e) => {
                if let Ok(mut side) = self.ctx.staging.down.lock() {
                    side.live -= 1;
                }
                Err(e)
            }
        }
    }
}

/// `dst.copy_from(src)` on several threads for large copies.
fn copy_out(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    let parts = threads_for(src.len());
    let one = |s: &[u8], d: &mut [MaybeUninit<u8>]| {
        // SAFETY: `d` is exactly as long as `s` (split alike below), the two
        // do not overlap (one is mapped device memory, the other the
        // caller's), and any byte is a valid `MaybeUninit<u8>`.
        unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), d.as_mut_ptr().cast::<u8>(), s.len()) }
    };
    if parts <= 1 {
        one(src, dst);
        return;
    }
    let step = part_bytes(src.len(), parts, 4096);
    std::thread::scope(|sc| {
        for (s, d) in src.chunks(step).zip(dst.chunks_mut(step)) {
            sc.spawn(move || one(s, d));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use trident_core::{DeviceMemory, Error};

    #[test]
    fn parts_cover_and_align() {
        assert_eq!(part_bytes(10, 3, 4), 4);
        assert_eq!(part_bytes(0, 3, 64), 64);
        let p = part_bytes(32 << 20, 8, 4096);
        assert!(p.is_multiple_of(4096) && p * 8 >= 32 << 20);
    }

    /// Copies of several chunks, odd lengths and ranges that straddle chunk
    /// boundaries arrive intact, and the kept buffers stay bounded.
    #[test]
    fn staged_copies_round_trip() {
        let Ok(be) = WgpuBackend::new() else {
            println!("SKIPPED: no wgpu adapter");
            return;
        };
        let chunk = be.ctx.staging.chunk as usize;
        for n in [1usize, 3, 5, 1 << 18, chunk + 3, 2 * chunk + chunk / 3 + 1] {
            let host: Vec<u8> = (0..n).map(|i| (i * 31 + i / 7) as u8).collect();
            let buf = be.upload(&host).unwrap();
            let back = be.download_vec(&buf).unwrap();
            assert!(back == host, "n = {n}");
            let mut part = vec![0u8; n / 2];
            be.download_into(&buf, &mut part).unwrap();
            assert!(part[..] == host[..n / 2], "n = {n}");
        }
        // The padding after the data reads as zero, also in a pooled buffer
        // that held other bytes before.
        for n in [5usize, (1 << 18) + 1] {
            drop(be.upload(&vec![0xffu8; n + 3]).unwrap());
            let buf = be.upload(&vec![7u8; n]).unwrap();
            let mut raw = vec![MaybeUninit::new(1u8); n + 3];
            be.stage_down(buf.raw(), &[(0, n + 3)], &mut raw, "test")
                .unwrap();
            // SAFETY: initialised above and written by the download.
            let raw: Vec<u8> = raw.iter().map(|b| unsafe { b.assume_init() }).collect();
            assert_eq!(&raw[n..], &[0, 0, 0], "n = {n}");
        }
        // Ranges of u32 that cross chunk boundaries, in one download.
        let n = chunk / 4 * 3;
        let host: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        let buf = be.upload(&host).unwrap();
        let len = chunk / 4 / 3 + 5;
        let starts = [0, n - len, chunk / 4 - 7, 3, chunk / 2];
        let got = be.download_ranges(&buf, &starts, len).unwrap();
        let want: Vec<u32> = starts
            .iter()
            .flat_map(|&s| host[s..s + len].iter().copied())
            .collect();
        assert!(got == want);
        // Into an existing buffer, over several chunks.
        let more: Vec<u32> = (0..n as u32).rev().collect();
        be.upload_into(&more, &buf).unwrap();
        assert!(be.download_vec(&buf).unwrap() == more);
        let st = &be.ctx.staging;
        assert!(st.up.lock().unwrap().idle.len() <= st.keep);
        assert!(st.down.lock().unwrap().idle.len() <= st.keep);
        assert!(be.release_staging() > 0);
        assert_eq!(st.up.lock().unwrap().live + st.down.lock().unwrap().live, 0);
    }

    /// A fill that fails reports the first bad element of the whole upload,
    /// even when several chunks and threads run; values converted on the
    /// way arrive intact otherwise.
    #[test]
    fn filled_uploads_convert_and_report_the_first_error() {
        let Ok(be) = WgpuBackend::new() else {
            println!("SKIPPED: no wgpu adapter");
            return;
        };
        let n = be.ctx.staging.chunk as usize / 4 * 2 + 1001;
        let src: Vec<i64> = (0..n as i64).map(|i| i * 3 - 7).collect();
        let conv = |bad: Option<usize>| {
            let src = &src;
            move |first: usize, out: &mut [i32]| -> trident_core::Result<()> {
                for (k, o) in out.iter_mut().enumerate() {
                    let i = first + k;
                    if bad.is_some_and(|b| i >= b && i % 5 == b % 5) {
                        return Err(Error::dim("caps", format!("element {i}")));
                    }
                    *o = src[i] as i32;
                }
                Ok(())
            }
        };
        let buf = be.upload_filled(n, "caps", conv(None)).unwrap();
        let want: Vec<i32> = src.iter().map(|&v| v as i32).collect();
        assert!(be.download_vec(&buf).unwrap() == want);
        for bad in [0usize, 17, n / 2 + 3, n - 1] {
            let e = be.upload_filled(n, "caps", conv(Some(bad))).unwrap_err();
            assert!(
                e.to_string().contains(&format!("element {bad}")),
                "{bad}: {e}"
            );
        }
        // The backend still works after the failed uploads.
        assert!(be.download_vec(&be.upload(&want).unwrap()).unwrap() == want);
    }

    /// Threads that share one backend copy at once without mixing data.
    #[test]
    fn concurrent_copies_stay_apart() {
        let Ok(be) = WgpuBackend::new() else {
            println!("SKIPPED: no wgpu adapter");
            return;
        };
        let n = be.ctx.staging.chunk as usize / 4 + 77;
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let be = &be;
                s.spawn(move || {
                    for r in 0..3u32 {
                        let host: Vec<u32> =
                            (0..n as u32).map(|i| i ^ (t << 28) ^ (r << 24)).collect();
                        let buf = be.upload(&host).unwrap();
                        assert!(
                            be.download_vec(&buf).unwrap() == host,
                            "thread {t} round {r}"
                        );
                    }
                });
            }
        });
    }
}
