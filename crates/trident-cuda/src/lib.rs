//! # trident-cuda
//!
//! The CUDA backend of Trident: kernels from the workspace's `kernels/*.cu`,
//! embedded in the binary and compiled at run time by NVRTC for the device's
//! own `sm_XX`, launched through `cudarc` (driver API, loaded dynamically).
//! Compiled cubins are kept on disk ([`kcache`]: `$TRIDENT_CACHE_DIR`, else
//! the user's cache directory), so only a process on a fresh machine pays
//! the compile; large host copies go through a pool of pinned buffers
//! ([`staging`]).
//!
//! What it is: [`CudaBackend`], a handle on one GPU implementing the host
//! traits of `trident-core` (upload, compute, download) and the device traits
//! ([`trident_core::DeviceMemory`], [`trident_core::DenseGemmDevice`],
//! [`trident_core::SparseGemmDevice`], [`trident_core::NearestPairsDevice`],
//! [`trident_core::SparseCoderDevice`])
//! that keep data on the GPU between calls. The device layer those build on is documented in [`device`].
//!
//! What it is not: a CUDA toolkit wrapper. It needs only the driver
//! (`libcuda`) and NVRTC (`libnvrtc`) at run time and nothing at build time, so
//! it builds everywhere; where either library or a device is missing, or the
//! driver, NVRTC or GPU is older than the kernels need ([`requirements`]),
//! [`CudaBackend::new`] answers [`Error::BackendUnavailable`] and never panics.
//!
//! ## Primitives
//! | primitive | kernel file | notes |
//! | --- | --- | --- |
//! | DenseGemm f32/f64 | `kernels/dense_gemm.cu` | strict f32: multistage `cp.async` SIMT (FFMA only); `Precision::Tf32`: `mma.sync` m16n8k8 tensor cores (`wgmma` fed by TMA on sm_90); `Precision::Tf32x3`: the `wgmma` kernel over operands split into TF32 hi and lo parts, three passes (sm_90; strict elsewhere); f64: DMMA `mma.sync` m16n8k4 (sm_90; two m8n8k4 on sm_80); register-staged / plain kernels for small products; compiled one entry point at a time |
//! | NearestPairs f32/f64 | `kernels/nearest_pairs.cu` | uniform grid on B built on the device, exact ring search per query, device top-k; radius search over the same grid (cells of at least r / 2): count, u64 offsets, `max_pairs` checked before allocating, fill, rows sorted by `(d2, j)` in registers or by tiled bitonic sort and merges; compiled one entry point at a time |
//! | MaxFlow | `kernels/max_flow.cu` | push-relabel over an active list (grids: implicit 4/6 neighbours; networks: CSR), global relabel by device BFS from the sink, canonical cut by device BFS; `i32` counters when the capacity sum fits, else `i64` |
//! | SparseCoder f32/f64 | `kernels/sparse_coder.cu` | Batch-OMP: `G = D^T D` and `alpha0 = D^T X` by one f64 tiled kernel, then one warp per signal (correlations from G's rows in L2, Cholesky grown one row per step, f64 throughout) |
//! | SparseGemm f32/f64 | `kernels/sparse_gemm.cu` | two-phase Gustavson, rows binned by work: thread k-way merge (short rows), warp bitonic sort (<= 128 products), warp shared-memory hash, block dense window or block hash for long rows; exact allocation of C; each value fma-summed in A's column order |
//!
//! Results are deterministic: no kernel uses a float reduction whose order
//! depends on scheduling (atomics only count and place integers; SpGEMM
//! accumulates each entry in A's column order, see `kernels/sparse_gemm.cu`).
#![warn(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod dense_gemm;
pub mod device;
pub mod error;
pub mod kcache;
#[cfg(test)]
mod kernel_text;
mod max_flow;
mod nearest_pairs;
mod pipeline;
pub mod requirements;
mod sparse_coder;
mod sparse_gemm;
pub mod staging;
mod tuning;

use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaStream};
use trident_core::{Backend, Error, Result};

pub use dense_gemm::GemmTile;
pub use device::{CudaBuffer, KernelSource};
pub use error::{DriverFailure, KernelCompileFailure, driver_error};
pub use max_flow::{
    DEFAULT_FLOW_BUDGET, DEFAULT_NETWORK_RELABEL_PERIOD, DEFAULT_RELABEL_PERIOD, GridLayers,
    GridOnDevice, GridPreflow,
};
pub use nearest_pairs::{CudaPointIndex, DEFAULT_CELL_TARGET};
pub use requirements::{MIN_COMPUTE_CAPABILITY, check_versions};
pub use tuning::Tuning;

/// Every kernel source this crate embeds, with its entry points (the tidy
/// test checks each `kernels/*.cu` of ours is listed and names them).
pub const KERNELS: &[(&KernelSource, &[&str])] = &[
    (&dense_gemm::KERNEL, dense_gemm::ENTRY_POINTS),
    (&nearest_pairs::KERNEL, nearest_pairs::ENTRY_POINTS),
    (&sparse_coder::KERNEL, sparse_coder::ENTRY_POINTS),
    (&sparse_gemm::KERNEL, sparse_gemm::ENTRY_POINTS),
    (&max_flow::KERNEL, max_flow::ENTRY_POINTS),
    (&requirements::PROBE, &[requirements::PROBE_ENTRY]),
];

/// The CUDA backend: one device, one stream, a kernel cache.
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    cc: (i32, i32),
    sm_count: u32,
    max_smem_optin: u32,
    l2_bytes: u32,
    /// Shared by the handles [`CudaBackend::tuned`] makes.
    modules: Arc<device::ModuleCache>,
    staging: Arc<staging::Staging>,
    tuning: Tuning,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.name)
            .field("ordinal", &self.ctx.ordinal())
            .field("cc", &self.cc)
            .field("modules", &self.modules)
            .finish()
    }
}

fn unavailable(what: impl Into<String>) -> Error {
    Error::BackendUnavailable(what.into())
}

impl CudaBackend {
    /// Opens device `ordinal`.
    ///
    /// Probes, in order and without panicking: the driver library (`libcuda`),
    /// the device count, NVRTC (`libnvrtc`), then what the kernels need
    /// ([`requirements`]): the driver's CUDA version against NVRTC's, the
    /// device's compute capability against [`MIN_COMPUTE_CAPABILITY`]
    /// ([`check_versions`]), and one tiny kernel compiled and loaded (kept in
    /// the module and disk caches like any other). Each failure is
    /// [`Error::BackendUnavailable`] saying what was found and what is
    /// needed, so the facade serves the call on the next backend instead of
    /// failing at the first kernel. The other kernels are compiled later, on
    /// first use.
    ///
    /// A broken install (a `libcuda.so` that lacks the driver API, e.g. a stub
    /// or a mismatched library) passes the `dlopen` check but makes cudarc's
    /// loader panic on the first missing symbol ("Missing symbol cuInit").
    /// Construction therefore runs under [`std::panic::catch_unwind`], and a
    /// panic there is `BackendUnavailable` naming the loader's message. (The
    /// default panic hook still prints that message once; a library must not
    /// replace the process-wide hook.) cudarc caches nothing after such a
    /// panic, so a later call probes again and fails the same way.
    pub fn new(ordinal: usize) -> Result<Self> {
        std::panic::catch_unwind(|| Self::open(ordinal)).unwrap_or_else(|payload| {
            Err(unavailable(format!(
                "a CUDA library is unusable (a broken or stub libcuda or libnvrtc?): {}",
                panic_message(payload.as_ref())
            )))
        })
    }

    /// [`CudaBackend::new`] without the panic guard.
    fn open(ordinal: usize) -> Result<Self> {
        // SAFETY: only tries to dlopen the library; cudarc's own loader panics
        // when it is missing, which this check avoids.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(unavailable(
                "the CUDA driver library (libcuda.so) was not found: no NVIDIA driver installed",
            ));
        }
        let count = CudaContext::device_count()
            .map_err(|e| unavailable(format!("the CUDA driver did not initialise: {e}")))?;
        if count <= 0 {
            return Err(unavailable("the CUDA driver reports no device"));
        }
        if ordinal >= count as usize {
            return Err(unavailable(format!(
                "CUDA device {ordinal} requested, {count} present"
            )));
        }
        // SAFETY: as above, a dlopen probe.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(unavailable(
                "NVRTC (libnvrtc.so) was not found: install the CUDA toolkit's NVRTC \
                 or add its lib directory to LD_LIBRARY_PATH",
            ));
        }
        let driver = requirements::driver_version()?;
        let nvrtc = requirements::nvrtc_version()?;
        let cc = requirements::compute_capability(ordinal)?;
        check_versions(driver, nvrtc, cc)
            .map_err(|e| unavailable(format!("CUDA device {ordinal}: {}", reason(e))))?;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| unavailable(format!("could not open CUDA device {ordinal}: {e}")))?;
        // SAFETY: this backend queues all its work on one stream, so the
        // per-buffer events cudarc would record for cross-stream ordering are
        // not needed; buffers created from here on carry none.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(driver_error("creating the stream"))?;
        let attr = |a| {
            ctx.attribute(a)
                .map_err(driver_error("cuDeviceGetAttribute"))
        };
        let sm_count = attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let max_smem_optin =
            attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32;
        let l2_bytes = attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as u32;
        let name = ctx
            .name()
            .map_err(driver_error("reading the device name"))?;
        keep_pool_memory(&ctx)?;
        let staging = staging::Pool::new(
            staging::PinnedAlloc::new(Arc::clone(&ctx)),
            staging::CHUNK,
            staging::POOL_BUFFERS,
        );
        let be = Self {
            ctx,
            stream,
            name,
            cc,
            sm_count,
            max_smem_optin,
            l2_bytes,
            modules: Default::default(),
            staging: Arc::new(staging),
            tuning: Tuning::default(),
        };
        requirements::probe(&be, ordinal, driver, nvrtc)?;
        Ok(be)
    }

    /// The device's name as the driver reports it.
    pub fn device_name(&self) -> &str {
        &self.name
    }
}

/// The reason inside a [`Error::BackendUnavailable`] (any other error's text).
fn reason(e: Error) -> String {
    match e {
        Error::BackendUnavailable(why) => why,
        e => e.to_string(),
    }
}

/// The message of a caught panic (`&str` or `String` payloads, as `panic!` makes).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Tells the device's default memory pool to keep freed memory instead of
/// returning it to the driver at each synchronisation, so that repeated calls
/// reuse their buffers at no cost (what a caching allocator does).
fn keep_pool_memory(ctx: &CudaContext) -> Result<()> {
    use cudarc::driver::sys;
    if !ctx.has_async_alloc() {
        return Ok(());
    }
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    let mut threshold: u64 = u64::MAX;
    // SAFETY: plain driver calls on a valid device with out-pointers to locals.
    unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
            .result()
            .map_err(driver_error("cuDeviceGetDefaultMemPool"))?;
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
        .result()
        .map_err(driver_error("cuMemPoolSetAttribute(release threshold)"))?;
    }
    Ok(())
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn describe(&self) -> String {
        format!(
            "cuda: {} (sm_{}{}, {} SMs)",
            self.name, self.cc.0, self.cc.1, self.sm_count
        )
    }
}
