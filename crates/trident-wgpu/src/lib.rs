//! # trident-wgpu
//!
//! The wgpu backend: WGSL compute shaders (from `shaders/`) on whatever adapter
//! wgpu finds: Vulkan, Metal, DX12, or llvmpipe on a machine without a GPU.
//!
//! Modules: [`context`] (adapter, device, the limits requested from the
//! adapter, `subgroups`, wgpu errors and device loss as [`Error`]s),
//! [`pipeline`] (shaders of `shaders/`, pipelines built once per device and
//! cached, dispatch recording with binding-limit checks), [`buffer`]
//! (device buffers and [`trident_core::DeviceMemory`]), a device scan, GPU
//! timestamps for benchmarks ([`GpuTimer`], the kernel profile), and one
//! module per primitive. f32 only: WGSL has no f64, so f64 calls answer
//! [`Error::Unsupported`], which the facade's [`Trident`] handle passes on to
//! the next backend and `verify` reports as skipped.
//!
//! All five primitives, host and device-resident traits. On a CPU adapter
//! (llvmpipe) [`Backend::software_device`] is `true`, and the facade ranks
//! the backend after rayon.
//!
//! [`Trident`]: https://docs.rs/trident
#![warn(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod buffer;
pub mod context;
mod dense_gemm;
pub mod error;
mod max_flow;
mod nearest_pairs;
pub mod pipeline;
mod profile;
mod scan;
#[cfg(test)]
mod shader_text;
mod sparse_coder;
mod sparse_gemm;
mod staging;
mod tuning;

use trident_core::{Backend, Error, Result, Scalar};

pub use buffer::WgpuBuffer;
pub use context::WgpuOptions;
pub use dense_gemm::GemmTile;
pub use error::WgpuFailure;
pub use max_flow::WgpuGrid;
pub use nearest_pairs::WgpuPointIndex;
pub use pipeline::{Arg, Bind, Encoder, Kernel, Shader};
pub use profile::{GpuTimer, KernelTime};
pub use tuning::Tuning;

/// A wgpu device and its queue, with the pipelines built for it.
pub struct WgpuBackend {
    /// Shared, with the pipelines and the profile, by the handles
    /// [`WgpuBackend::tuned`] makes.
    ctx: std::sync::Arc<context::Context>,
    cache: std::sync::Arc<pipeline::PipelineCache>,
    /// Per-dispatch GPU timestamps while on ([`WgpuBackend::set_kernel_profile`]).
    profile: std::sync::Arc<profile::ProfileSlot>,
    tuning: Tuning,
}

impl std::fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuBackend")
            .field("adapter", &self.ctx.info.name)
            .field("subgroups", &self.ctx.subgroups)
            .finish()
    }
}

/// Every kernel of this backend, for [`WgpuBackend::warm_up`].
fn all_kernels() -> impl Iterator<Item = &'static Kernel> {
    [
        scan::KERNELS,
        dense_gemm::KERNELS,
        sparse_gemm::KERNELS,
        nearest_pairs::KERNELS,
        sparse_coder::KERNELS,
        max_flow::KERNELS,
    ]
    .into_iter()
    .flatten()
    .copied()
}

impl WgpuBackend {
    /// Opens the highest-performance adapter wgpu finds (`WGPU_BACKEND` and the
    /// other wgpu environment variables are honoured; `TRIDENT_WGPU_NO_SUBGROUPS`
    /// turns the subgroup paths off).
    ///
    /// Errors with [`Error::BackendUnavailable`] when there is no adapter or no
    /// device can be created on it; never panics. Pipelines are built on first
    /// use, or all at once by [`WgpuBackend::warm_up`].
    pub fn new() -> Result<Self> {
        Self::with_options(&WgpuOptions::default())
    }

    /// Opens the backend with explicit [`WgpuOptions`].
    pub fn with_options(opts: &WgpuOptions) -> Result<Self> {
        Ok(Self {
            ctx: std::sync::Arc::new(context::Context::open(opts)?),
            cache: Default::default(),
            profile: Default::default(),
            tuning: Tuning::default(),
        })
    }

    /// Builds every pipeline of every primitive now (a benchmark calls this
    /// before timing, so no call it times compiles a shader).
    pub fn warm_up(&self) -> Result<()> {
        self.scoped("warm_up", || {
            for k in all_kernels().chain(self.gemm_kernels()) {
                self.compiled(k)?;
            }
            Ok(())
        })
    }

    /// What wgpu says about the adapter in use.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.ctx.info
    }

    /// The limits the device was opened with (the adapter's own).
    pub fn limits(&self) -> &wgpu::Limits {
        &self.ctx.limits
    }

    /// `true` when the shaders are built with their subgroup paths.
    pub fn has_subgroups(&self) -> bool {
        self.ctx.subgroups
    }

    /// The wgpu device (for peers and tests that record their own work).
    pub fn device(&self) -> &wgpu::Device {
        &self.ctx.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.ctx.queue
    }

    /// Runs `f` inside wgpu error scopes: an error wgpu raised while `f`
    /// recorded or submitted work (validation, out of memory, internal), an
    /// error left by an earlier call, or a lost device fails the call with an
    /// [`Error`] naming `op`, instead of wgpu's panic. Every public entry
    /// point of the backend goes through here.
    pub fn scoped<R>(&self, op: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
        self.ctx.errors.check(op)?;
        let scope = context::CallScope::open(&self.ctx.device);
        let r = f();
        let s = scope.close(op);
        let r = r?;
        s?;
        Ok(r)
    }
}

/// [`Error::Unsupported`] for f64: WGSL has no 64-bit float type (the facade
/// then runs the call on the next backend).
pub(crate) fn require_f32<T: Scalar>(primitive: &str) -> Result<()> {
    if T::NAME == "f32" {
        Ok(())
    } else {
        Err(Error::Unsupported(format!(
            "{primitive} in {} on wgpu: WGSL has no {}-bit float type",
            T::NAME,
            8 * std::mem::size_of::<T>()
        )))
    }
}

/// `data` as `f32` once [`require_f32`] has passed (same size, both `Pod`).
pub(crate) fn as_f32<T: Scalar>(data: &[T]) -> Result<&[f32]> {
    bytemuck::try_cast_slice(data).map_err(|e| error::failure("as_f32", e))
}

/// `data` as mutable `f32` once [`require_f32`] has passed.
pub(crate) fn as_f32_mut<T: Scalar>(data: &mut [T]) -> Result<&mut [f32]> {
    bytemuck::try_cast_slice_mut(data).map_err(|e| error::failure("as_f32_mut", e))
}

impl Backend for WgpuBackend {
    fn name(&self) -> &'static str {
        "wgpu"
    }
    fn describe(&self) -> String {
        format!(
            "wgpu on {} ({:?}, {:?}{})",
            self.ctx.info.name,
            self.ctx.info.backend,
            self.ctx.info.device_type,
            if self.ctx.subgroups {
                ", subgroups"
            } else {
                ""
            }
        )
    }
    /// A CPU adapter (llvmpipe): measured on the 2-core CI box, 9x (pairs)
    /// to 320x (cut) slower than rayon (BENCHMARKS.md).
    fn software_device(&self) -> bool {
        self.ctx.info.device_type == wgpu::DeviceType::Cpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trident_core::DeviceMemory;

    fn backends() -> Vec<WgpuBackend> {
        let mut v = Vec::new();
        for subgroups in [true, false] {
            match WgpuBackend::with_options(&WgpuOptions {
                subgroups,
                ..Default::default()
            }) {
                Ok(b) => v.push(b),
                Err(e) => println!("SKIPPED: {e}"),
            }
        }
        v
    }

    /// On a machine with no adapter the constructor must say so, not panic.
    #[test]
    fn no_adapter_is_unavailable_not_a_panic() {
        let r = WgpuBackend::with_options(&WgpuOptions {
            backends: Some(wgpu::Backends::empty()),
            subgroups: true,
        });
        assert!(matches!(r, Err(Error::BackendUnavailable(_))), "{r:?}");
    }

    /// Backends opened by many threads at once all work (on the H100's
    /// Vulkan driver, devices opened concurrently hung the test binary
    /// before `Context::open` took them one at a time).
    #[test]
    fn backends_open_from_many_threads() {
        let ok = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    s.spawn(move || {
                        let Ok(b) = WgpuBackend::new() else {
                            return None;
                        };
                        let host: Vec<u32> = (0..1000).map(|v| v * i).collect();
                        let buf = b.upload(&host).unwrap();
                        let mut back = vec![0u32; 1000];
                        b.download(&buf, &mut back).unwrap();
                        Some(back == host)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        });
        if ok.iter().all(Option::is_none) {
            println!("SKIPPED: no wgpu adapter");
        }
        assert!(ok.iter().flatten().all(|&same| same), "{ok:?}");
    }

    /// f64 answers Unsupported with the reason, so the facade moves on.
    #[test]
    fn f64_is_unsupported() {
        for b in backends() {
            let a = trident_core::CsrMatrix::<f64>::zeros(1, 1).unwrap();
            let r = trident_core::SparseGemm::spgemm(&b, &a, &a);
            assert!(matches!(r, Err(Error::Unsupported(_))), "{r:?}");
        }
    }

    #[test]
    fn upload_download_round_trip() {
        for b in backends() {
            for n in [0usize, 1, 3, 1000] {
                let host: Vec<u8> = (0..n).map(|i| i as u8).collect();
                let buf = b.upload(&host).unwrap();
                let mut back = vec![0u8; n];
                b.download(&buf, &mut back).unwrap();
                assert_eq!(back, host);
                let z = b.alloc_zeroed::<f32>(n).unwrap();
                assert_eq!(b.download_vec(&z).unwrap(), vec![0.0; n]);
            }
            let buf = b.upload(&[1u32, 2]).unwrap();
            assert!(b.download(&buf, &mut [0u32; 3]).is_err());
        }
    }

    /// The scan, with and without subgroups, across one, two and three levels.
    #[test]
    fn exclusive_scan() {
        for b in backends() {
            println!("{}", b.describe());
            b.warm_up().unwrap();
            for n in [1usize, 5, 1023, 1024, 1025, 4096 + 7, 1024 * 1024 + 3] {
                let host: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(7919) % 13).collect();
                let buf = b.upload(&host).unwrap();
                let mut enc = b.encoder("test scan");
                b.scan_exclusive_u32(&mut enc, &buf, n).unwrap();
                enc.submit();
                let got = b.download_vec(&buf).unwrap();
                let mut run = 0u32;
                for (i, (&g, &h)) in got.iter().zip(&host).enumerate() {
                    assert_eq!(g, run, "n={n} i={i} subgroups={}", b.has_subgroups());
                    run += h;
                }
            }
        }
    }

    /// The GPU clock: a timed call and the kernel profile name the kernels
    /// that ran, with as many dispatches as were recorded; both are absent
    /// (None / false) on an adapter without timestamp queries.
    #[test]
    fn gpu_timer_and_kernel_profile() {
        for b in backends() {
            let buf = b.upload(&vec![1u32; 5000]).unwrap();
            let scan = |b: &WgpuBackend| {
                let mut enc = b.encoder("test scan");
                b.scan_exclusive_u32(&mut enc, &buf, 5000)?;
                enc.submit();
                Ok(())
            };
            match b.gpu_timer() {
                Some(t) => {
                    let ((), ms) = t.time(&b, || scan(&b)).unwrap();
                    assert!(ms.is_finite() && ms >= 0.0, "{ms}");
                }
                None => println!("no timestamp queries on {}", b.describe()),
            }
            let on = b.set_kernel_profile(true).unwrap();
            assert_eq!(on, b.gpu_timer().is_some());
            scan(&b).unwrap();
            scan(&b).unwrap();
            let (kernels, dropped) = b.take_kernel_profile().unwrap();
            assert_eq!(dropped, 0);
            if on {
                // 5000 elements: two levels, so block scans and one add each.
                let count = |e: &str| kernels.iter().find(|k| k.entry == e).map(|k| k.dispatches);
                assert_eq!(count("scan_blocks"), Some(4), "{kernels:?}");
                assert_eq!(count("scan_add"), Some(2), "{kernels:?}");
                assert!(kernels.iter().all(|k| k.ms >= 0.0 && k.idle_ms >= 0.0));
                // Taken: the next profile starts empty.
                assert!(b.take_kernel_profile().unwrap().0.is_empty());
            } else {
                assert!(kernels.is_empty());
            }
            b.set_kernel_profile(false).unwrap();
            scan(&b).unwrap();
            assert!(b.take_kernel_profile().unwrap().0.is_empty());
        }
    }

    /// Workgroup grids past the per-dimension limit spread over y.
    #[test]
    fn grid_spreads_over_y() {
        for b in backends() {
            let max = b.limits().max_compute_workgroups_per_dimension as u64;
            assert_eq!(b.grid(5).unwrap(), [5, 1, 1]);
            let g = b.grid(max + 1).unwrap();
            assert!(g[0] as u64 * g[1] as u64 > max && g[1] == 2);
            assert!(matches!(b.grid(max * max + 1), Err(Error::TooLarge { .. })));
        }
    }
}
