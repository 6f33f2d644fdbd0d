//! GPU timestamps: the device's own clock, for benchmarks and tuning.
//!
//! A wall clock around a call plus a wait measures the host too: the submit,
//! and the time the waiting thread takes to wake up, which on the H100
//! through Vulkan varied 2-4x between passes of one run on the H100.
//! The CUDA benches time with events on the GPU's timeline; these are the
//! same thing for wgpu, where the adapter offers timestamp queries
//! (`TIMESTAMP_QUERY` and `TIMESTAMP_QUERY_INSIDE_ENCODERS`; llvmpipe and
//! some drivers do not, and then both tools answer `None` / stay off):
//! - [`GpuTimer`]: a stamp before and after a call, as a CUDA event pair:
//!   the span includes any gap in which the GPU waited for the host.
//! - The kernel profile ([`WgpuBackend::set_kernel_profile`]): every
//!   dispatch writes a stamp at its start and end; [`WgpuBackend::take_kernel_profile`]
//!   sums them per entry point.

use std::sync::Mutex;

use trident_core::{Error, Result};

use crate::WgpuBackend;
use crate::error::failure;

/// Timestamps a query set holds (wgpu's maximum for one set).
const QUERIES: u32 = 4096;

/// A query set with a buffer to resolve it into and one to read it back.
struct Stamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
    /// Nanoseconds per tick.
    period: f64,
}

impl Stamps {
    fn new(be: &WgpuBackend, count: u32) -> Self {
        let dev = &be.ctx.device;
        let bytes = u64::from(count) * 8;
        Self {
            set: dev.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count,
            }),
            resolve: dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamps resolved"),
                size: bytes,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            read: dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamps read back"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            period: f64::from(be.ctx.queue.get_timestamp_period()),
        }
    }

    /// Resolves stamps `0..n`, waits for the GPU and returns them in ns.
    fn read(&self, be: &WgpuBackend, n: u32) -> Result<Vec<f64>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let bytes = u64::from(n) * 8;
        let mut enc = be
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("timestamps resolve"),
            });
        enc.resolve_query_set(&self.set, 0..n, &self.resolve, 0);
        enc.copy_buffer_to_buffer(&self.resolve, 0, &self.read, 0, bytes);
        be.ctx.queue.submit([enc.finish()]);
        let slice = self.read.slice(..bytes);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        be.ctx.wait("timestamps")?;
        rx.recv()
            .map_err(|_| failure("timestamps", "the map callback never ran"))?
            .map_err(|e| failure("timestamps (map_async)", e))?;
        let ticks: Vec<u64> = {
            let view = slice
                .get_mapped_range()
                .map_err(|e| failure("timestamps (get_mapped_range)", e))?;
            bytemuck::cast_slice(&view[..bytes as usize]).to_vec()
        };
        self.read.unmap();
        Ok(ticks.iter().map(|&t| t as f64 * self.period).collect())
    }
}

/// Times calls on the GPU's clock: see the module doc.
pub struct GpuTimer {
    stamps: Stamps,
}

impl GpuTimer {
    /// Runs `f` between two timestamps and returns its result with the GPU
    /// time between them in ms (after waiting for the GPU).
    pub fn time<R>(&self, be: &WgpuBackend, f: impl FnOnce() -> Result<R>) -> Result<(R, f64)> {
        let stamp = |i: u32| {
            let mut enc = be
                .ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("timestamp"),
                });
            enc.write_timestamp(&self.stamps.set, i);
            be.ctx.queue.submit([enc.finish()]);
        };
        stamp(0);
        let r = f()?;
        stamp(1);
        let t = self.stamps.read(be, 2)?;
        Ok((r, (t[1] - t[0]) * 1e-6))
    }
}

/// Per-dispatch stamps while the kernel profile is on.
pub(crate) struct KernelProfile {
    stamps: Stamps,
    /// Entry point of each dispatch, in order; dispatch `i` wrote stamps
    /// `2i` and `2i + 1`.
    entries: Vec<&'static str>,
    /// Dispatches past the query set's capacity (not timed).
    dropped: usize,
}

/// One line of [`WgpuBackend::take_kernel_profile`].
#[derive(Clone, Debug)]
pub struct KernelTime {
    /// The kernel's entry point.
    pub entry: &'static str,
    /// How many dispatches of it were timed.
    pub dispatches: usize,
    /// Their summed GPU time in ms.
    pub ms: f64,
    /// Summed GPU idle time in ms before them: from the end of the dispatch
    /// before each (in the profile's order) to its start. A large one is
    /// the host's doing (a wait, encoding, a submit).
    pub idle_ms: f64,
}

/// The profile state a backend holds (`None`: off).
pub(crate) type ProfileSlot = Mutex<Option<KernelProfile>>;

fn poisoned() -> Error {
    failure("kernel profile", "lock poisoned by a panic")
}

impl WgpuBackend {
    fn has_timestamps(&self) -> bool {
        let need =
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        self.ctx.device.features().contains(need)
    }

    /// A [`GpuTimer`], or `None` when the adapter has no timestamp queries.
    pub fn gpu_timer(&self) -> Option<GpuTimer> {
        self.has_timestamps().then(|| GpuTimer {
            stamps: Stamps::new(self, 2),
        })
    }

    /// Turns the kernel profile on (clearing it) or off. Returns `false`
    /// when the adapter has no timestamp queries (the profile stays off).
    pub fn set_kernel_profile(&self, on: bool) -> Result<bool> {
        let on = on && self.has_timestamps();
        *self.profile.lock().map_err(|_| poisoned())? = on.then(|| KernelProfile {
            stamps: Stamps::new(self, QUERIES),
            entries: Vec::new(),
            dropped: 0,
        });
        Ok(on)
    }

    /// Waits for the GPU and returns the GPU time of every dispatch since the
    /// profile was turned on or last taken, summed per entry point in order of
    /// first use, and how many dispatches went untimed (past 2048 of them);
    /// then starts a fresh profile. Empty when the profile is off.
    pub fn take_kernel_profile(&self) -> Result<(Vec<KernelTime>, usize)> {
        let mut slot = self.profile.lock().map_err(|_| poisoned())?;
        let Some(p) = slot.as_mut() else {
            return Ok((Vec::new(), 0));
        };
        let t = p.stamps.read(self, 2 * p.entries.len() as u32)?;
        let mut out: Vec<KernelTime> = Vec::new();
        for (i, &entry) in p.entries.iter().enumerate() {
            let ms = (t[2 * i + 1] - t[2 * i]) * 1e-6;
            let idle_ms = if i > 0 {
                ((t[2 * i] - t[2 * i - 1]) * 1e-6).max(0.0)
            } else {
                0.0
            };
            match out.iter_mut().find(|k| k.entry == entry) {
                Some(k) => {
                    k.dispatches += 1;
                    k.ms += ms;
                    k.idle_ms += idle_ms;
                }
                None => out.push(KernelTime {
                    entry,
                    dispatches: 1,
                    ms,
                    idle_ms,
                }),
            }
        }
        let dropped = std::mem::take(&mut p.dropped);
        p.entries.clear();
        Ok((out, dropped))
    }

    /// The stamps the next dispatch of `entry` writes, while the profile is on
    /// and has room; `pass` of [`crate::Encoder::dispatch`] uses them.
    pub(crate) fn profile_stamps<R>(
        &self,
        entry: &'static str,
        pass: impl FnOnce(Option<wgpu::ComputePassTimestampWrites<'_>>) -> R,
    ) -> Result<R> {
        let mut slot = self.profile.lock().map_err(|_| poisoned())?;
        let Some(p) = slot.as_mut() else {
            return Ok(pass(None));
        };
        let i = p.entries.len() as u32;
        if 2 * i + 2 > QUERIES {
            p.dropped += 1;
            return Ok(pass(None));
        }
        p.entries.push(entry);
        Ok(pass(Some(wgpu::ComputePassTimestampWrites {
            query_set: &p.stamps.set,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        })))
    }
}
