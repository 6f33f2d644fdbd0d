//! The device layer every CUDA primitive builds on: buffers, allocation with
//! typed out-of-memory errors, host <-> device copies, run-time kernel
//! compilation with a per-device cache, and the error plumbing.
//!
//! # API (stable: other primitives of this crate build on it)
//!
//! | item | what it does |
//! | --- | --- |
//! | [`CudaBuffer<T>`] | `len` elements of a [`Element`] type in device memory; [`CudaBuffer::ptr`] is the raw `CUdeviceptr` to pass to a kernel as a `u64` argument |
//! | [`CudaBackend::alloc`] / [`CudaBackend::alloc_zeroed_named`] | new buffer (contents unspecified / zeroed); an allocation failure is [`Error::OutOfMemory`] naming the buffer |
//! | [`CudaBackend::upload_named`] / [`CudaBackend::download_into`] | host -> device / device -> host copies (the download synchronizes) |
//! | [`CudaBackend::copy_into`] / [`CudaBackend::memset_zero`] | device -> device copy, zero fill |
//! | [`CudaBackend::function`] | a kernel entry point of a [`KernelSource`], compiled by NVRTC on first use for this device's `sm_XX` and cached |
//! | [`CudaBackend::stream`] / [`CudaBackend::context`] | the one stream all work of this backend is queued on, and its context (for cuBLAS/cuSPARSE peers, events) |
//! | [`driver_error`] (in [`crate::error`]) | wraps a `cudarc` driver error into [`Error::Backend`] with the operation's name |
//!
//! Launch pattern (all pointers are passed as `u64` values; sizes as the exact
//! C type of the kernel parameter, converted with [`count_u32`]): the one
//! launch helper, `launch_kernel!` (crate-internal), fetches the entry point,
//! opts into dynamic shared memory when the configuration asks for more than
//! 16 KiB, pushes the arguments and queues the kernel, naming it in errors:
//!
//! ```text
//! let (a, n) = (buf.ptr(), count_u32("a", buf.len())?);
//! launch_kernel!(be, &KERNEL, "my_kernel_f32", cfg, &a, &n);
//! ```
//!
//! Validation of device-resident arguments is `trident_core::validate`'s
//! (`gemm_device`, `spgemm_device`, `knn_device`, ...), shared with every
//! backend.
//!
//! # Ordering and lifetimes
//! Everything runs on one stream ([`CudaBackend::stream`]) in submission order,
//! and cudarc's per-buffer event tracking is switched off (it only matters with
//! several streams and costs two events per allocation). Allocation and freeing
//! are stream-ordered (`cuMemAllocAsync` / `cuMemFreeAsync`) from the device's
//! default memory pool, which this backend tells to keep freed memory cached,
//! so a buffer dropped while a kernel still reads it is safe and repeated calls
//! do not go back to the driver for memory. Code that hands device pointers to
//! another library must run that library on the same stream.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, RwLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
};
use cudarc::nvrtc::Ptx;
use trident_core::{DeviceMemory, Element, Error, Result};

use crate::CudaBackend;
use crate::error::{DriverFailure, KernelCompileFailure, driver_error, is_oom, module_label};
use crate::kcache::Compiler;

/// A CUDA source file of `kernels/`, embedded in the binary.
#[derive(Debug)]
pub struct KernelSource {
    /// Module name (the file's stem), used as the cache key and in errors.
    pub name: &'static str,
    /// The CUDA C++ source.
    pub source: &'static str,
    /// Compile one entry point at a time: the source declares its entry
    /// points one a line through `SOME_ENTRY(name, ...)` macros, and a call
    /// compiles the source with only its own entry line kept (see
    /// `entry_source`); kernels defined without such a line share one
    /// `base` module (every entry line blanked). Why: a module of many heavy
    /// template kernels (the GEMM shapes) took 43.6 s to compile whole on the
    /// H100 machine, while one call needs one kernel; and a call that needs
    /// many (SpGEMM's bins) compiles them on all cores at once through
    /// [`CudaBackend::prepare`] instead of as one module on one core.
    pub per_entry: bool,
}

/// `source` with every entry-point line `SOME_ENTRY(other, ...)` but
/// `entry`'s blanked (kept as an empty line, so NVRTC's line numbers still
/// match the file), or `None` when no such line names `entry`. Templates
/// that only the removed lines instantiate are then never compiled.
pub(crate) fn entry_source(source: &str, entry: &str) -> Option<String> {
    let mut out = String::with_capacity(source.len());
    let mut found = false;
    for line in source.split_inclusive('\n') {
        match entry_line(line) {
            Some(name) if name == entry => {
                found = true;
                out.push_str(line);
            }
            Some(_) => out.push('\n'),
            None => out.push_str(line),
        }
    }
    found.then_some(out)
}

/// `source` with every entry-point line blanked: the module of the kernels
/// a [`KernelSource::per_entry`] source defines without an entry line.
fn base_source(source: &str) -> String {
    source
        .split_inclusive('\n')
        .map(|line| {
            if entry_line(line).is_some() {
                "\n"
            } else {
                line
            }
        })
        .collect()
}

/// The module serving `function` of `src`: its cache key (`name`,
/// `name:entry` or `name:base`) and the source to compile.
fn module_source(src: &KernelSource, function: &str) -> (String, std::borrow::Cow<'static, str>) {
    if !src.per_entry {
        return (src.name.to_string(), src.source.into());
    }
    match entry_source(src.source, function) {
        Some(s) => (format!("{}:{function}", src.name), s.into()),
        None => (format!("{}:base", src.name), base_source(src.source).into()),
    }
}

/// The entry point a line `SOME_ENTRY(name, ...)` declares (a macro use at
/// the start of the line whose name is upper case and ends in `_ENTRY`; the
/// `#define` of such a macro is not one).
fn entry_line(line: &str) -> Option<&str> {
    let (mac, rest) = line.trim_start().split_once('(')?;
    let upper = mac
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if !upper || !mac.ends_with("_ENTRY") {
        return None;
    }
    rest.split([',', ')']).next().map(str::trim)
}

/// `len` elements of `T` in device memory.
///
/// Stored as bytes because cudarc's typed slices need its own `DeviceRepr`
/// trait, while Trident's buffers hold any [`Element`] (`bytemuck::Pod`).
pub struct CudaBuffer<T: Element> {
    slice: CudaSlice<u8>,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element> CudaBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// `true` when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
    /// The raw device address (`CUdeviceptr`), to pass to kernels as a `u64`.
    ///
    /// Valid while the buffer lives; work queued on the backend's stream before
    /// the buffer is dropped may still use it (freeing is stream-ordered).
    pub fn ptr(&self) -> u64 {
        let (p, _sync) = self.slice.device_ptr(self.slice.stream());
        p
    }
    /// The same memory reinterpreted as `U` elements (the byte length must
    /// divide evenly). Used to hand one scratch buffer to kernels of several
    /// element types.
    pub fn cast<U: Element>(self) -> Result<CudaBuffer<U>> {
        let bytes = self.num_bytes();
        let size = std::mem::size_of::<U>();
        if size == 0 || !bytes.is_multiple_of(size) {
            return Err(Error::dim(
                "buffer",
                format!("{bytes} bytes is not a whole number of {size}-byte elements"),
            ));
        }
        Ok(CudaBuffer {
            slice: self.slice,
            len: bytes / size,
            _t: PhantomData,
        })
    }
}

impl<T: Element> fmt::Debug for CudaBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CudaBuffer<{}>[{}] @ {:#x}",
            std::any::type_name::<T>(),
            self.len,
            self.ptr()
        )
    }
}

/// `n` as a `u32` kernel argument, or [`Error::TooLarge`] naming `field`.
pub fn count_u32(field: &'static str, n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::TooLarge {
        field,
        value: n as u128,
        limit: u32::MAX as u128,
    })
}

/// Queues kernel `$name` (a `&str`) of the [`KernelSource`] `$src` on the
/// backend's stream with [`cudarc::driver::LaunchConfig`] `$cfg` and the
/// arguments `$arg` (references to `u64` pointers and exact-width scalars).
/// Dynamic shared memory above 16 KiB is opted into first (the kernels'
/// static shared memory counts against the same 48 KiB default).
///
/// `launch_kernel!(@fn $be, $f, $label, $cfg, $arg...)` queues an entry
/// point `$f` (`&CudaFunction`) the caller already looked up, for loops that
/// launch the same kernel many times (max-flow's push-relabel iterations):
/// no lookup and no shared-memory opt-in (the caller did it, once, when it
/// needs one); errors name `$label`.
///
/// The caller promises what the `unsafe` launch needs: the arguments match
/// the kernel's parameter list in `kernels/<module>.cu`, and every buffer
/// holds the elements the kernel indexes.
macro_rules! launch_kernel {
    (@fn $be:expr, $f:expr, $label:expr, $cfg:expr, $($arg:expr),* $(,)?) => {{
        use cudarc::driver::PushKernelArg as _;
        let f: &cudarc::driver::CudaFunction = $f;
        let cfg: cudarc::driver::LaunchConfig = $cfg;
        let mut l = $be.stream().launch_builder(f);
        $( l.arg($arg); )*
        // SAFETY: the caller matched the arguments to the kernel's parameter
        // list and sized every buffer for it (see the macro's docs).
        unsafe { l.launch(cfg) }.map_err(|err| $crate::error::launch_error($label, err))?;
    }};
    ($be:expr, $src:expr, $name:expr, $cfg:expr, $($arg:expr),* $(,)?) => {{
        let name: &str = $name;
        let cfg: cudarc::driver::LaunchConfig = $cfg;
        let f = $be.function($src, name)?;
        if cfg.shared_mem_bytes > 16 * 1024 {
            $be.set_dynamic_smem(&f, cfg.shared_mem_bytes)?;
        }
        $crate::device::launch_kernel!(@fn $be, &f, name, cfg, $($arg),*)
    }};
}
pub(crate) use launch_kernel;

/// Loaded modules of one backend, keyed by module name (`name:entry` for a
/// module compiled one entry point at a time, `name:base` for the kernels
/// of such a source that have no entry line), and the kernels already
/// looked up in them.
#[derive(Default)]
pub(crate) struct ModuleCache {
    /// A module that failed to compile or load stays here as its message: the
    /// source is fixed at build time, so retrying on every call would only
    /// repeat the same NVRTC run and error.
    modules: RwLock<HashMap<String, std::result::Result<Arc<CudaModule>, String>>>,
    /// `module:function` -> the loaded kernel, so a launch costs one lookup
    /// (no source filtering, no `cuModuleGetFunction`).
    functions: RwLock<HashMap<String, CudaFunction>>,
}

impl fmt::Debug for ModuleCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = match self.modules.read() {
            Ok(m) => m.keys().cloned().collect(),
            Err(_) => vec!["<poisoned>".into()],
        };
        write!(f, "ModuleCache{names:?}")
    }
}

/// Phase timings as debug events, when a `tracing` subscriber wants them.
/// Each lap then synchronizes the stream (so the time is the phase's, not
/// its launch's) and traced calls are slower overall; without such a
/// subscriber a lap costs one branch.
pub(crate) struct Trace {
    on: bool,
    label: &'static str,
    t: std::time::Instant,
}

impl Trace {
    pub(crate) fn new(label: &'static str) -> Self {
        Trace {
            on: tracing::enabled!(tracing::Level::DEBUG),
            label,
            t: std::time::Instant::now(),
        }
    }

    /// Emits the time since the last lap (after the queued work finished).
    pub(crate) fn lap(&mut self, be: &CudaBackend, what: impl FnOnce() -> String) -> Result<()> {
        if self.on {
            be.stream()
                .synchronize()
                .map_err(driver_error("synchronize (trace)"))?;
            tracing::debug!(
                call = self.label,
                phase = %what(),
                ms = self.t.elapsed().as_secs_f64() * 1e3,
                "phase"
            );
            self.t = std::time::Instant::now();
        }
        Ok(())
    }
}

fn poisoned() -> Error {
    Error::Backend("kernel cache lock poisoned by a panic".into())
}

impl CudaBackend {
    /// The stream all work of this backend runs on, in order.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The CUDA context (the device's primary context).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Compute capability `(major, minor)`, e.g. `(9, 0)` on Hopper.
    pub fn compute_capability(&self) -> (i32, i32) {
        self.cc
    }

    /// Number of streaming multiprocessors.
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// Size of the L2 cache in bytes.
    pub fn l2_cache_bytes(&self) -> u32 {
        self.l2_bytes
    }

    /// Largest dynamic shared memory a block may opt into, in bytes.
    pub fn max_shared_per_block(&self) -> u32 {
        self.max_smem_optin
    }

    fn alloc_bytes(&self, bytes: usize, what: &str) -> Result<CudaSlice<u8>> {
        // A zero-byte stream-ordered allocation is not portable; one byte keeps
        // every buffer a real allocation with a valid address.
        let n = bytes.max(1);
        // SAFETY: the memory is uninitialised; every caller either fills it
        // before reading or documents that its contents are unspecified (any
        // bit pattern is a valid `Element`, which is `Pod`).
        unsafe { self.stream.alloc::<u8>(n) }.map_err(|e| {
            if is_oom(&e) {
                Error::OutOfMemory {
                    bytes: bytes as u64,
                    detail: format!("device buffer `{what}` on {}", self.name),
                }
            } else {
                Error::Backend(Box::new(DriverFailure {
                    op: format!("allocating `{what}` ({bytes} bytes)"),
                    err: e,
                }))
            }
        })
    }

    /// A new buffer of `len` elements whose contents are unspecified; `what`
    /// names it in an out-of-memory error.
    pub fn alloc<T: Element>(&self, len: usize, what: &str) -> Result<CudaBuffer<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(Error::TooLarge {
                field: "buffer bytes",
                value: len as u128 * std::mem::size_of::<T>() as u128,
                limit: usize::MAX as u128,
            })?;
        Ok(CudaBuffer {
            slice: self.alloc_bytes(bytes, what)?,
            len,
            _t: PhantomData,
        })
    }

    /// A new zero-filled buffer of `len` elements; `what` names it in errors.
    pub fn alloc_zeroed_named<T: Element>(&self, len: usize, what: &str) -> Result<CudaBuffer<T>> {
        let mut b = self.alloc::<T>(len, what)?;
        self.memset_zero(&mut b)?;
        Ok(b)
    }

    /// Fills a buffer with zero bytes (queued on the stream).
    pub fn memset_zero<T: Element>(&self, buf: &mut CudaBuffer<T>) -> Result<()> {
        if buf.len == 0 {
            return Ok(());
        }
        self.stream
            .memset_zeros(&mut buf.slice)
            .map_err(driver_error("memset"))
    }

    /// Copies `host` into a new buffer; `what` names it in errors. Copies of
    /// `staging::STAGED_MIN` bytes or more go through the pinned
    /// staging pool (see [`crate::staging`]).
    pub fn upload_named<T: Element>(&self, host: &[T], what: &str) -> Result<CudaBuffer<T>> {
        let mut b = self.alloc::<T>(host.len(), what)?;
        self.upload_into(host, &mut b)?;
        Ok(b)
    }

    /// Copies `host` into the start of an existing buffer (`host.len() <= buf.len()`).
    pub fn upload_into<T: Element>(&self, host: &[T], buf: &mut CudaBuffer<T>) -> Result<()> {
        if host.len() > buf.len {
            return Err(Error::dim(
                "buf",
                format!("{} elements do not fit a buffer of {}", host.len(), buf.len),
            ));
        }
        self.upload_bytes(bytemuck::cast_slice(host), buf.ptr(), &mut buf.slice)
    }

    /// Copies `bytes` to the start of `slice` (whose address is `ptr`):
    /// staged when large, the driver's pageable path when small.
    pub(crate) fn upload_bytes(
        &self,
        bytes: &[u8],
        ptr: u64,
        slice: &mut CudaSlice<u8>,
    ) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if bytes.len() >= crate::staging::STAGED_MIN {
            return crate::staging::htod_many(&self.staging, &self.stream, &[(bytes, ptr)]);
        }
        self.stream
            .memcpy_htod(bytes, slice)
            .map_err(driver_error("upload (host -> device copy)"))
    }

    /// Copies each host range to its device address (inside buffers of this
    /// backend): one staged copy for all of them when they are large
    /// together, so several buffers share one set of workers; the driver's
    /// pageable path when small.
    ///
    /// # Safety
    /// Each device range `dst .. dst + bytes.len()` lies inside a live
    /// buffer of this backend that nothing else uses during the call.
    pub(crate) unsafe fn upload_spans(&self, parts: &[(&[u8], u64)]) -> Result<()> {
        let total: usize = parts.iter().map(|p| p.0.len()).sum();
        if total >= crate::staging::STAGED_MIN {
            return crate::staging::htod_many(&self.staging, &self.stream, parts);
        }
        for &(bytes, dst) in parts.iter().filter(|p| !p.0.is_empty()) {
            // SAFETY: the caller's contract; from pageable memory the call
            // returns once the driver has taken its own copy of `bytes`.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(dst, bytes, self.stream.cu_stream())
            }
            .map_err(driver_error("upload (host -> device copy)"))?;
        }
        Ok(())
    }

    /// Fills device ranges `(bytes, dst)` (inside buffers of this backend)
    /// with what `fill(part, byte offset, out)` writes, so that a converted
    /// or computed array goes up without a host array of its own: staged
    /// (see [`crate::staging::htod_fill`]) when large, else one aligned host
    /// vector per part through the driver's pageable path. `out` is 16-byte
    /// aligned at offsets that are multiples of 16 in both cases.
    ///
    /// # Safety
    /// As [`CudaBackend::upload_spans`].
    pub(crate) unsafe fn upload_filled(
        &self,
        parts: &[(usize, u64)],
        fill: impl Fn(usize, usize, &mut [u8]) + Sync,
    ) -> Result<()> {
        let total: usize = parts.iter().map(|p| p.0).sum();
        if total >= crate::staging::STAGED_MIN {
            return crate::staging::htod_fill(&self.staging, &self.stream, parts, fill);
        }
        for (p, &(bytes, dst)) in parts.iter().enumerate().filter(|(_, p)| p.0 > 0) {
            let mut host = vec![0u128; bytes.div_ceil(16)];
            let out = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut host)[..bytes];
            fill(p, 0, out);
            // SAFETY: the caller's contract; from pageable memory the call
            // returns once the driver has taken its own copy of `out`.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(dst, &*out, self.stream.cu_stream())
            }
            .map_err(driver_error("upload (host -> device copy)"))?;
        }
        Ok(())
    }

    /// Copies each device range `(src, dst, bytes)` to its host address and
    /// waits: one staged copy for all when they are large together, the
    /// driver's pageable path when small. Errors of earlier queued kernels
    /// surface here.
    ///
    /// # Safety
    /// As [`crate::staging::dtoh_many`].
    pub(crate) unsafe fn download_spans(&self, parts: &[(u64, *mut u8, usize)]) -> Result<()> {
        let total: usize = parts.iter().map(|p| p.2).sum();
        if total >= crate::staging::STAGED_MIN {
            // SAFETY: the caller's contract.
            unsafe { crate::staging::dtoh_many(&self.staging, &self.stream, parts) }?;
        } else {
            for &(src, dst, n) in parts.iter().filter(|p| p.2 > 0) {
                // SAFETY: the caller's contract; into pageable memory the call
                // returns once the copy is done.
                unsafe {
                    cudarc::driver::sys::cuMemcpyDtoHAsync_v2(
                        dst.cast(),
                        src,
                        n,
                        self.stream.cu_stream(),
                    )
                }
                .result()
                .map_err(driver_error("download (device -> host copy)"))?;
            }
        }
        self.stream
            .synchronize()
            .map_err(driver_error("synchronize after download"))
    }

    /// Copies the first `host.len()` elements of `buf` to the host and waits
    /// for it (`host.len() <= buf.len()`). Errors of earlier queued kernels
    /// surface here.
    pub fn download_into<T: Element>(&self, buf: &CudaBuffer<T>, host: &mut [T]) -> Result<()> {
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
        // SAFETY: `host` is `n` writable bytes, exclusively ours here, and the
        // device buffer holds at least as many.
        unsafe { self.download_spans(&[(buf.ptr(), host.as_mut_ptr().cast(), n)]) }
    }

    /// Downloads a whole buffer into a new `Vec`.
    pub fn download_vec<T: Element>(&self, buf: &CudaBuffer<T>) -> Result<Vec<T>> {
        // SAFETY: the device buffer holds `buf.len` elements of `T`.
        unsafe { self.download_new(buf.ptr(), buf.len) }
    }

    /// `len` elements of `T` read from device address `src` into a new `Vec`.
    /// A large one is written straight into the `Vec`'s fresh (never
    /// zero-filled) memory by the staging workers, so its page faults are
    /// taken once, in parallel, instead of by a zero fill and then a copy,
    /// and on huge pages where the kernel grants them.
    ///
    /// # Safety
    /// `src` must hold at least `len` elements of `T` (any bit pattern is a
    /// valid `T`: it is `Pod`).
    pub(crate) unsafe fn download_new<T: bytemuck::Pod>(
        &self,
        src: u64,
        len: usize,
    ) -> Result<Vec<T>> {
        let mut v = fresh_vec::<T>(len)?;
        // SAFETY: the spare capacity holds `len` elements, ours alone; `src`
        // holds as many (the caller's contract).
        unsafe {
            self.download_spans(&[(src, v.as_mut_ptr().cast(), len * size_of::<T>())])?;
            // Every byte of the `len` elements was written, and any bit
            // pattern is a valid `T`.
            v.set_len(len);
        }
        Ok(v)
    }

    /// Frees the idle page-locked staging buffers (they are otherwise kept
    /// for the next large copy, up to 64 MiB); returns how many were freed.
    pub fn release_staging(&self) -> Result<usize> {
        self.staging.release_idle()
    }

    /// What the staging pool holds now.
    pub fn staging_stats(&self) -> Result<crate::staging::PoolStats> {
        self.staging.stats()
    }

    /// Copies all of `src` into the start of `dst` (`src.len() <= dst.len()`),
    /// on the stream.
    pub fn copy_into<T: Element>(
        &self,
        src: &CudaBuffer<T>,
        dst: &mut CudaBuffer<T>,
    ) -> Result<()> {
        if src.len > dst.len {
            return Err(Error::dim(
                "dst",
                format!("{} elements do not fit a buffer of {}", src.len, dst.len),
            ));
        }
        if src.len == 0 {
            return Ok(());
        }
        let n = src.num_bytes();
        let s = src.slice.slice(0..n);
        let mut d = dst.slice.slice_mut(0..n);
        let (dp, _g1) = d.device_ptr_mut(&self.stream);
        let (sp, _g2) = s.device_ptr(&self.stream);
        // SAFETY: both ranges are inside live allocations of at least n bytes.
        unsafe { cudarc::driver::result::memcpy_dtod_async(dp, sp, n, self.stream.cu_stream()) }
            .map_err(driver_error("device -> device copy"))
    }

    /// Copies `dst.len()` elements of `src` from element `at` on into
    /// `dst`, on the stream.
    pub fn copy_range<T: Element>(
        &self,
        src: &CudaBuffer<T>,
        at: usize,
        dst: &mut CudaBuffer<T>,
    ) -> Result<()> {
        if at.checked_add(dst.len).is_none_or(|end| end > src.len) {
            return Err(Error::dim(
                "dst",
                format!(
                    "{} elements from {at} run past a buffer of {}",
                    dst.len, src.len
                ),
            ));
        }
        let size = std::mem::size_of::<T>();
        // SAFETY: the source run lies inside `src` (checked above), the
        // destination is all of `dst`; two distinct allocations.
        unsafe { self.copy_raw(dst.ptr(), src.ptr() + (at * size) as u64, dst.num_bytes()) }
    }

    /// Copies `bytes` bytes between device addresses of this device, on the
    /// stream.
    ///
    /// # Safety
    /// Both runs lie inside live allocations of this device and do not
    /// overlap.
    pub(crate) unsafe fn copy_raw(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller's contract.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(dst, src, bytes, self.stream.cu_stream())
        }
        .map_err(driver_error("device -> device copy"))
    }

    /// The entry point `function` of `src`, compiling the module (or, for a
    /// [`KernelSource::per_entry`] module, that entry alone) with NVRTC for
    /// this device's `sm_XX` on first use. The module is cached per backend
    /// (one compile per module and device) and on disk (see
    /// [`crate::kcache`]); the cache is re-checked after taking the write lock
    /// so two threads never compile the same module twice.
    pub fn function(&self, src: &KernelSource, function: &str) -> Result<CudaFunction> {
        let fkey = format!("{}:{function}", src.name);
        if let Some(f) = self
            .modules
            .functions
            .read()
            .map_err(|_| poisoned())?
            .get(&fkey)
        {
            return Ok(f.clone());
        }
        let module = self.module(src, function)?;
        let f = module.load_function(function).map_err(|err| {
            Error::Backend(Box::new(DriverFailure {
                op: format!("loading kernel `{function}` from kernels/{}.cu", src.name),
                err,
            }))
        })?;
        self.modules
            .functions
            .write()
            .map_err(|_| poisoned())?
            .insert(fkey, f.clone());
        Ok(f)
    }

    /// Makes sure the modules serving `functions` of `src` are loaded,
    /// compiling the missing ones (or reading them from the disk cache) on
    /// all cores at once, then loading them one by one. A call that needs
    /// several one-entry modules calls this first; a module that fails is
    /// kept as its error, which [`CudaBackend::function`] then reports.
    pub fn prepare(&self, src: &KernelSource, functions: &[&str]) -> Result<()> {
        {
            let have = self.modules.functions.read().map_err(|_| poisoned())?;
            if functions
                .iter()
                .all(|f| have.contains_key(&format!("{}:{f}", src.name)))
            {
                return Ok(());
            }
        }
        let mut todo: Vec<(String, std::borrow::Cow<'static, str>)> = Vec::new();
        {
            let have = self.modules.modules.read().map_err(|_| poisoned())?;
            for f in functions {
                let (key, source) = module_source(src, f);
                if !have.contains_key(&key) && todo.iter().all(|(k, _)| *k != key) {
                    todo.push((key, source));
                }
            }
        }
        if todo.is_empty() {
            return Ok(());
        }
        let arch = self.arch();
        let images = crate::kcache::process_cache().get_or_compile_all(&Nvrtc, &todo, &arch);
        let mut w = self.modules.modules.write().map_err(|_| poisoned())?;
        for ((key, source), image) in todo.into_iter().zip(images) {
            if w.contains_key(&key) {
                continue;
            }
            let loaded =
                image.and_then(|(image, outcome)| self.load_image(&key, &source, image, outcome));
            w.insert(key, loaded.map_err(|e| e.to_string()));
        }
        drop(w);
        for f in functions {
            // Looks each kernel up once, so later calls take the fast path
            // above; a failure is the launch's to report, with its name.
            let _ = self.function(src, f);
        }
        Ok(())
    }

    fn module(&self, src: &KernelSource, function: &str) -> Result<Arc<CudaModule>> {
        let (key, source) = module_source(src, function);
        if let Some(m) = self
            .modules
            .modules
            .read()
            .map_err(|_| poisoned())?
            .get(&key)
        {
            return m.clone().map_err(|e| Error::Backend(e.into()));
        }
        let mut w = self.modules.modules.write().map_err(|_| poisoned())?;
        if let Some(m) = w.get(&key) {
            return m.clone().map_err(|e| Error::Backend(e.into()));
        }
        let loaded = self.compile_and_load(&key, &source);
        w.insert(
            key,
            loaded.as_ref().map(Arc::clone).map_err(|e| e.to_string()),
        );
        loaded
    }

    /// Loads module `src` from the on-disk cache of cubins, compiling it with
    /// NVRTC on a miss (see [`crate::kcache`]). A cached image the driver
    /// refuses is recompiled once.
    fn compile_and_load(&self, name: &str, source: &str) -> Result<Arc<CudaModule>> {
        let cache = crate::kcache::process_cache();
        let (image, outcome) = cache.get_or_compile(&Nvrtc, name, source, &self.arch())?;
        self.load_image(name, source, image, outcome)
    }

    /// The target NVRTC compiles for: `sm_XX` of this device, or `sm_90a` on
    /// compute capability 9.0, whose architecture-specific features
    /// (`wgmma`) only that target exposes. An `sm_90a` image runs on 9.0
    /// devices only, as an `sm_90` cubin does.
    fn arch(&self) -> String {
        if self.has_wgmma() {
            return "sm_90a".into();
        }
        format!("sm_{}{}", self.cc.0, self.cc.1)
    }

    /// Whether the device runs the `sm_90a` GEMM kernels (Hopper's warpgroup
    /// MMA, `wgmma`, and the TMA-fed producer/consumer kernels): compute
    /// capability 9.0 exactly (later architectures dropped `wgmma`).
    pub fn has_wgmma(&self) -> bool {
        self.cc == (9, 0)
    }

    /// Loads a compiled image of module `name`; an image read from the disk
    /// cache that the driver refuses is recompiled once.
    fn load_image(
        &self,
        name: &str,
        source: &str,
        image: Vec<u8>,
        outcome: crate::kcache::Outcome,
    ) -> Result<Arc<CudaModule>> {
        let arch = self.arch();
        let cache = crate::kcache::process_cache();
        let load = |image: Vec<u8>| {
            self.ctx
                .load_module(Ptx::from_binary(image))
                .map_err(|err| {
                    Error::Backend(Box::new(DriverFailure {
                        op: format!("loading module {} ({arch})", module_label(name)),
                        err,
                    }))
                })
        };
        match load(image) {
            Err(_) if outcome == crate::kcache::Outcome::Hit => {
                load(cache.recompile(&Nvrtc, name, source, &arch)?)
            }
            other => other,
        }
    }

    /// Lets `f` use up to `bytes` of dynamic shared memory (needed above 48 KiB).
    pub fn set_dynamic_smem(&self, f: &CudaFunction, bytes: u32) -> Result<()> {
        use cudarc::driver::sys::CUfunction_attribute_enum as A;
        if bytes > self.max_smem_optin {
            return Err(Error::Unsupported(format!(
                "kernel needs {bytes} bytes of shared memory, the device allows {}",
                self.max_smem_optin
            )));
        }
        f.set_attribute(
            A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
        .map_err(driver_error(
            "cuFuncSetAttribute(max dynamic shared memory)",
        ))
    }
}

impl DeviceMemory for CudaBackend {
    type Buffer<T: Element> = CudaBuffer<T>;

    fn upload<T: Element>(&self, host: &[T]) -> Result<CudaBuffer<T>> {
        self.upload_named(host, "upload")
    }

    fn alloc_zeroed<T: Element>(&self, len: usize) -> Result<CudaBuffer<T>> {
        self.alloc_zeroed_named(len, "alloc_zeroed")
    }

    fn download<T: Element>(&self, buf: &CudaBuffer<T>, host: &mut [T]) -> Result<()> {
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
        self.download_into(buf, host)
    }

    fn buffer_len<T: Element>(&self, buf: &CudaBuffer<T>) -> usize {
        buf.len
    }

    fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(driver_error("stream synchronize"))
    }
}

/// NVRTC compiling a module straight to a cubin for one `sm_XX`.
struct Nvrtc;

impl Compiler for Nvrtc {
    fn version(&self) -> String {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: out-pointers to locals.
        let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
        match r.result() {
            Ok(()) => format!("nvrtc-{major}.{minor}"),
            Err(_) => "nvrtc-unknown".into(),
        }
    }

    fn options(&self, arch: &str) -> Vec<String> {
        vec![format!("--gpu-architecture={arch}"), "-std=c++17".into()]
    }

    fn compile(&self, name: &str, source: &str, arch: &str) -> Result<Vec<u8>> {
        use cudarc::nvrtc::{result, sys};
        let fail = |log: String| {
            Error::Backend(Box::new(KernelCompileFailure {
                module: name.to_string(),
                arch: arch.to_string(),
                log,
            }))
        };
        let csrc = std::ffi::CString::new(source)
            .map_err(|_| fail("the source holds a NUL byte".into()))?;
        let file = name.split(':').next().unwrap_or(name);
        let cname = std::ffi::CString::new(format!("{file}.cu"))
            .map_err(|_| fail("the module name holds a NUL byte".into()))?;
        let prog = result::create_program(&csrc, Some(cname.as_c_str()))
            .map_err(|e| fail(format!("{e:?}")))?;
        let opts = self.options(arch);
        // SAFETY: `prog` was just created and is destroyed once, below; the
        // cubin buffer is sized by NVRTC's own answer.
        unsafe {
            let r = match result::compile_program(prog, &opts) {
                Err(e) => {
                    let log = result::get_program_log(prog)
                        .map(|l| {
                            std::ffi::CStr::from_ptr(l.as_ptr())
                                .to_string_lossy()
                                .into_owned()
                        })
                        .unwrap_or_default();
                    Err(fail(format!("{e:?}\n{log}")))
                }
                Ok(()) => {
                    let mut size = 0usize;
                    match sys::nvrtcGetCUBINSize(prog, &mut size).result() {
                        Err(e) => Err(fail(format!("nvrtcGetCUBINSize: {e:?}"))),
                        Ok(()) => {
                            let mut cubin = vec![0u8; size];
                            sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast())
                                .result()
                                .map(|()| cubin)
                                .map_err(|e| fail(format!("nvrtcGetCUBIN: {e:?}")))
                        }
                    }
                }
            };
            let _ = result::destroy_program(prog);
            r
        }
    }
}

/// [`trident_core::validate::check_beside`], with the check on its own
/// thread from the staging threshold on.
pub(crate) fn check_beside<R>(
    bytes: usize,
    check: impl Fn() -> Result<()> + Sync,
    upload: impl FnOnce() -> Result<R>,
) -> Result<R> {
    trident_core::validate::check_beside(bytes >= crate::staging::STAGED_MIN, check, upload)
}

/// An empty `Vec` with room for exactly `len` elements on huge pages where
/// granted: a download into fresh memory on 4 KiB pages was fault-bound
/// (5 GB/s against 32 GB/s into touched memory, measured by `host_bench`).
pub(crate) fn fresh_vec<T>(len: usize) -> Result<Vec<T>> {
    trident_core::mem::fresh_vec(len, || "host copy of a device buffer".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gemm_entry_point_compiles_alone() {
        let k = &crate::dense_gemm::KERNEL;
        let lines = |s: &str| s.lines().filter_map(entry_line).count();
        assert_eq!(lines(k.source), crate::dense_gemm::ENTRY_POINTS.len());
        for &e in crate::dense_gemm::ENTRY_POINTS {
            let one = entry_source(k.source, e).unwrap();
            let kept: Vec<&str> = one.lines().filter_map(entry_line).collect();
            assert_eq!(kept, [e]);
            // Line numbers in NVRTC's messages still match the file.
            assert_eq!(one.lines().count(), k.source.lines().count());
        }
        assert!(entry_source(k.source, "gemm_nn_64x64").is_none());
    }

    #[test]
    fn spgemm_kernels_split_into_entry_modules_and_one_base() {
        let k = &crate::sparse_gemm::KERNEL;
        let base = base_source(k.source);
        assert_eq!(base.lines().count(), k.source.lines().count());
        assert_eq!(base.lines().filter_map(entry_line).count(), 0);
        let mut keys = std::collections::BTreeSet::new();
        for &e in crate::sparse_gemm::ENTRY_POINTS {
            let (key, source) = module_source(k, e);
            // Plain kernels live in the base module, every other alone.
            if base.contains(&format!(" {e}(")) {
                assert_eq!(key, "sparse_gemm:base", "{e}");
            } else {
                assert_eq!(key, format!("sparse_gemm:{e}"));
                let kept: Vec<&str> = source.lines().filter_map(entry_line).collect();
                assert_eq!(kept, [e]);
            }
            keys.insert(key);
        }
        // The four symbolic bins have entry lines of their own too.
        for e in [
            "spg_sym_merge",
            "spg_sym_warp_hash",
            "spg_sym_dense",
            "spg_sym_block_hash",
        ] {
            assert!(keys.contains(&format!("sparse_gemm:{e}")), "{e}");
        }
        let f32s = crate::sparse_gemm::entries_for("f32");
        assert!(f32s.contains(&"spg_analyze") && f32s.contains(&"spg_num_dense_f32"));
        assert!(f32s.iter().all(|e| !e.ends_with("_f64")));
        let f64s = crate::sparse_gemm::entries_for("f64");
        assert_eq!(f32s.len(), f64s.len());
    }

    #[test]
    fn entry_lines_are_macro_uses_only() {
        assert_eq!(entry_line("SGEMM_ENTRY(gemm_a, 64, 1)\n"), Some("gemm_a"));
        assert_eq!(entry_line("  X2_ENTRY(k)"), Some("k"));
        assert_eq!(entry_line("#define SGEMM_ENTRY(NAME, BM) \\"), None);
        assert_eq!(entry_line("sgemm_entry(x)"), None);
        assert_eq!(entry_line("SGEMM_ENTRIES(x)"), None);
        assert_eq!(entry_line("// SGEMM_ENTRY(x)"), None);
    }
}
