//! Chunked host calls: a call on host arrays cut into chunks that upload,
//! compute and download at once, each on its own stream, in device buffers
//! sized to a memory budget.
//!
//! Why: a host call that uploads everything, computes, then downloads leaves
//! the GPU idle during both copies and the host idle during the kernels
//! (Batch-OMP's host call took 2.9x its device time on the H100 machine).
//! With two buffer sets the upload of chunk `i + 1` and the download and
//! unpacking of chunk `i - 1` run while chunk `i` computes, so the call costs
//! about its device time plus one chunk's copies. The same chunking bounds
//! the device memory a call takes, so a call larger than the device (or than
//! [`crate::Tuning::memory_budget`]) runs chunk by chunk instead of failing.
//!
//! Ordering, with the host between the streams: uploads go to [`Lanes::up`]
//! and downloads to [`Lanes::down`] through the staging pool, which returns
//! once its DMAs are done; kernels go to the backend's stream. Chunk `i + 1`
//! is uploaded and its kernels queued before chunk `i` is downloaded, so the
//! device always has a chunk queued while the host copies. A buffer set is
//! filled again only after the upload stream waited for the event recorded
//! after the kernels that last read it, and its outputs are overwritten only
//! after their download returned; downloads wait for the event of their
//! chunk's kernels.

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};
use std::sync::atomic::{AtomicUsize, Ordering};

use trident_core::{Error, MatRef, Result, Scalar};

use crate::CudaBackend;
use crate::error::driver_error;

/// How a call is cut for overlap when memory does not ask for more: into
/// `chunks` chunks (the copies not hidden are about one chunk's) of at
/// least `min_items` items (below it a chunk's kernels no longer fill the
/// device).
#[derive(Clone, Copy)]
pub(crate) struct Overlap {
    pub(crate) chunks: usize,
    pub(crate) min_items: usize,
}

/// Share of the device memory the automatic budget takes (the rest is
/// left to the driver, other buffers and other processes).
const AUTO_SHARE: f64 = 0.8;

/// The streams and events of one chunked call.
pub(crate) struct Lanes {
    /// Host-to-device copies.
    pub(crate) up: Arc<CudaStream>,
    /// Device-to-host copies.
    pub(crate) down: Arc<CudaStream>,
    /// Recorded on the backend's stream after the kernels of the chunk that
    /// last used buffer set 0 or 1.
    pub(crate) computed: [CudaEvent; 2],
}

/// Host time a pipelined call spends in each step, for its debug log: what
/// its uploads, its downloads (waiting for the chunk's kernels included) and
/// its own host work took.
#[derive(Default)]
pub(crate) struct Laps {
    pub(crate) up: f64,
    pub(crate) down: f64,
    pub(crate) host: f64,
    start: Option<std::time::Instant>,
}

impl Laps {
    pub(crate) fn new() -> Self {
        Self {
            start: Some(std::time::Instant::now()),
            ..Self::default()
        }
    }

    /// Runs `f`, adding its wall time to `slot` (milliseconds).
    pub(crate) fn time<R>(slot: &mut f64, f: impl FnOnce() -> R) -> R {
        let t = std::time::Instant::now();
        let r = f();
        *slot += t.elapsed().as_secs_f64() * 1e3;
        r
    }

    /// Logs the totals.
    pub(crate) fn log(&self, call: &str, chunks: usize) {
        let total = self.start.map_or(0.0, |t| t.elapsed().as_secs_f64() * 1e3);
        tracing::debug!(
            call,
            chunks,
            up_ms = self.up,
            down_ms = self.down,
            host_ms = self.host,
            total_ms = total,
            "pipelined host call"
        );
    }
}

/// How a call of `items` items is cut: `fixed` device bytes whatever the
/// chunk size, `per_item` bytes per item of a chunk (all its buffers: both
/// sets of the double-buffered ones), within `budget` bytes, and no larger
/// than `overlap` asks. Returns the items per chunk.
pub(crate) fn chunk_items(
    items: usize,
    fixed: u64,
    per_item: u64,
    budget: u64,
    overlap: Overlap,
) -> Result<usize> {
    let items = items.max(1);
    let room = budget.saturating_sub(fixed) / per_item.max(1);
    if room == 0 {
        return Err(Error::OutOfMemory {
            bytes: fixed.saturating_add(per_item),
            detail: format!(
                "a chunked host call needs {fixed} bytes plus {per_item} per item on the device; the memory budget is {budget}"
            ),
        });
    }
    let lap = items
        .div_ceil(overlap.chunks.max(1))
        .max(overlap.min_items.max(1));
    Ok(lap.min(room.min(usize::MAX as u64) as usize).min(items))
}

impl CudaBackend {
    /// Device bytes a chunked host call may take: the tuning's
    /// [`crate::Tuning::memory_budget`], else a share of what is free now
    /// (the memory pool's idle reserve counts as free: it is reused first).
    pub(crate) fn memory_budget(&self) -> Result<u64> {
        if let Some(b) = self.tuning.memory_budget() {
            return Ok(b);
        }
        let (free, _) = self
            .ctx
            .mem_get_info()
            .map_err(driver_error("cuMemGetInfo"))?;
        let idle = pool_idle_bytes(&self.ctx).unwrap_or(0);
        Ok(((free as u64 + idle) as f64 * AUTO_SHARE) as u64)
    }

    /// Two copy streams and the compute events of a chunked call. Made after
    /// the call's buffers: the copy streams start behind everything queued
    /// on the backend's stream so far, the stream-ordered allocations
    /// included (a buffer allocated on one stream is ready for another only
    /// after that).
    pub(crate) fn lanes(&self) -> Result<Lanes> {
        let stream = |what| self.ctx.new_stream().map_err(driver_error(what));
        let event = || {
            self.ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .map_err(driver_error("creating a pipeline event"))
        };
        let lanes = Lanes {
            up: stream("creating the upload stream")?,
            down: stream("creating the download stream")?,
            computed: [event()?, event()?],
        };
        for s in [&lanes.up, &lanes.down] {
            s.join(&self.stream)
                .map_err(driver_error("ordering a copy stream"))?;
        }
        Ok(lanes)
    }

    /// Uploads rows `r0 .. r0 + rows` of a row-major host matrix (leading
    /// dimension `m.ld()`) packed (leading dimension `m.cols()`) to `dst`,
    /// on `stream` through the staging pool; returns once they are there.
    /// With `field`, each value is also checked finite as it is copied (the
    /// data is then in cache, and no separate pass over the whole input runs
    /// ahead of the pipeline): the first non-finite value of the rows, in
    /// row-major order, is `Error::NonFinite` naming `field` and its index
    /// `i * ld + j` in the view, as `validate` reports it.
    pub(crate) fn upload_rows<T: Scalar>(
        &self,
        stream: &Arc<CudaStream>,
        m: &MatRef<'_, T>,
        (r0, rows): (usize, usize),
        dst: u64,
        field: Option<&'static str>,
    ) -> Result<()> {
        let (cols, ld, data) = (m.cols(), m.ld(), m.data());
        let size = std::mem::size_of::<T>();
        let bytes = rows * cols * size;
        if bytes == 0 {
            return Ok(());
        }
        let first_bad = AtomicUsize::new(usize::MAX);
        let fill = |_: usize, off: usize, out: &mut [u8]| {
            // Element `e` of the packed block is row `e / cols`, column
            // `e % cols`; a piece may start and end inside a row.
            let (mut e, end) = (off / size, (off + out.len()) / size);
            let mut o = 0;
            while e < end {
                let (r, c) = (e / cols, e % cols);
                let take = (cols - c).min(end - e);
                let at = (r0 + r) * ld + c;
                let src = &data[at..][..take];
                out[o..o + take * size].copy_from_slice(bytemuck::cast_slice(src));
                if field.is_some() && !src.iter().fold(true, |ok, v| ok & v.is_finite()) {
                    let j = src.iter().position(|v| !v.is_finite()).unwrap_or(0);
                    first_bad.fetch_min(at + j, Ordering::Relaxed);
                }
                (e, o) = (e + take, o + take * size);
            }
        };
        crate::staging::htod_fill(&self.staging, stream, &[(bytes, dst)], fill)?;
        match (field, first_bad.into_inner()) {
            (Some(field), i) if i != usize::MAX => Err(Error::NonFinite {
                field,
                index: i,
                value: data[i].to_f64(),
            }),
            _ => Ok(()),
        }
    }

    /// Records, on the backend's stream, that buffer set `set`'s kernels are
    /// queued.
    pub(crate) fn mark_computed(&self, lanes: &Lanes, set: usize) -> Result<()> {
        lanes.computed[set]
            .record(&self.stream)
            .map_err(driver_error("recording a pipeline event"))
    }
}

/// Bytes the device's default memory pool holds but no buffer uses.
fn pool_idle_bytes(ctx: &cudarc::driver::CudaContext) -> Option<u64> {
    use cudarc::driver::sys;
    if !ctx.has_async_alloc() {
        return None;
    }
    use sys::CUmemPool_attribute::{
        CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT as RESERVED, CU_MEMPOOL_ATTR_USED_MEM_CURRENT as USED,
    };
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: a plain driver query on a valid device with an out-pointer to a local.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }
        .result()
        .ok()?;
    let get = |attr| {
        let mut v = 0u64;
        // SAFETY: `pool` is the device's pool; both attributes are 64-bit.
        unsafe { sys::cuMemPoolGetAttribute(pool, attr, (&mut v as *mut u64).cast()) }
            .result()
            .ok()
            .map(|()| v)
    };
    let (reserved, used) = (get(RESERVED)?, get(USED)?);
    Some(reserved.saturating_sub(used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_the_budget_and_the_overlap() {
        let lap = Overlap {
            chunks: 16,
            min_items: 16_384,
        };
        // Plenty of memory: cut for overlap only, never below the minimum.
        let ample = |items| chunk_items(items, 0, 100, u64::MAX, lap).unwrap();
        assert_eq!(ample(1_000_000), 62_500);
        assert_eq!(ample(100_000), 16_384);
        assert_eq!(ample(1000), 1000);
        assert_eq!(ample(0), 1);
        // 200 bytes per item after 1000 fixed bytes.
        let fit = |budget| chunk_items(1_000_000, 1000, 200, budget, lap);
        assert_eq!(fit(1000 + 200 * 700).unwrap(), 700);
        assert_eq!(fit(1000 + 399).unwrap(), 1);
        let e = chunk_items(10, 1000, 200, 1199, lap).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        assert!(e.to_string().contains("memory budget is 1199"), "{e}");
    }
}
