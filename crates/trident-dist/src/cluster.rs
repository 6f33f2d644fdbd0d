//! [`Cluster`]: this process's rank in the job and the communicator that
//! joins it to the others, chosen from how the job was launched.

use std::fmt;
use std::time::Duration;

use trident_core::{Error, Result};

use crate::comm::{Communicator, Solo};
use crate::launch::{Launch, Launcher};

/// Which transport the ranks talk over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// NCCL where every rank has a GPU and NCCL loads (and the `nccl`
    /// feature is on), else MPI, else (one process) none.
    #[default]
    Auto,
    /// MPI, host buffers: CPU clusters, or GPUs without NCCL.
    Mpi,
    /// NCCL on this rank's GPU.
    Nccl,
}

/// How [`Cluster::new`] joins the job.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// The transport.
    pub transport: Transport,
    /// How long any rank waits for the others (joining, and every
    /// collective on NCCL) before it gives up with an error: a rank that
    /// died makes the others fail within this time instead of hanging.
    pub timeout: Duration,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            transport: Transport::Auto,
            timeout: Duration::from_secs(300),
        }
    }
}

/// This process's rank in a job of several, and the communicator to the
/// others. One per process under a launcher (MPI can be started only once);
/// one per thread in the single-process mode (`Cluster::local_gpus`, feature `nccl`).
pub struct Cluster {
    comm: Box<dyn Communicator>,
    launch: Launch,
    gpu: Option<usize>,
    // Keeps MPI alive (it bootstrapped NCCL) until the NCCL communicator,
    // declared before it, is gone.
    _bootstrap: Option<Box<dyn Communicator>>,
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .field("launcher", &self.launch.launcher)
            .field("transport", &self.comm.transport())
            .field("gpu", &self.gpu)
            .finish()
    }
}

impl Cluster {
    /// One process alone: the sharded calls run as on one device.
    pub fn solo() -> Self {
        Cluster {
            comm: Box::new(Solo),
            launch: Launch::solo(),
            gpu: None,
            _bootstrap: None,
        }
    }

    /// Joins the job this process was launched into (`mpirun`, `torchrun`,
    /// `srun`, or none) with [`ClusterOptions::default`].
    pub fn from_env() -> Result<Self> {
        Self::new(ClusterOptions::default())
    }

    /// Joins the job this process was launched into.
    pub fn new(options: ClusterOptions) -> Result<Self> {
        let launch = Launch::from_env()?;
        if launch.size == 1 && options.transport == Transport::Auto {
            return Ok(Cluster {
                launch,
                ..Cluster::solo()
            });
        }
        match launch.launcher {
            Launcher::Mpi | Launcher::Solo => join_mpi(launch, &options),
            _ => join_nccl_tcp(launch, &options),
        }
    }

    /// A cluster over a communicator built elsewhere (an MPI communicator of
    /// the application's own, say); `gpu` is the device this rank uses.
    pub fn with_communicator(
        comm: Box<dyn Communicator>,
        launch: Launch,
        gpu: Option<usize>,
    ) -> Result<Self> {
        if comm.rank() != launch.rank || comm.size() != launch.size {
            return Err(Error::arg(
                "launch",
                format!(
                    "the communicator is rank {} of {} but the launch says rank {} of {}",
                    comm.rank(),
                    comm.size(),
                    launch.rank,
                    launch.size
                ),
            ));
        }
        Ok(Cluster {
            comm,
            launch,
            gpu,
            _bootstrap: None,
        })
    }

    /// The single-process mode: one cluster per GPU of this machine
    /// (`gpus` of them, `None`: all), joined by one `ncclCommInitAll`, rank
    /// `i` on GPU `i`. Each is meant for its own thread, which calls the
    /// sharded primitives exactly as a launched rank would;
    /// [`Cluster::run_local`] starts the threads. No launcher, no MPI, no
    /// rendezvous; the ranks share one process's CUDA driver.
    #[cfg(feature = "nccl")]
    pub fn local_gpus(gpus: Option<usize>, timeout: Duration) -> Result<Vec<Cluster>> {
        let count = gpu_for(0).and_then(|_| {
            cudarc::driver::CudaContext::device_count()
                .map(|n| n.max(0) as usize)
                .map_err(|e| {
                    Error::BackendUnavailable(format!("CUDA devices cannot be counted: {e}"))
                })
        })?;
        let n = gpus.unwrap_or(count);
        if n == 0 || n > count {
            return Err(Error::arg(
                "gpus",
                format!("{n} GPUs asked for, this machine has {count}"),
            ));
        }
        let ordinals: Vec<usize> = (0..n).collect();
        let comms = crate::nccl::NcclComm::local(&ordinals, timeout)?;
        Ok(comms
            .into_iter()
            .enumerate()
            .map(|(rank, comm)| Cluster {
                comm: Box::new(comm),
                launch: Launch {
                    launcher: Launcher::Threads,
                    rank,
                    size: n,
                    local_rank: rank,
                    local_size: Some(n),
                    master: None,
                },
                gpu: Some(rank),
                _bootstrap: None,
            })
            .collect())
    }

    /// Runs `f` once per GPU of [`Cluster::local_gpus`], each on its own
    /// thread with its rank's cluster, and returns the results in rank
    /// order. A rank that panics is reported as `RankFailed`; the others
    /// then see their collectives fail within `timeout`.
    #[cfg(feature = "nccl")]
    pub fn run_local<R: Send>(
        gpus: Option<usize>,
        timeout: Duration,
        f: impl Fn(&Cluster) -> R + Sync,
    ) -> Result<Vec<R>> {
        let clusters = Self::local_gpus(gpus, timeout)?;
        std::thread::scope(|scope| {
            let f = &f;
            let handles: Vec<_> = clusters
                .iter()
                .map(|c| {
                    std::thread::Builder::new()
                        .name(format!("trident-rank-{}", c.rank()))
                        .spawn_scoped(scope, move || f(c))
                })
                .collect();
            handles
                .into_iter()
                .enumerate()
                .map(|(rank, h)| {
                    h.map_err(Error::Io)?.join().map_err(|_| Error::RankFailed {
                        rank,
                        detail: "its thread panicked".into(),
                    })
                })
                .collect()
        })
    }

    /// This rank, `0..size()`.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }
    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.comm.size()
    }
    /// This rank among those of its machine.
    pub fn local_rank(&self) -> usize {
        self.launch.local_rank
    }
    /// How the job was launched.
    pub fn launch(&self) -> &Launch {
        &self.launch
    }
    /// The GPU this rank's NCCL communicator is on, if it has one.
    pub fn gpu(&self) -> Option<usize> {
        self.gpu
    }
    /// The communicator.
    pub fn comm(&self) -> &dyn Communicator {
        self.comm.as_ref()
    }
    /// Every rank's local backend (or why it has none): a rank that cannot
    /// run its backend (no GPU, no driver) makes this `BackendUnavailable`
    /// on every rank, any other failure `RankFailed` on the others, so no
    /// rank goes on into a call the others cannot join.
    pub fn require<B>(&self, backend: Result<B>) -> Result<B> {
        crate::sharded::settle(self.comm(), backend)
    }

    /// One line: launcher, transport, rank and size.
    pub fn describe(&self) -> String {
        format!(
            "rank {} of {} (launched by {}, {} transport{})",
            self.rank(),
            self.size(),
            self.launch.launcher,
            self.comm.transport(),
            self.gpu.map(|g| format!(", GPU {g}")).unwrap_or_default()
        )
    }
}

/// The GPU for `local_rank`: ranks of a machine take its GPUs in turn.
#[cfg(feature = "nccl")]
fn gpu_for(local_rank: usize) -> Result<usize> {
    // SAFETY: only asks whether libcuda can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::BackendUnavailable(
            "no CUDA driver on this machine".into(),
        ));
    }
    let count = cudarc::driver::CudaContext::device_count()
        .map_err(|e| Error::BackendUnavailable(format!("CUDA devices cannot be counted: {e}")))?;
    if count <= 0 {
        return Err(Error::BackendUnavailable(
            "no CUDA device on this machine".into(),
        ));
    }
    Ok(local_rank % count as usize)
}

/// NCCL runs one rank per GPU: more ranks on a machine than GPUs is
/// `BackendUnavailable` (MPI serves them instead under `Transport::Auto`).
#[cfg(feature = "nccl")]
fn own_gpu(launch: &Launch) -> Result<()> {
    let count = cudarc::driver::CudaContext::device_count()
        .unwrap_or(0)
        .max(0) as usize;
    match launch.local_size {
        Some(local) if local > count => Err(Error::BackendUnavailable(format!(
            "{local} ranks on this machine but {count} GPUs: NCCL needs a GPU per rank"
        ))),
        _ => Ok(()),
    }
}

#[cfg(feature = "mpi")]
fn join_mpi(launch: Launch, options: &ClusterOptions) -> Result<Cluster> {
    use crate::comm::ReduceOp;
    let mpi = crate::mpi::MpiComm::init()?;
    let launch = Launch {
        rank: mpi.rank(),
        size: mpi.size(),
        ..launch
    };
    let want_nccl = match options.transport {
        Transport::Mpi => false,
        Transport::Nccl => true,
        Transport::Auto => cfg!(feature = "nccl"),
    };
    if !want_nccl {
        return Ok(Cluster {
            comm: Box::new(mpi),
            launch,
            gpu: None,
            _bootstrap: None,
        });
    }
    // Every rank says whether it can run NCCL; all take the same road.
    #[cfg(feature = "nccl")]
    let mine = gpu_for(launch.local_rank)
        .and_then(|g| own_gpu(&launch).map(|()| g))
        .and_then(|g| crate::nccl::nccl_version().map(|_| g));
    #[cfg(not(feature = "nccl"))]
    let mine: Result<usize> = Err(Error::BackendUnavailable(
        "NCCL needs the `nccl` feature of trident-dist".into(),
    ));
    let mut can = [u64::from(mine.is_ok())];
    mpi.all_reduce_u64(&mut can, ReduceOp::Min)?;
    if can[0] == 0 {
        if options.transport == Transport::Auto {
            return Ok(Cluster {
                comm: Box::new(mpi),
                launch,
                gpu: None,
                _bootstrap: None,
            });
        }
        let why = match &mine {
            Err(e) => format!("rank {}: {e}", launch.rank),
            Ok(_) => "another rank has no usable GPU or NCCL".into(),
        };
        return Err(Error::BackendUnavailable(format!("NCCL transport: {why}")));
    }
    #[cfg(feature = "nccl")]
    {
        use crate::comm::CommExt;
        let gpu = mine?;
        let id = if launch.rank == 0 {
            Some(crate::nccl::unique_id()?)
        } else {
            None
        };
        let id = mpi.broadcast_vec(0, id.as_ref().map(|i| &i[..]))?;
        let id: crate::nccl::NcclId = id
            .try_into()
            .map_err(|_| Error::Backend("the NCCL id broadcast did not carry 128 bytes".into()))?;
        let nccl = crate::nccl::NcclComm::new(gpu, launch.rank, launch.size, id, options.timeout)?;
        Ok(Cluster {
            comm: Box::new(nccl),
            launch,
            gpu: Some(gpu),
            _bootstrap: Some(Box::new(mpi)),
        })
    }
    #[cfg(not(feature = "nccl"))]
    unreachable!("no rank can run NCCL without the feature")
}

#[cfg(not(feature = "mpi"))]
fn join_mpi(launch: Launch, options: &ClusterOptions) -> Result<Cluster> {
    if launch.launcher == Launcher::Mpi && options.transport != Transport::Nccl {
        return Err(Error::BackendUnavailable(
            "launched by mpirun, but this build of trident-dist lacks the `mpi` feature".into(),
        ));
    }
    join_nccl_tcp(launch, options)
}

#[cfg(feature = "nccl")]
fn join_nccl_tcp(launch: Launch, options: &ClusterOptions) -> Result<Cluster> {
    if options.transport == Transport::Mpi {
        return Err(Error::BackendUnavailable(format!(
            "MPI transport asked for, but the job was launched by {} (use mpirun)",
            launch.launcher
        )));
    }
    let Some((addr, master_port)) = launch.master.clone() else {
        return Err(Error::arg(
            "MASTER_ADDR",
            format!(
                "launched by {} without MASTER_ADDR and MASTER_PORT: rank 0's address is needed to hand out the NCCL id",
                launch.launcher
            ),
        ));
    };
    let gpu = gpu_for(launch.local_rank)?;
    own_gpu(&launch)?;
    let port = crate::rendezvous::port(master_port)?;
    let id = if launch.rank == 0 {
        let id = crate::nccl::unique_id()?;
        crate::rendezvous::serve(port, launch.size, &id, options.timeout)?;
        id
    } else {
        crate::rendezvous::fetch(&addr, port, launch.rank, launch.size, options.timeout)?
    };
    let nccl = crate::nccl::NcclComm::new(gpu, launch.rank, launch.size, id, options.timeout)?;
    Ok(Cluster {
        comm: Box::new(nccl),
        launch,
        gpu: Some(gpu),
        _bootstrap: None,
    })
}

#[cfg(not(feature = "nccl"))]
fn join_nccl_tcp(launch: Launch, _options: &ClusterOptions) -> Result<Cluster> {
    Err(Error::BackendUnavailable(format!(
        "launched by {} ({} ranks): GPU ranks need the `nccl` feature of trident-dist, CPU ranks MPI (mpirun and the `mpi` feature)",
        launch.launcher, launch.size
    )))
}
