//! Who launched this process, read from the environment the launchers people
//! already use set: `mpirun` (OpenMPI's `OMPI_COMM_WORLD_*`, MPICH's
//! `PMI_*`), `torchrun` (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`,
//! `LOCAL_WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`) and Slurm's `srun`
//! (`SLURM_PROCID`, `SLURM_STEP_NUM_TASKS`, `SLURM_LOCALID`,
//! `SLURM_NTASKS_PER_NODE`).
//! Parsing is a pure function of the variables, so every rule is tested
//! without launching anything.

use std::fmt;

use trident_core::{Error, Result};

/// The program that started the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Launcher {
    /// No launcher: one process, one rank.
    Solo,
    /// `mpirun` / `mpiexec` (OpenMPI or an MPICH-style process manager).
    Mpi,
    /// `torchrun` (or any launcher that sets its variables).
    Torchrun,
    /// Slurm's `srun`.
    Slurm,
    /// No launcher: one process drives every local GPU, one thread per rank
    /// (`Cluster::local_gpus`, feature `nccl`).
    Threads,
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Launcher::Solo => "none (one process)",
            Launcher::Mpi => "mpirun",
            Launcher::Torchrun => "torchrun",
            Launcher::Threads => "one process, a thread per GPU",
            Launcher::Slurm => "srun",
        })
    }
}

/// This process's place in the job, as its launcher describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Who started the ranks.
    pub launcher: Launcher,
    /// This rank, `0..size`.
    pub rank: usize,
    /// Number of ranks.
    pub size: usize,
    /// This rank among the ranks of its machine: the GPU it takes.
    pub local_rank: usize,
    /// Ranks on this machine, where the launcher says.
    pub local_size: Option<usize>,
    /// Where rank 0 listens for the NCCL id when no MPI carries it
    /// (`MASTER_ADDR`, `MASTER_PORT`).
    pub master: Option<(String, u16)>,
}

impl Launch {
    /// One process alone.
    pub fn solo() -> Self {
        Launch {
            launcher: Launcher::Solo,
            rank: 0,
            size: 1,
            local_rank: 0,
            local_size: Some(1),
            master: None,
        }
    }

    /// From this process's environment.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// From the variables `var` returns (`None`: not set). MPI's variables
    /// win over torchrun's, torchrun's over Slurm's (an `srun` that starts
    /// `torchrun` or `mpirun` leaves its own variables set beneath theirs);
    /// where two launchers' variables are both set they must agree.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let get = |name: &'static str| -> Result<Option<usize>> {
            match var(name) {
                None => Ok(None),
                Some(v) => v.trim().parse::<usize>().map(Some).map_err(|_| {
                    Error::arg(
                        name,
                        format!("{v:?} is not a non-negative integer (set by the launcher)"),
                    )
                }),
            }
        };
        let master = || -> Result<Option<(String, u16)>> {
            match (var("MASTER_ADDR"), var("MASTER_PORT")) {
                (Some(addr), Some(port)) => {
                    let port = port.trim().parse::<u16>().map_err(|_| {
                        Error::arg("MASTER_PORT", format!("{port:?} is not a port number"))
                    })?;
                    Ok(Some((addr, port)))
                }
                (Some(_), None) => Err(Error::arg(
                    "MASTER_PORT",
                    "MASTER_ADDR is set but MASTER_PORT is not",
                )),
                (None, Some(_)) => Err(Error::arg(
                    "MASTER_ADDR",
                    "MASTER_PORT is set but MASTER_ADDR is not",
                )),
                (None, None) => Ok(None),
            }
        };

        let mpi = match (get("OMPI_COMM_WORLD_RANK")?, get("OMPI_COMM_WORLD_SIZE")?) {
            (Some(rank), Some(size)) => Some(Launch {
                launcher: Launcher::Mpi,
                rank,
                size,
                local_rank: get("OMPI_COMM_WORLD_LOCAL_RANK")?.unwrap_or(0),
                local_size: get("OMPI_COMM_WORLD_LOCAL_SIZE")?,
                master: None,
            }),
            (Some(_), None) => return Err(missing("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")),
            (None, Some(_)) => return Err(missing("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")),
            (None, None) => match (get("PMI_RANK")?, get("PMI_SIZE")?) {
                (Some(rank), Some(size)) => Some(Launch {
                    launcher: Launcher::Mpi,
                    rank,
                    size,
                    local_rank: get("MPI_LOCALRANKID")?.unwrap_or(0),
                    local_size: get("MPI_LOCALNRANKS")?,
                    master: None,
                }),
                _ => None,
            },
        };
        let torchrun = match (get("RANK")?, get("WORLD_SIZE")?) {
            (Some(rank), Some(size)) => Some(Launch {
                launcher: Launcher::Torchrun,
                rank,
                size,
                local_rank: get("LOCAL_RANK")?.unwrap_or(0),
                local_size: get("LOCAL_WORLD_SIZE")?,
                master: master()?,
            }),
            (Some(_), None) => return Err(missing("WORLD_SIZE", "RANK")),
            (None, Some(_)) => return Err(missing("RANK", "WORLD_SIZE")),
            (None, None) => None,
        };
        // SLURM_STEP_NUM_TASKS, not SLURM_NTASKS: a batch script sees the
        // allocation's task count without being one task of an srun step.
        let slurm = match (get("SLURM_PROCID")?, get("SLURM_STEP_NUM_TASKS")?) {
            (Some(rank), Some(size)) => Some(Launch {
                launcher: Launcher::Slurm,
                rank,
                size,
                local_rank: get("SLURM_LOCALID")?.unwrap_or(0),
                // "4" or "4(x2)" or "4,2": only a plain number is one count.
                local_size: var("SLURM_NTASKS_PER_NODE").and_then(|v| v.trim().parse().ok()),
                master: master()?,
            }),
            _ => None,
        };

        let mut found = [mpi, torchrun, slurm].into_iter().flatten();
        let Some(launch) = found.next() else {
            return Ok(Launch::solo());
        };
        for other in found {
            // An srun step that runs one torchrun or mpirun per node has other
            // counts beneath; only a disagreement within the same job counts.
            if other.size == launch.size && other.rank != launch.rank {
                return Err(Error::arg(
                    "rank",
                    format!(
                        "{} says rank {} but {} says rank {} of the same {} ranks",
                        launch.launcher, launch.rank, other.launcher, other.rank, launch.size
                    ),
                ));
            }
        }
        launch.check()?;
        Ok(launch)
    }

    /// The counts are consistent: a rank inside its world, a local rank
    /// inside its machine.
    fn check(&self) -> Result<()> {
        if self.size == 0 {
            return Err(Error::arg(
                "size",
                format!("{} says 0 ranks", self.launcher),
            ));
        }
        if self.rank >= self.size {
            return Err(Error::arg(
                "rank",
                format!(
                    "{} says rank {} of {} ranks",
                    self.launcher, self.rank, self.size
                ),
            ));
        }
        if let Some(local) = self.local_size
            && (self.local_rank >= local || local > self.size)
        {
            return Err(Error::arg(
                "local_rank",
                format!(
                    "{} says local rank {} of {} local ranks in a world of {}",
                    self.launcher, self.local_rank, local, self.size
                ),
            ));
        }
        Ok(())
    }
}

fn missing(absent: &'static str, present: &str) -> Error {
    Error::arg(
        absent,
        format!("{present} is set but {absent} is not: an incomplete launch environment"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn launch(vars: &[(&str, &str)]) -> Result<Launch> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Launch::from_vars(|n| map.get(n).cloned())
    }

    #[test]
    fn no_launcher_is_one_rank() {
        assert_eq!(launch(&[]).unwrap(), Launch::solo());
    }

    #[test]
    fn each_launcher_is_read() {
        let l = launch(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ])
        .unwrap();
        assert_eq!(
            (l.launcher, l.rank, l.size, l.local_rank, l.local_size),
            (Launcher::Mpi, 2, 4, 0, Some(2))
        );

        let l = launch(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "2"),
            ("MASTER_ADDR", "10.0.0.1"),
            ("MASTER_PORT", "29500"),
        ])
        .unwrap();
        assert_eq!(l.launcher, Launcher::Torchrun);
        assert_eq!(l.master, Some(("10.0.0.1".into(), 29500)));

        let l = launch(&[
            ("SLURM_PROCID", "5"),
            ("SLURM_STEP_NUM_TASKS", "8"),
            ("SLURM_LOCALID", "1"),
            ("SLURM_NTASKS_PER_NODE", "4(x2)"),
        ])
        .unwrap();
        assert_eq!(
            (l.launcher, l.rank, l.local_rank, l.local_size),
            (Launcher::Slurm, 5, 1, None)
        );
    }

    #[test]
    fn a_batch_script_outside_an_srun_step_is_one_rank() {
        let l = launch(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_ID", "7"),
        ])
        .unwrap();
        assert_eq!(l, Launch::solo());
    }

    #[test]
    fn mpi_inside_slurm_takes_mpi_and_checks_agreement() {
        let l = launch(&[
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("SLURM_PROCID", "3"),
            ("SLURM_STEP_NUM_TASKS", "4"),
        ])
        .unwrap();
        assert_eq!(l.launcher, Launcher::Mpi);
        let e = launch(&[
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("SLURM_PROCID", "1"),
            ("SLURM_STEP_NUM_TASKS", "4"),
        ])
        .unwrap_err();
        assert!(
            e.to_string().contains("rank 3") && e.to_string().contains("rank 1"),
            "{e}"
        );
    }

    #[test]
    fn incomplete_or_inconsistent_environments_name_the_variable() {
        for (vars, field) in [
            (&[("RANK", "0")][..], "WORLD_SIZE"),
            (&[("WORLD_SIZE", "2")][..], "RANK"),
            (&[("RANK", "x"), ("WORLD_SIZE", "2")][..], "RANK"),
            (&[("RANK", "2"), ("WORLD_SIZE", "2")][..], "rank"),
            (&[("RANK", "0"), ("WORLD_SIZE", "0")][..], "size"),
            (
                &[
                    ("RANK", "0"),
                    ("WORLD_SIZE", "2"),
                    ("LOCAL_RANK", "2"),
                    ("LOCAL_WORLD_SIZE", "2"),
                ][..],
                "local_rank",
            ),
            (
                &[("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "h")][..],
                "MASTER_PORT",
            ),
            (
                &[
                    ("RANK", "0"),
                    ("WORLD_SIZE", "2"),
                    ("MASTER_ADDR", "h"),
                    ("MASTER_PORT", "99999"),
                ][..],
                "MASTER_PORT",
            ),
            (&[("OMPI_COMM_WORLD_RANK", "0")][..], "OMPI_COMM_WORLD_SIZE"),
        ] {
            match launch(vars) {
                Err(Error::InvalidArgument { field: f, .. }) => assert_eq!(f, field, "{vars:?}"),
                other => panic!("{vars:?}: {other:?}"),
            }
        }
    }
}
