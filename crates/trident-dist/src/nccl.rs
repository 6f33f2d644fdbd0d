//! [`Communicator`] over NCCL, for GPU ranks: host buffers are staged through
//! device memory in pieces and moved by NCCL (NVLink, PCIe, InfiniBand or
//! sockets, whatever NCCL finds). Device memory and streams come from
//! cudarc's driver API.
//!
//! NCCL is loaded at run time, as `libnccl.so.2` (the name NCCL's packages
//! and the `nvidia-nccl` wheels install) or `libnccl.so`: a build needs no
//! NCCL, and a machine without it gets `BackendUnavailable`. cudarc's own
//! `nccl` module looks only for `libnccl.so` and `libnccl.so.<CUDA major>`,
//! which most installations lack, hence the dozen entry points bound here.
//!
//! Faults: every operation runs against a deadline. Its completion is polled
//! while NCCL's asynchronous error is checked; a call that blocks inside NCCL
//! (the first collective connects to the peers and waits for them) is
//! aborted from a watchdog thread, as PyTorch's watchdog does. A peer that
//! died or a network error thus ends in `ncclCommAbort` and an
//! [`Error::Backend`] on this rank after at most the timeout, never a hang;
//! the aborted communicator fails every later call at once.
//!
//! A communicator split from another ([`Communicator::split`]:
//! `ncclCommSplit`, NCCL 2.18 and later) is a communicator like the first,
//! with a stream and a watchdog of its own under the same timeout; the
//! split itself is a call on the parent, under the parent's watchdog.

use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, mpsc};
use std::time::{Duration, Instant};

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use trident_core::{Error, Result};

use crate::comm::{
    Communicator, DeviceLink, DeviceRegion, ReduceOp, check_place, check_rank, split_place,
};
use crate::sharded::settle;

/// The 128-byte id rank 0 creates and every rank needs to join: the only
/// thing that travels outside NCCL (by MPI or the TCP rendezvous).
pub type NcclId = [u8; 128];

/// Device staging buffer per piece: large pieces keep NCCL at its bandwidth,
/// a cap keeps the staging memory small beside the primitives' own.
const STAGE: usize = 64 << 20;

type Comm = *mut c_void;
type Res = c_int;
const SUCCESS: Res = 0;
const IN_PROGRESS: Res = 7;
const UINT8: c_int = 1;
const UINT64: c_int = 5;
const FLOAT64: c_int = 8;

/// The NCCL entry points Trident uses, resolved once.
struct Lib {
    _lib: libloading::Library,
    version: unsafe extern "C" fn(*mut c_int) -> Res,
    get_unique_id: unsafe extern "C" fn(*mut NcclId) -> Res,
    init_all: unsafe extern "C" fn(*mut Comm, c_int, *const c_int) -> Res,
    init_rank: unsafe extern "C" fn(*mut Comm, c_int, NcclId, c_int) -> Res,
    abort: unsafe extern "C" fn(Comm) -> Res,
    destroy: unsafe extern "C" fn(Comm) -> Res,
    async_error: unsafe extern "C" fn(Comm, *mut Res) -> Res,
    error_string: unsafe extern "C" fn(Res) -> *const c_char,
    broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        Comm,
        *mut c_void,
    ) -> Res,
    all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        Comm,
        *mut c_void,
    ) -> Res,
    send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, Comm, *mut c_void) -> Res,
    recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, Comm, *mut c_void) -> Res,
    group_start: unsafe extern "C" fn() -> Res,
    group_end: unsafe extern "C" fn() -> Res,
    count: unsafe extern "C" fn(Comm, *mut c_int) -> Res,
    user_rank: unsafe extern "C" fn(Comm, *mut c_int) -> Res,
    /// `ncclCommSplit` (NCCL 2.18 and later; absent before).
    split: Option<unsafe extern "C" fn(Comm, c_int, c_int, *mut Comm, *mut c_void) -> Res>,
}

fn lib() -> std::result::Result<&'static Lib, String> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        let mut last = String::new();
        for name in ["libnccl.so.2", "libnccl.so"] {
            // SAFETY: loading NCCL runs its (trusted) library initialisers.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return bind(lib),
                Err(e) => last = e.to_string(),
            }
        }
        Err(format!(
            "NCCL could not be loaded (libnccl.so.2, libnccl.so): {last}"
        ))
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn bind(lib: libloading::Library) -> std::result::Result<Lib, String> {
    // SAFETY: each symbol is given the signature of NCCL 2.x's `nccl.h`.
    unsafe {
        macro_rules! sym {
            ($name:literal) => {
                *lib.get($name)
                    .map_err(|e| format!("NCCL lacks {}: {e}", String::from_utf8_lossy($name)))?
            };
        }
        Ok(Lib {
            version: sym!(b"ncclGetVersion"),
            get_unique_id: sym!(b"ncclGetUniqueId"),
            init_all: sym!(b"ncclCommInitAll"),
            init_rank: sym!(b"ncclCommInitRank"),
            abort: sym!(b"ncclCommAbort"),
            destroy: sym!(b"ncclCommDestroy"),
            async_error: sym!(b"ncclCommGetAsyncError"),
            error_string: sym!(b"ncclGetErrorString"),
            broadcast: sym!(b"ncclBroadcast"),
            all_reduce: sym!(b"ncclAllReduce"),
            send: sym!(b"ncclSend"),
            recv: sym!(b"ncclRecv"),
            group_start: sym!(b"ncclGroupStart"),
            group_end: sym!(b"ncclGroupEnd"),
            count: sym!(b"ncclCommCount"),
            user_rank: sym!(b"ncclCommUserRank"),
            split: lib.get(b"ncclCommSplit").ok().map(|f| *f),
            _lib: lib,
        })
    }
}

fn nccl_error(lib: &Lib, what: &str, code: Res) -> Error {
    // SAFETY: NCCL returns a static string for every code.
    let text = unsafe { std::ffi::CStr::from_ptr((lib.error_string)(code)) };
    Error::Backend(format!("NCCL {what}: {} (code {code})", text.to_string_lossy()).into())
}

fn check(lib: &Lib, what: &str, code: Res) -> Result<()> {
    if code == SUCCESS || code == IN_PROGRESS {
        Ok(())
    } else {
        Err(nccl_error(lib, what, code))
    }
}

fn driver(e: cudarc::driver::DriverError) -> Error {
    Error::Backend(Box::new(e))
}

/// Whether NCCL can be loaded here, and its version (`22807` for 2.28.7).
pub fn nccl_version() -> Result<u32> {
    let lib = lib().map_err(Error::BackendUnavailable)?;
    let mut v: c_int = 0;
    // SAFETY: writes one int.
    check(lib, "ncclGetVersion", unsafe { (lib.version)(&mut v) })?;
    Ok(v as u32)
}

/// A fresh id, created on rank 0 and handed to the others.
pub fn unique_id() -> Result<NcclId> {
    let lib = lib().map_err(Error::BackendUnavailable)?;
    let mut id = [0u8; 128];
    // SAFETY: writes the 128-byte id.
    check(lib, "ncclGetUniqueId", unsafe {
        (lib.get_unique_id)(&mut id)
    })?;
    Ok(id)
}

/// The NCCL communicator of one rank on one GPU.
pub struct NcclComm {
    inner: Mutex<Inner>,
    watch: Arc<Watch>,
    rank: usize,
    size: usize,
    timeout: Duration,
    ordinal: usize,
}

/// What a rank's calls and its watchdog thread share. The watchdog aborts
/// the communicator only while the rank is inside a blocking NCCL call
/// (where NCCL allows an abort from another thread); otherwise it marks the
/// deadline expired and the rank aborts at its next step, so no call ever
/// meets a freed communicator.
#[derive(Default)]
struct Watch {
    state: Mutex<WatchState>,
    wake: Condvar,
}

#[derive(Default)]
struct WatchState {
    deadline: Option<Instant>,
    in_call: bool,
    expired: bool,
    aborted: bool,
    stop: bool,
    /// The communicator handle, as an address (the thread only aborts it).
    comm: usize,
}

impl Watch {
    fn lock(&self) -> MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The watchdog thread's loop.
    fn run(&self, lib: &'static Lib) {
        let mut st = self.lock();
        while !st.stop {
            match st.deadline {
                None => st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(d) if Instant::now() >= d => {
                    st.expired = true;
                    st.deadline = None;
                    if st.in_call && !st.aborted {
                        // SAFETY: the rank is blocked inside NCCL on this
                        // live handle; NCCL lets another thread abort it.
                        unsafe { (lib.abort)(st.comm as Comm) };
                        st.aborted = true;
                    }
                }
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    st = self
                        .wake
                        .wait_timeout(st, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        }
    }
}

struct Inner {
    comm: Comm,
    stream: Arc<CudaStream>,
    /// Set once the communicator was aborted after a fault: no further use.
    broken: Option<String>,
}

// SAFETY: an NCCL communicator may be used from any thread as long as calls
// on it do not overlap; every call goes through `inner`'s mutex.
unsafe impl Send for Inner {}

struct SendComm(Comm);
// SAFETY: moved once from the thread that created it; not used there again.
unsafe impl Send for SendComm {}

impl NcclComm {
    /// Joins the communicator `id` as `rank` of `size` on GPU `ordinal`.
    /// Waits at most `timeout` for the other ranks to join.
    pub fn new(
        ordinal: usize,
        rank: usize,
        size: usize,
        id: NcclId,
        timeout: Duration,
    ) -> Result<Self> {
        check_rank("rank", rank, size)?;
        let lib = lib().map_err(Error::BackendUnavailable)?;
        // SAFETY: only asks whether libcuda can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::BackendUnavailable(
                "no CUDA driver (libcuda) on this machine".into(),
            ));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| {
            Error::BackendUnavailable(format!("GPU {ordinal} cannot be opened for NCCL: {e}"))
        })?;
        let stream = ctx.new_stream().map_err(driver)?;
        // ncclCommInitRank blocks until every rank joins; a rank that never
        // comes would block it for ever, so it runs on a thread we can stop
        // waiting for.
        let (tx, rx) = mpsc::channel();
        let bind_ctx = ctx.clone();
        std::thread::spawn(move || {
            let joined = bind_ctx.bind_to_thread().map_err(driver).and_then(|()| {
                let mut comm: Comm = std::ptr::null_mut();
                // SAFETY: writes one communicator handle.
                let code = unsafe { (lib.init_rank)(&mut comm, size as c_int, id, rank as c_int) };
                check(lib, "ncclCommInitRank", code).map(|()| SendComm(comm))
            });
            let _ = tx.send(joined);
        });
        let comm = match rx.recv_timeout(timeout) {
            Ok(joined) => joined?.0,
            Err(_) => {
                return Err(Error::Backend(
                    format!(
                        "NCCL: rank {rank} of {size} waited {timeout:?} for the others to join; \
                         one of them did not start or died"
                    )
                    .into(),
                ));
            }
        };
        Self::watched(lib, comm, stream, rank, size, timeout, ordinal)
    }

    /// One communicator per GPU of `ordinals`, all in this process
    /// (`ncclCommInitAll`): rank `i` runs on `ordinals[i]`. Each is used from
    /// its own thread, as the ranks of a launched job are from their
    /// processes.
    pub fn local(ordinals: &[usize], timeout: Duration) -> Result<Vec<Self>> {
        if ordinals.is_empty() {
            return Err(Error::arg("ordinals", "no GPU named"));
        }
        let lib = lib().map_err(Error::BackendUnavailable)?;
        // SAFETY: only asks whether libcuda can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::BackendUnavailable(
                "no CUDA driver (libcuda) on this machine".into(),
            ));
        }
        let mut streams = Vec::with_capacity(ordinals.len());
        for &o in ordinals {
            let ctx = CudaContext::new(o).map_err(|e| {
                Error::BackendUnavailable(format!("GPU {o} cannot be opened for NCCL: {e}"))
            })?;
            streams.push(ctx.new_stream().map_err(driver)?);
        }
        let devs: Vec<c_int> = ordinals.iter().map(|&o| o as c_int).collect();
        let mut comms: Vec<Comm> = vec![std::ptr::null_mut(); devs.len()];
        // SAFETY: writes one handle per listed device into `comms`, which
        // has room for exactly that many.
        let code =
            unsafe { (lib.init_all)(comms.as_mut_ptr(), devs.len() as c_int, devs.as_ptr()) };
        check(lib, "ncclCommInitAll", code)?;
        let n = ordinals.len();
        let mut out = Vec::with_capacity(n);
        let mut pending = comms.into_iter();
        for (rank, (stream, &o)) in streams.into_iter().zip(ordinals).enumerate() {
            let Some(comm) = pending.next() else { break };
            match Self::watched(lib, comm, stream, rank, n, timeout, o) {
                Ok(c) => out.push(c),
                Err(e) => {
                    // The handles not yet wrapped are released here; those
                    // wrapped go with `out`.
                    for rest in pending {
                        // SAFETY: a live handle from ncclCommInitAll, used by nothing else.
                        unsafe { (lib.destroy)(rest) };
                    }
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// A joined communicator handle with its own watchdog: what every
    /// communicator, joined or split, runs its calls through.
    fn watched(
        lib: &'static Lib,
        comm: Comm,
        stream: Arc<CudaStream>,
        rank: usize,
        size: usize,
        timeout: Duration,
        ordinal: usize,
    ) -> Result<Self> {
        let watch = Arc::new(Watch::default());
        watch.lock().comm = comm as usize;
        let dog = watch.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("nccl-watchdog-{rank}"))
            .spawn(move || dog.run(lib));
        let this = NcclComm {
            inner: Mutex::new(Inner {
                comm,
                stream,
                broken: None,
            }),
            watch,
            rank,
            size,
            timeout,
            ordinal,
        };
        // Without its watchdog the handle is released at once (by `Drop`).
        spawned.map_err(Error::Io)?;
        Ok(this)
    }

    /// The rank and size NCCL gives this communicator.
    fn place(&self) -> Result<(usize, usize)> {
        self.with(|lib, comm, _| {
            let (mut rank, mut count): (c_int, c_int) = (0, 0);
            // SAFETY: each writes one int about a live handle.
            check(lib, "ncclCommUserRank", unsafe {
                (lib.user_rank)(comm, &mut rank)
            })?;
            check(lib, "ncclCommCount", unsafe {
                (lib.count)(comm, &mut count)
            })?;
            Ok((rank as usize, count as usize))
        })
    }

    /// The GPU this rank's communicator runs on.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Runs `f` with the communicator, the stream and the library; turns a
    /// fault into an abort so later calls fail at once instead of hanging.
    fn with<R>(&self, f: impl FnOnce(&Lib, Comm, &Arc<CudaStream>) -> Result<R>) -> Result<R> {
        let lib = lib().map_err(Error::BackendUnavailable)?;
        let mut inner = self
            .inner
            .lock()
            .map_err(|_| Error::Backend("an NCCL call panicked earlier in this process".into()))?;
        if let Some(why) = &inner.broken {
            return Err(Error::Backend(
                format!("NCCL communicator aborted earlier: {why}").into(),
            ));
        }
        inner.stream.context().bind_to_thread().map_err(driver)?;
        {
            let mut st = self.watch.lock();
            st.deadline = Some(Instant::now() + self.timeout);
            st.expired = false;
            self.watch.wake.notify_all();
        }
        let out = f(lib, inner.comm, &inner.stream);
        let mut st = self.watch.lock();
        st.deadline = None;
        if let Err(e) = &out {
            if !st.aborted {
                // SAFETY: the handle is live; abort frees it and stops its kernels.
                unsafe { (lib.abort)(inner.comm) };
                st.aborted = true;
            }
            inner.broken = Some(e.to_string());
        }
        out
    }

    fn expired(&self, what: &str) -> Error {
        Error::Backend(
            format!(
                "NCCL {what} on rank {} did not complete within {:?}: a peer rank died or stopped",
                self.rank, self.timeout
            )
            .into(),
        )
    }

    /// Runs one NCCL call that may block (waiting for peers), where the
    /// watchdog may abort it.
    fn blocking(&self, what: &str, call: impl FnOnce() -> Res) -> Result<Res> {
        {
            let mut st = self.watch.lock();
            if st.expired || st.aborted {
                return Err(self.expired(what));
            }
            st.in_call = true;
        }
        let code = call();
        let mut st = self.watch.lock();
        st.in_call = false;
        if st.aborted {
            return Err(self.expired(what));
        }
        Ok(code)
    }

    /// Waits for the work enqueued on `stream`, checking NCCL's asynchronous
    /// error, for at most the timeout.
    fn wait(&self, lib: &Lib, comm: Comm, stream: &CudaStream, what: &str) -> Result<()> {
        let done = stream.record_event(None).map_err(driver)?;
        let mut nap = Duration::from_micros(20);
        loop {
            if done.try_is_complete().map_err(driver)? {
                return Ok(());
            }
            {
                let st = self.watch.lock();
                if st.expired || st.aborted {
                    return Err(self.expired(what));
                }
                let mut state: Res = SUCCESS;
                // SAFETY: writes one result code; the watchdog cannot abort
                // the handle while this lock is held.
                check(lib, "ncclCommGetAsyncError", unsafe {
                    (lib.async_error)(comm, &mut state)
                })?;
                if state != SUCCESS && state != IN_PROGRESS {
                    return Err(nccl_error(lib, what, state));
                }
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(5));
        }
    }

    /// Stages `host` (in pieces of at most [`STAGE`] bytes) through the
    /// device: `up` copies a piece in, `op` runs NCCL on it, `down` copies it
    /// back out.
    fn staged(
        &self,
        what: &str,
        host: &mut [u8],
        up: bool,
        down: bool,
        op: impl Fn(&Lib, Comm, *mut c_void, usize, *mut c_void) -> Res,
    ) -> Result<()> {
        if host.is_empty() {
            return Ok(());
        }
        self.with(|lib, comm, stream| {
            let mut dev: CudaSlice<u8> =
                stream.alloc_zeros(host.len().min(STAGE)).map_err(driver)?;
            for piece in host.chunks_mut(STAGE) {
                let mut view = dev.slice_mut(0..piece.len());
                if up {
                    stream.memcpy_htod(&*piece, &mut view).map_err(driver)?;
                }
                {
                    let (ptr, _sync) = view.device_ptr_mut(stream);
                    let s = stream.cu_stream() as *mut c_void;
                    let code =
                        self.blocking(what, || op(lib, comm, ptr as *mut c_void, piece.len(), s))?;
                    check(lib, what, code)?;
                }
                self.wait(lib, comm, stream, what)?;
                if down {
                    stream.memcpy_dtoh(&view, piece).map_err(driver)?;
                }
            }
            stream.synchronize().map_err(driver)
        })
    }

    fn reduce(&self, bytes: &mut [u8], dtype: c_int, width: usize, o: ReduceOp) -> Result<()> {
        let op = match o {
            ReduceOp::Sum => 0,
            ReduceOp::Max => 2,
            ReduceOp::Min => 3,
        };
        self.staged("ncclAllReduce", bytes, true, true, |lib, comm, p, n, s| {
            // SAFETY: in place on a device buffer of `n` bytes.
            unsafe { (lib.all_reduce)(p, p, n / width, dtype, op, comm, s) }
        })
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        {
            let mut st = self.watch.lock();
            st.stop = true;
            self.watch.wake.notify_all();
        }
        let aborted = self.watch.lock().aborted;
        if let (Ok(lib), Ok(inner)) = (lib(), self.inner.get_mut())
            && inner.broken.is_none()
            && !aborted
        {
            // SAFETY: the handle is live and no call is in flight. A rank
            // unwinding from a panic aborts: destroying would wait for peers
            // that may be waiting for it.
            unsafe {
                if std::thread::panicking() {
                    (lib.abort)(inner.comm);
                } else {
                    (lib.destroy)(inner.comm);
                }
            }
        }
    }
}

impl Communicator for NcclComm {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn transport(&self) -> &'static str {
        "nccl"
    }
    fn barrier(&self) -> Result<()> {
        let mut one = [1u64];
        self.all_reduce_u64(&mut one, ReduceOp::Sum)
    }
    fn broadcast(&self, root: usize, buf: &mut [u8]) -> Result<()> {
        check_rank("root", root, self.size)?;
        let me = self.rank == root;
        self.staged("ncclBroadcast", buf, me, !me, |lib, comm, p, n, s| {
            // SAFETY: in place on a device buffer of `n` bytes.
            unsafe { (lib.broadcast)(p, p, n, UINT8, root as c_int, comm, s) }
        })
    }
    fn all_reduce_u64(&self, buf: &mut [u64], op: ReduceOp) -> Result<()> {
        self.reduce(bytemuck::cast_slice_mut(buf), UINT64, 8, op)
    }
    fn all_reduce_f64(&self, buf: &mut [f64], op: ReduceOp) -> Result<()> {
        self.reduce(bytemuck::cast_slice_mut(buf), FLOAT64, 8, op)
    }
    fn split(&self, color: usize, key: usize) -> Result<Box<dyn Communicator>> {
        let want = split_place(self, color, key)?;
        let lib = lib().map_err(Error::BackendUnavailable)?;
        // Every rank must have the entry point, or those that do would
        // wait in it for those that do not.
        let split = settle(
            self,
            lib.split.ok_or_else(|| {
                let v = nccl_version().map_or_else(|e| e.to_string(), |v| v.to_string());
                Error::Unsupported(format!(
                    "splitting an NCCL communicator needs NCCL >= 2.18 (ncclCommSplit); \
                     this rank loaded NCCL {v}"
                ))
            }),
        )?;
        // The child gets a stream of its own on the same GPU, made before
        // the split so that no failure leaves a split handle behind.
        let ctx = self
            .inner
            .lock()
            .map_err(|_| Error::Backend("an NCCL call panicked earlier in this process".into()))?
            .stream
            .context()
            .clone();
        let stream = ctx.new_stream().map_err(driver)?;
        // Both fit an int: `split_place` checked every rank's.
        let (c, k) = (color as c_int, key as c_int);
        // Collective over this communicator, so under its deadline and
        // watchdog like any other call; a NULL config inherits this one's.
        let child = self.with(|lib, comm, _| {
            let mut child: Comm = std::ptr::null_mut();
            let code = self.blocking("ncclCommSplit", || {
                // SAFETY: writes one communicator handle; `comm` is live.
                unsafe { split(comm, c, k, &mut child, std::ptr::null_mut()) }
            })?;
            check(lib, "ncclCommSplit", code)?;
            if child.is_null() {
                return Err(Error::Backend("ncclCommSplit gave no communicator".into()));
            }
            Ok(child)
        })?;
        let child = Self::watched(
            lib,
            child,
            stream,
            want.0,
            want.1,
            self.timeout,
            self.ordinal,
        )?;
        check_place(child.place()?, want)?;
        Ok(Box::new(child))
    }
    fn device_link(&self) -> Option<&dyn DeviceLink> {
        Some(self)
    }
    fn shift(&self, send: &[u8], to: usize, recv: &mut [u8], from: usize) -> Result<()> {
        check_rank("to", to, self.size)?;
        check_rank("from", from, self.size)?;
        self.with(|lib, comm, stream| {
            let dev_send = if send.is_empty() {
                None
            } else {
                Some(stream.clone_htod(send).map_err(driver)?)
            };
            let mut dev_recv: Option<CudaSlice<u8>> = if recv.is_empty() {
                None
            } else {
                Some(stream.alloc_zeros(recv.len()).map_err(driver)?)
            };
            let s = stream.cu_stream() as *mut c_void;
            {
                let sp = dev_send.as_ref().map(|d| d.device_ptr(stream));
                let rp = dev_recv.as_mut().map(|d| d.device_ptr_mut(stream));
                // SAFETY: the group pairs this rank's send and receive so
                // neither waits for the other; pointers live to the wait.
                unsafe {
                    check(lib, "ncclGroupStart", (lib.group_start)())?;
                    if let Some((p, _)) = &sp {
                        check(
                            lib,
                            "ncclSend",
                            (lib.send)(
                                *p as *const c_void,
                                send.len(),
                                UINT8,
                                to as c_int,
                                comm,
                                s,
                            ),
                        )?;
                    }
                    if let Some((p, _)) = &rp {
                        check(
                            lib,
                            "ncclRecv",
                            (lib.recv)(
                                *p as *mut c_void,
                                recv.len(),
                                UINT8,
                                from as c_int,
                                comm,
                                s,
                            ),
                        )?;
                    }
                    let end = self.blocking("ncclGroupEnd", || (lib.group_end)())?;
                    check(lib, "ncclGroupEnd", end)?;
                }
                self.wait(lib, comm, stream, "ncclSend/ncclRecv")?;
            }
            if let Some(d) = &dev_recv {
                stream.memcpy_dtoh(d, recv).map_err(driver)?;
            }
            stream.synchronize().map_err(driver)
        })
    }
}

impl DeviceLink for NcclComm {
    unsafe fn exchange(&self, sends: &[DeviceRegion], recvs: &[DeviceRegion]) -> Result<()> {
        for r in sends.iter().chain(recvs) {
            check_rank("peer", r.peer, self.size)?;
        }
        self.with(|lib, comm, stream| {
            let s = stream.cu_stream() as *mut c_void;
            // SAFETY: the caller vouches for the regions (live device memory
            // of this GPU, receives disjoint); the group pairs every send
            // with its receive so no rank waits on another's order.
            unsafe {
                check(lib, "ncclGroupStart", (lib.group_start)())?;
                for r in sends.iter().filter(|r| r.bytes > 0) {
                    let p = r.ptr as *const c_void;
                    let code = (lib.send)(p, r.bytes, UINT8, r.peer as c_int, comm, s);
                    check(lib, "ncclSend", code)?;
                }
                for r in recvs.iter().filter(|r| r.bytes > 0) {
                    let p = r.ptr as *mut c_void;
                    let code = (lib.recv)(p, r.bytes, UINT8, r.peer as c_int, comm, s);
                    check(lib, "ncclRecv", code)?;
                }
                let end = self.blocking("ncclGroupEnd", || (lib.group_end)())?;
                check(lib, "ncclGroupEnd", end)?;
            }
            self.wait(lib, comm, stream, "ncclSend/ncclRecv (device)")
        })
    }
}
