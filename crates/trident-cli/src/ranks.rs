//! Commands run as one rank of several (`mpirun -n 4 trident pairs ...`,
//! `torchrun --no-python`, `srun`): the launch comes from the environment,
//! each rank computes its part on its own device, rank 0 writes the output.

use crate::Ctx;
use crate::fail::{CliResult, Fail};

/// The coordinate types a rank can shard (f32, f64): `ShardCoord` with
/// the `dist` feature, any coordinate without it.
#[cfg(feature = "dist")]
pub trait RankCoord: trident::dist::ShardCoord {}
#[cfg(feature = "dist")]
impl<T: trident::dist::ShardCoord> RankCoord for T {}
/// The coordinate types a rank can shard (any, without the `dist` feature).
#[cfg(not(feature = "dist"))]
pub trait RankCoord: trident::Coord {}
#[cfg(not(feature = "dist"))]
impl<T: trident::Coord> RankCoord for T {}

/// The scalar types a rank can shard (f32, f64): `ShardScalar` with the
/// `dist` feature, any scalar without it.
#[cfg(feature = "dist")]
pub trait RankScalar: trident::dist::ShardScalar {}
#[cfg(feature = "dist")]
impl<T: trident::dist::ShardScalar> RankScalar for T {}
/// The scalar types a rank can shard (any, without the `dist` feature).
#[cfg(not(feature = "dist"))]
pub trait RankScalar: trident::Scalar {}
#[cfg(not(feature = "dist"))]
impl<T: trident::Scalar> RankScalar for T {}

/// The cluster, when this process is one rank of several; `None` alone.
#[cfg(feature = "dist")]
pub fn launched() -> CliResult<Option<trident::dist::Cluster>> {
    let launch =
        trident::dist::Launch::from_env().map_err(|e| Fail::Usage(format!("launch: {e}")))?;
    if launch.size <= 1 {
        return Ok(None);
    }
    trident::dist::Cluster::from_env()
        .map(Some)
        .map_err(|e| Fail::Failed(format!("cluster: {e}")))
}

/// This rank's engine: the backend named by `--backend`, or the best one
/// here, on the rank's own GPU.
#[cfg(feature = "dist")]
pub fn engine(ctx: &Ctx, cluster: &trident::dist::Cluster) -> CliResult<trident::Trident> {
    let device = cluster.gpu().unwrap_or(cluster.local_rank());
    match &ctx.backend {
        Some(name) => {
            let kind = trident::BackendKind::from_name(name)
                .ok_or_else(|| Fail::Usage(format!("unknown backend {name:?}")))?;
            let b = cluster
                .require(trident::backend_on(kind, device))
                .map_err(|e| Fail::Failed(format!("backend: {e}")))?;
            trident::Trident::with_backends(vec![b])
                .map_err(|e| Fail::Failed(format!("backend: {e}")))
        }
        None => Ok(trident::Trident::on_device(device)),
    }
}

/// The cluster this process is a rank of (`None` alone) and the engine it
/// computes on: one rank's own GPU, or the usual choice.
#[cfg(feature = "dist")]
pub fn setup(ctx: &Ctx) -> CliResult<(Option<trident::dist::Cluster>, trident::Trident)> {
    let cluster = launched()?;
    let engine = match &cluster {
        Some(c) => engine(ctx, c)?,
        None => ctx.engine()?,
    };
    Ok((cluster, engine))
}

/// The engine, after refusing a launch as one of several ranks.
#[cfg(not(feature = "dist"))]
pub fn setup(ctx: &Ctx) -> CliResult<(Option<std::convert::Infallible>, trident::Trident)> {
    refuse_ranks(ctx)?;
    Ok((None, ctx.engine()?))
}

/// What a rank other than 0 reports: it wrote nothing.
#[cfg(feature = "dist")]
pub fn quiet(cluster: &trident::dist::Cluster) -> crate::Outcome {
    crate::Outcome {
        text: String::new(),
        json: serde_json::json!({"ok": true, "rank": cluster.rank()}),
        ok: true,
    }
}

/// Without the `dist` feature, a process started as one of several ranks
/// would run the whole command and write the same file as every other rank:
/// refused, saying which build does it.
#[cfg(not(feature = "dist"))]
fn refuse_ranks(_ctx: &Ctx) -> CliResult<()> {
    for var in [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "WORLD_SIZE",
        "SLURM_STEP_NUM_TASKS",
    ] {
        if let Some(n) = std::env::var(var)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            && n > 1
        {
            return Err(Fail::Usage(format!(
                "launched as one of {n} ranks ({var}), but this build of trident lacks the `dist` \
                 feature: build it with --features mpi (or nccl) to cut the work across ranks"
            )));
        }
    }
    Ok(())
}
