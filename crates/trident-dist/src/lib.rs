//! # trident-dist
//!
//! One Trident call across several GPUs and several machines. Processes are
//! started by the launchers people already use (`mpirun`, `torchrun`,
//! `srun`); [`Cluster::from_env`] reads where this one stands and joins the
//! others over NCCL (GPU ranks, feature `nccl`) or MPI (CPU ranks, and the
//! bootstrap under `mpirun`, feature `mpi`). [`Sharded`] then runs the
//! primitives on partitioned inputs, each rank on its own device through
//! any local backend (grid cuts whole on rank 0's device, or by region
//! discharge over slabs on the host), and returns what docs/semantics.md
//! promises: for row partitions and grid cuts the same answer as one device.
//!
//! ```no_run
//! use trident_dist::{Cluster, Sharded, even_split};
//! use trident_core::{NearestPairs, Neighbor, Point};
//! # fn run(backend: &dyn trident_core::Primitives, a: Vec<Point<f32>>, b: Vec<Point<f32>>) -> trident_core::Result<()> {
//! let cluster = Cluster::from_env()?; // `mpirun -n 4 ./app`: rank 0..3
//! let mine = even_split(a.len(), cluster.size(), cluster.rank());
//! let sharded = Sharded::new(&cluster, backend);
//! let mut out = vec![Neighbor::default(); mine.len()];
//! sharded.nearest(&a[mine], &b, &mut out)?; // this rank's queries, B replicated
//! let closest = sharded.closest_pairs(&a[even_split(a.len(), cluster.size(), cluster.rank())], &b, 100)?;
//! # Ok(()) }
//! ```
//!
//! The communicator ([`Communicator`]) is a handful of collectives on host
//! buffers; the sharded algorithms are written once over it. Backends know
//! nothing of it.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod cluster;
pub mod comm;
mod dense_gemm;
mod grid;
pub mod launch;
mod max_flow;
#[cfg(feature = "mpi")]
pub mod mpi;
#[cfg(feature = "nccl")]
pub mod nccl;
mod nearest_pairs;
#[cfg(feature = "nccl")]
mod rendezvous;
mod resident;
mod sharded;
mod sparse_coder;
mod sparse_gemm;

pub use cluster::{Cluster, ClusterOptions, Transport};
pub use comm::{CommExt, Communicator, DeviceLink, DeviceRegion, ReduceOp, Solo};
pub use grid::Grid2d;
pub use launch::{Launch, Launcher};
pub use sharded::{ShardCoord, ShardScalar, Sharded, digest, even_split, split_by_work};
pub use sparse_gemm::{column_block, row_block, row_work};
