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
use std::sync::{Arc, Mutex, OnceLock};

use trident_core::Result;

use crate::WgpuBackend;
use crate::error::failure;

/// Map states of an upload buffer (set by wgpu's map callback).
pub(crate) const PENDING: u8 = 0;
pub(crate) const MAPPED: u8 = 1;
pub(crate) const FAILED: u8 = 2;

/// Copies of at least this many bytes are split over several threads.
const PAR_BYTES: usize = 1 << 20;
/// At most this many threads copy one chunk: into fresh memory (a new
/// `Vec` for a download) each thread also takes its page faults.
const MAX_THREADS: usize = 16;
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
    /// Copy threads, made at the first large copy and kept (spawning them
    /// per chunk cost a tenth of a chunk's copy).
    crew: OnceLock<std::result::Result<rayon::ThreadPool, String>>,
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
            crew: OnceLock::new(),
        }
    }

    fn crew(&self) -> Result<&rayon::ThreadPool> {
        self.crew
            .get_or_init(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads_for(usize::MAX))
                    .thread_name(|i| format!("trident-wgpu-copy-{i}"))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| failure("staging", format!("starting the copy threads: {e}")))
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
                let first_err: Mutex<Option<trident_core::Error>> = Mutex::new(None);
                let keep = |r: Result<()>| {
                    if let Err(e) = r
                        && let Ok(mut slot) = first_err.lock()
                    {
                        slot.get_or_insert(e);
                    }
                };
                st.crew()?.scope(|s| {
                    let mut it = whole.into_iter();
                    let mut off = at;
                    loop {
                        let group: Vec<_> = it.by_ref().take(per).collect();
                        if group.is_empty() {
                            break;
                        }
                        let start = off;
                        off += group.len() * BLOCK;
                        let keep = &keep;
                        s.spawn(move |_| {
                            keep(
                                group
                                    .into_iter()
                                    .enumerate()
                                    .try_for_each(|(i, b)| fill(start + i * BLOCK, b.into())),
                            )
                        });
                    }
                });
                if !tail.is_empty() {
                    keep(fill(tail_at, tail));
                }
                match first_err.into_inner() {
                    Ok(None) => Ok(()),
                    Ok(Some(e)) => Err(e),
                    Err(_) => Err(failure(what, "staging error lock")),
                }
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

    /// Copies each job's byte ranges of its source buffer, one after another,
    /// into the job's `dst` (as long as their sum), all jobs through one
    /// pipeline of read-back chunks, and waits for it. Offsets are multiples
    /// of 4, and so are the lengths of all spans but a job's last; the source
    /// holds at least the last span's end rounded up to 4. Errors of earlier
    /// queued work surface here.
    pub(crate) fn stage_down(&self, jobs: Vec<Down<'_>>, what: &str) -> Result<()> {
        let chunk = self.ctx.staging.chunk as usize;
        let mut plan: Vec<Chunk<'_>> = Vec::new();
        let mut fill = chunk;
        for job in jobs {
            let total: usize = job.spans.iter().map(|s| s.1).sum();
            let bad_span = job.spans.iter().enumerate().any(|(i, &(off, len))| {
                !off.is_multiple_of(4)
                    || (i + 1 < job.spans.len() && !len.is_multiple_of(4))
                    || off + len.next_multiple_of(4) as u64 > job.src.size()
            });
            if total != job.dst.len() || bad_span {
                return Err(failure(what, "read-back ranges do not match the buffer"));
            }
            let mut rest = job.dst;
            for &(mut off, mut len) in &job.spans {
                while len > 0 {
                    if fill == chunk {
                        plan.push(Chunk::default());
                        fill = 0;
                    }
                    let take = len.min(chunk - fill);
                    let (dst, tail) = std::mem::take(&mut rest).split_at_mut(take);
                    rest = tail;
                    if let Some(c) = plan.last_mut() {
                        c.pieces.push(Piece {
                            src: job.src,
                            off,
                            at: fill,
                            dst,
                        });
                        c.bytes = fill + take;
                    }
                    // A piece whose length is not a multiple of 4 (a job's
                    // end) is copied rounded up; the next one starts at a
                    // multiple of 4, as copies must.
                    fill = (fill + take).next_multiple_of(4);
                    off += take as u64;
                    len -= take;
                }
            }
        }
        self.run_down(plan, what)
    }

    /// The pipeline of [`WgpuBackend::stage_down`]: two chunks' copies in
    /// flight while the one before is copied out.
    fn run_down(&self, plan: Vec<Chunk<'_>>, what: &str) -> Result<()> {
        let mut flight: VecDeque<Flight<'_>> = VecDeque::new();
        let result = (|| -> Result<()> {
            for c in plan {
                let rb = self.take_down(what)?;
                let mut enc = self
                    .ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
                for p in &c.pieces {
                    let len = p.dst.len().next_multiple_of(4) as u64;
                    enc.copy_buffer_to_buffer(p.src, p.off, &rb, p.at as u64, len);
                }
                let idx = self.ctx.queue.submit([enc.finish()]);
                let state = Arc::new(AtomicU8::new(PENDING));
                let flag = Arc::clone(&state);
                rb.slice(..c.bytes.next_multiple_of(4) as u64).map_async(
                    wgpu::MapMode::Read,
                    move |r| {
                        flag.store(if r.is_ok() { MAPPED } else { FAILED }, Ordering::Release);
                    },
                );
                flight.push_back(Flight {
                    rb,
                    state,
                    idx,
                    chunk: c,
                });
                if flight.len() >= 2
                    && let Some(f) = flight.pop_front()
                {
                    self.drain(f, what)?;
                }
            }
            while let Some(f) = flight.pop_front() {
                self.drain(f, what)?;
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

    /// Waits for a read-back buffer's map and copies its pieces out on
    /// several threads; the buffer goes back to the idle list.
    fn drain(&self, f: Flight<'_>, what: &str) -> Result<()> {
        let Flight {
            rb,
            state,
            idx,
            chunk,
        } = f;
        let copied = self.ctx.wait_flag(what, &state, Some(&idx)).and_then(|()| {
            let view = rb
                .slice(..chunk.bytes.next_multiple_of(4) as u64)
                .get_mapped_range()
                .map_err(|e| failure(what, e))?;
            copy_out(self.ctx.staging.crew()?, &view, chunk.pieces);
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

/// One download of [`WgpuBackend::stage_down`]: byte ranges `(offset,
/// length)` of `src`, in order, into `dst`.
pub(crate) struct Down<'d> {
    pub(crate) src: &'d wgpu::Buffer,
    pub(crate) spans: Vec<(u64, usize)>,
    pub(crate) dst: &'d mut [MaybeUninit<u8>],
}

/// A range of a source buffer, placed at `at` in a read-back chunk, bound
/// for `dst`.
struct Piece<'d> {
    src: &'d wgpu::Buffer,
    off: u64,
    at: usize,
    dst: &'d mut [MaybeUninit<u8>],
}

/// The pieces that share one read-back buffer, and its bytes used.
#[derive(Default)]
struct Chunk<'d> {
    pieces: Vec<Piece<'d>>,
    bytes: usize,
}

/// A chunk whose copies were submitted, with its map state.
struct Flight<'d> {
    rb: wgpu::Buffer,
    state: Arc<AtomicU8>,
    idx: wgpu::SubmissionIndex,
    chunk: Chunk<'d>,
}

/// Copies each piece's bytes from the mapped chunk `view` into its
/// destination, on several threads for a large chunk (the pieces cut at
/// the threads' boundaries).
fn copy_out(crew: &rayon::ThreadPool, view: &[u8], pieces: Vec<Piece<'_>>) {
    let bytes: usize = pieces.iter().map(|p| p.dst.len()).sum();
    let parts = threads_for(bytes);
    let step = part_bytes(bytes, parts, 4096);
    // Per thread: (mapped source, destination) pairs of equal length.
    type Copies<'a> = Vec<(&'a [u8], &'a mut [MaybeUninit<u8>])>;
    let mut work: Vec<Copies<'_>> = (0..parts).map(|_| Vec::new()).collect();
    let mut done = 0;
    for p in pieces {
        let (mut at, mut dst) = (p.at, p.dst);
        while !dst.is_empty() {
            let part = (done / step).min(parts - 1);
            let room = if part == parts - 1 {
                dst.len()
            } else {
                (part + 1) * step - done
            };
            let cut = room.min(dst.len());
            let (head, tail) = std::mem::take(&mut dst).split_at_mut(cut);
            let n = head.len();
            work[part].push((&view[at..at + n], head));
            at += n;
            done += n;
            dst = tail;
        }
    }
    let one = |list: Copies<'_>| {
        for (s, d) in list {
            // SAFETY: `d` is exactly as long as `s` (cut alike above), the
            // two do not overlap (mapped memory and the caller's), and any
            // byte is a valid `MaybeUninit<u8>`.
            unsafe {
                std::ptr::copy_nonoverlapping(s.as_ptr(), d.as_mut_ptr().cast::<u8>(), s.len())
            }
        }
    };
    if parts <= 1 {
        work.into_iter().for_each(one);
        return;
    }
    crew.scope(|sc| {
        for list in work {
            sc.spawn(move |_| one(list));
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
            let job = Down {
                src: buf.raw(),
                spans: vec![(0, n + 3)],
                dst: &mut raw,
            };
            be.stage_down(vec![job], "test").unwrap();
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

    /// Several downloads in one pipeline: a byte buffer of odd length (its
    /// end copied rounded up, the next piece realigned) between word
    /// buffers, the whole longer than two chunks.
    #[test]
    fn jobs_share_one_pipeline() {
        let Ok(be) = WgpuBackend::new() else {
            println!("SKIPPED: no wgpu adapter");
            return;
        };
        let chunk = be.ctx.staging.chunk as usize;
        let w1: Vec<u32> = (0..(chunk / 4 + 9) as u32).collect();
        let bytes: Vec<u8> = (0..chunk / 2 + 3).map(|i| (i % 251) as u8).collect();
        let w2: Vec<u32> = (0..(chunk / 3) as u32).map(|i| !i).collect();
        let (d1, db, d2) = (
            be.upload(&w1).unwrap(),
            be.upload(&bytes).unwrap(),
            be.upload(&w2).unwrap(),
        );
        let mut o1: Vec<u32> = Vec::with_capacity(w1.len());
        let mut ob: Vec<u8> = Vec::with_capacity(bytes.len());
        let mut o2: Vec<u32> = Vec::with_capacity(w2.len());
        let jobs = vec![
            Down {
                src: d1.raw(),
                spans: vec![(0, 4 * w1.len())],
                dst: crate::buffer::spare_bytes(&mut o1, w1.len()),
            },
            Down {
                src: db.raw(),
                spans: vec![(0, bytes.len())],
                dst: crate::buffer::spare_bytes(&mut ob, bytes.len()),
            },
            Down {
                src: d2.raw(),
                spans: vec![(0, 4 * w2.len())],
                dst: crate::buffer::spare_bytes(&mut o2, w2.len()),
            },
        ];
        be.stage_down(jobs, "test").unwrap();
        // SAFETY: the download wrote every byte of the three.
        unsafe {
            o1.set_len(w1.len());
            ob.set_len(bytes.len());
            o2.set_len(w2.len());
        }
        assert!(o1 == w1 && ob == bytes && o2 == w2);
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
