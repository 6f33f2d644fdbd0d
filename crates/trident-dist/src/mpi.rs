//! [`Communicator`] over MPI (rsmpi): the transport of CPU clusters, and the
//! bootstrap that hands the NCCL id to GPU ranks started by `mpirun`.
//!
//! Faults: MPI's default error handler aborts the job, and `mpirun` ends
//! every rank when one of them dies or aborts, so a lost rank ends the job
//! with an error within the launcher's detection time instead of hanging. A
//! rank that panics aborts the job as it unwinds (a finalise there would
//! wait for the ranks that wait for it).

use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};

use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::{Communicator as _, CommunicatorCollectives, Destination, Root, Source};
use trident_core::{Error, Result};

use crate::comm::{Communicator, ReduceOp, check_place, check_rank, split_place};

/// MPI counts are `int`: messages go in pieces of at most this many bytes.
const PIECE: usize = 1 << 30;

/// An MPI communicator of this process: the world, or a group split from
/// it ([`Communicator::split`]).
pub struct MpiComm {
    // Used only while `env.lock` is held; dropped before `env`, so a split
    // communicator is freed before MPI is finalised.
    comm: ManuallyDrop<SimpleCommunicator>,
    env: Arc<Env>,
    rank: usize,
    size: usize,
}

/// MPI itself, shared by the world and every communicator split from it:
/// one lock, so that no two threads are ever inside MPI at once whichever
/// communicator they use, and the universe, which finalises MPI when the
/// last communicator goes.
struct Env {
    lock: Mutex<()>,
    _universe: Universe,
}

// SAFETY: MPI is initialised with at least `Threading::Serialized` (checked
// in `MpiComm::init`), and every call into MPI, the communicators' and the
// finalisation (run by the last owner alone), happens under `Env::lock` or
// with no other owner left, so no two threads are ever inside MPI at once.
// The handles are plain values MPI lets any thread use under that level.
unsafe impl Send for Env {}
unsafe impl Sync for Env {}
unsafe impl Send for MpiComm {}
unsafe impl Sync for MpiComm {}

impl Drop for MpiComm {
    fn drop(&mut self) {
        let _serial = self.env.lock.lock().unwrap_or_else(|p| p.into_inner());
        // A rank unwinding from a panic aborts the job: freeing a split
        // communicator or finalising would wait for ranks that wait for
        // this one.
        if std::thread::panicking() {
            self.comm.abort(70);
        }
        // SAFETY: dropped once, here (frees a split communicator; the
        // world's handle needs no freeing).
        unsafe { ManuallyDrop::drop(&mut self.comm) };
    }
}

impl MpiComm {
    /// Initialises MPI (once per process: MPI cannot be started again after
    /// it is finalised, which happens when this value and every
    /// communicator split from it are dropped).
    pub fn init() -> Result<Self> {
        let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Serialized)
            .ok_or_else(|| {
                Error::BackendUnavailable(
                    "MPI was initialised already in this process (one Cluster per process)".into(),
                )
            })?;
        if level < mpi::Threading::Serialized {
            return Err(Error::BackendUnavailable(format!(
                "the MPI library offers thread level {level:?}; Trident needs Serialized"
            )));
        }
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        Ok(MpiComm {
            comm: ManuallyDrop::new(world),
            env: Arc::new(Env {
                lock: Mutex::new(()),
                _universe: universe,
            }),
            rank,
            size,
        })
    }

    fn with<R>(&self, f: impl FnOnce(&SimpleCommunicator) -> R) -> Result<R> {
        let _serial =
            self.env.lock.lock().map_err(|_| {
                Error::Backend("an MPI call panicked earlier in this process".into())
            })?;
        Ok(f(&self.comm))
    }
}

fn op(op: ReduceOp) -> SystemOperation {
    match op {
        ReduceOp::Sum => SystemOperation::sum(),
        ReduceOp::Min => SystemOperation::min(),
        ReduceOp::Max => SystemOperation::max(),
    }
}

impl Communicator for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn transport(&self) -> &'static str {
        "mpi"
    }
    fn barrier(&self) -> Result<()> {
        self.with(|w| w.barrier())
    }
    fn broadcast(&self, root: usize, buf: &mut [u8]) -> Result<()> {
        check_rank("root", root, self.size)?;
        self.with(|w| {
            let root = w.process_at_rank(root as i32);
            for piece in buf.chunks_mut(PIECE) {
                root.broadcast_into(piece);
            }
        })
    }
    fn all_reduce_u64(&self, buf: &mut [u64], o: ReduceOp) -> Result<()> {
        self.with(|w| {
            for piece in buf.chunks_mut(PIECE / 8) {
                let send = piece.to_vec();
                w.all_reduce_into(&send[..], piece, op(o));
            }
        })
    }
    fn all_reduce_f64(&self, buf: &mut [f64], o: ReduceOp) -> Result<()> {
        self.with(|w| {
            for piece in buf.chunks_mut(PIECE / 8) {
                let send = piece.to_vec();
                w.all_reduce_into(&send[..], piece, op(o));
            }
        })
    }
    fn shift(&self, send: &[u8], to: usize, recv: &mut [u8], from: usize) -> Result<()> {
        check_rank("to", to, self.size)?;
        check_rank("from", from, self.size)?;
        self.with(|w| {
            let (dst, src) = (w.process_at_rank(to as i32), w.process_at_rank(from as i32));
            // Every piece is posted as a non-blocking send before any receive
            // waits, so no order of arrival can deadlock the ring.
            mpi::request::scope(|scope| {
                let sends: Vec<_> = send
                    .chunks(PIECE)
                    .map(|piece| dst.immediate_send(scope, piece))
                    .collect();
                for piece in recv.chunks_mut(PIECE) {
                    src.receive_into(piece);
                }
                for request in sends {
                    request.wait();
                }
            });
        })
    }
    fn split(&self, color: usize, key: usize) -> Result<Box<dyn Communicator>> {
        let want = split_place(self, color, key)?;
        // Both fit an int: `split_place` checked every rank's.
        let (color, key) = (color as i32, key as i32);
        let comm = self
            .with(|w| {
                w.split_by_color_with_key(Color::with_value(color), key)
                    .map(|c| {
                        let place = (c.rank() as usize, c.size() as usize);
                        (c, place)
                    })
            })?
            .ok_or_else(|| Error::Backend("MPI_Comm_split gave no communicator".into()))?;
        let (comm, got) = comm;
        let child = MpiComm {
            comm: ManuallyDrop::new(comm),
            env: self.env.clone(),
            rank: got.0,
            size: got.1,
        };
        check_place(got, want)?;
        Ok(Box::new(child))
    }
}
