//! NCCL on real GPUs: two (or four) processes started the way torchrun
//! starts them (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`,
//! `MASTER_PORT`), each on its own GPU, the id handed over by the TCP
//! rendezvous. Skipped (with a message) on a machine with fewer GPUs than
//! the test's ranks or no NCCL, unless `TRIDENT_REQUIRE_BACKENDS` names
//! `nccl`, where that is a failure.
#![cfg(feature = "nccl")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use trident_core::{CsrMatrix, DenseGemm, GemmParams, MatMut, MatRef, SparseGemm};
use trident_dist::{
    Cluster, ClusterOptions, CommExt, Grid2d, ReduceOp, Sharded, Transport, column_block, row_block,
};

const CHILD: &str = "TRIDENT_DIST_TEST_CHILD";

fn gpus() -> usize {
    // SAFETY: only asks whether libcuda can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return 0;
    }
    cudarc::driver::CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
}

/// `true` when the test can run on `n` GPUs; `false` (after saying why)
/// when it skips.
fn gpus_or_skip(n: usize) -> bool {
    let required = std::env::var("TRIDENT_REQUIRE_BACKENDS")
        .is_ok_and(|v| v.split(',').any(|b| b.trim() == "nccl"));
    let why = if gpus() < n {
        Some(format!("{} GPU(s) here, {n} needed", gpus()))
    } else {
        trident_dist::nccl::nccl_version()
            .err()
            .map(|e| e.to_string())
    };
    match why {
        None => true,
        Some(why) if required => panic!("nccl is required but cannot run: {why}"),
        Some(why) => {
            eprintln!("SKIPPED: {why}");
            false
        }
    }
}

/// Starts child test `name` as ranks `0..n`; their exit statuses and output.
fn launch(name: &str, n: usize, port: u16, limit: Duration) -> Vec<(bool, String)> {
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..n)
        .map(|rank| {
            Command::new(&exe)
                .args([
                    "--exact",
                    name,
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD, "1")
                .env("RANK", rank.to_string())
                .env("LOCAL_RANK", rank.to_string())
                .env("WORLD_SIZE", n.to_string())
                .env("LOCAL_WORLD_SIZE", n.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let start = Instant::now();
    children
        .into_iter()
        .map(|mut c| {
            while c.try_wait().unwrap().is_none() {
                if start.elapsed() > limit {
                    c.kill().ok();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let out = c.wait_with_output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.success(), text)
        })
        .collect()
}

fn join(timeout: Duration) -> Cluster {
    Cluster::new(ClusterOptions {
        transport: Transport::Nccl,
        timeout,
    })
    .unwrap()
}

#[test]
fn nccl_collectives_on_two_gpus() {
    if !gpus_or_skip(2) {
        return;
    }
    for (ok, text) in launch("child_collectives", 2, 29_611, Duration::from_secs(180)) {
        assert!(ok && text.contains("child_collectives: ok"), "{text}");
    }
}

#[test]
#[ignore = "a rank of nccl_collectives_on_two_gpus"]
fn child_collectives() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let cluster = join(Duration::from_secs(60));
    let (rank, comm) = (cluster.rank(), cluster.comm());
    assert_eq!(
        (comm.transport(), comm.size()),
        ("nccl", 2),
        "{}",
        cluster.describe()
    );
    assert_eq!(cluster.gpu(), Some(rank));
    // More than one staging piece, and a length that is not a multiple of it.
    let big: Vec<u32> = (0..40_000_123u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let got = comm
        .broadcast_vec(0, (rank == 0).then_some(&big[..]))
        .unwrap();
    assert!(got == big, "broadcast differs");
    let mut s = vec![rank as u64 + 1; 1000];
    comm.all_reduce_u64(&mut s, ReduceOp::Sum).unwrap();
    assert!(s.iter().all(|&x| x == 3));
    let mut m = vec![rank as f64 - 0.5; 7];
    comm.all_reduce_f64(&mut m, ReduceOp::Min).unwrap();
    assert!(m.iter().all(|&x| x == -0.5));
    // Uneven ring shifts, one of them empty.
    let mine: Vec<u8> = vec![rank as u8 + 7; if rank == 0 { 100_000_001 } else { 0 }];
    let from_other = comm.ring_shift(&mine).unwrap();
    assert_eq!(from_other.len(), if rank == 0 { 0 } else { 100_000_001 });
    assert!(from_other.iter().all(|&b| b == 7));
    let all = comm
        .all_gather_vec(&vec![rank as u16; rank * 3 + 1])
        .unwrap();
    assert_eq!(all, vec![vec![0u16], vec![1, 1, 1, 1]]);
    comm.barrier().unwrap();
    println!("child_collectives: ok");
}

#[test]
fn a_dead_peer_is_an_error_within_the_timeout() {
    if !gpus_or_skip(2) {
        return;
    }
    let out = launch("child_peer_dies", 2, 29_621, Duration::from_secs(120));
    let (ok0, text0) = &out[0];
    assert!(
        *ok0 && text0.contains("child_peer_dies: rank 0 got an error"),
        "{text0}"
    );
    assert!(out[1].1.contains("rank 1 leaves"), "{}", out[1].1);
}

#[test]
#[ignore = "a rank of a_dead_peer_is_an_error_within_the_timeout"]
fn child_peer_dies() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let cluster = join(Duration::from_secs(10));
    if cluster.rank() == 1 {
        println!("rank 1 leaves");
        std::process::exit(0);
    }
    let start = Instant::now();
    let mut data = vec![0u8; 1 << 20];
    // Rank 1 never joins this broadcast: NCCL waits, our poll gives up.
    let e = cluster.comm().broadcast(1, &mut data).unwrap_err();
    // The communicator is aborted: later calls fail at once.
    assert!(cluster.comm().barrier().is_err());
    println!(
        "child_peer_dies: rank 0 got an error after {:?}: {e}",
        start.elapsed()
    );
}

/// `gemm_summa` over the grid's NCCL row and column communicators (rayon
/// computes each rank's blocks): within the GEMM tolerance of one device.
fn summa_over_nccl(cluster: &Cluster, grid: &Grid2d) {
    let (m, n, k) = (45, 38, 51);
    let val = |i: usize, s: usize| ((i * 7919 + s) % 1000) as f64 / 1000.0 - 0.5;
    let a: Vec<f64> = (0..m * k).map(|i| val(i, 1)).collect();
    let b: Vec<f64> = (0..k * n).map(|i| val(i, 2)).collect();
    let c0: Vec<f64> = (0..m * n).map(|i| val(i, 3)).collect();
    let params = GemmParams {
        alpha: 1.25,
        beta: -0.5,
        ..GemmParams::default()
    };
    let backend = trident_rayon::RayonBackend::new().unwrap();
    let mut one = c0.clone();
    backend
        .gemm(
            &params,
            MatRef::dense(&a, m, k).unwrap(),
            MatRef::dense(&b, k, n).unwrap(),
            MatMut::dense(&mut one, m, n).unwrap(),
        )
        .unwrap();
    let cut =
        |x: &[f64], ld: usize, rows: std::ops::Range<usize>, cols: &std::ops::Range<usize>| {
            rows.flat_map(|r| x[r * ld + cols.start..r * ld + cols.end].to_vec())
                .collect::<Vec<f64>>()
        };
    let ((rows, kc), (kr, cols)) = (grid.block(m, k), grid.block(k, n));
    let (a_blk, b_blk) = (cut(&a, k, rows.clone(), &kc), cut(&b, n, kr.clone(), &cols));
    let mut c_blk = cut(&c0, n, rows.clone(), &cols);
    Sharded::new(cluster, &backend)
        .gemm_summa(
            grid,
            &params,
            (m, n, k),
            MatRef::dense(&a_blk, rows.len(), kc.len()).unwrap(),
            MatRef::dense(&b_blk, kr.len(), cols.len()).unwrap(),
            MatMut::dense(&mut c_blk, rows.len(), cols.len()).unwrap(),
        )
        .unwrap();
    let want = cut(&one, n, rows.clone(), &cols);
    let err: Vec<f64> = c_blk.iter().zip(&want).map(|(x, y)| x - y).collect();
    let tol = trident_testkit::check::gemm_tol::<f64>(trident_core::Precision::Strict);
    let (e, r) = (
        trident_core::tol::norm2(&err),
        trident_core::tol::norm2(&want),
    );
    assert!(
        e <= tol.bound(r),
        "gemm_summa block off by {e:e} (norm {r:e})"
    );

    // Sparse: banded A and B, so that every block and panel has entries.
    let band = |rows: usize, cols: usize, s: usize| {
        let trip: Vec<(u32, u32, f64)> = (0..rows)
            .flat_map(|i| {
                (0..cols)
                    .filter(move |&j| j.abs_diff(i) % 5 == 0)
                    .map(move |j| (i, j))
            })
            .map(|(i, j)| (i as u32, j as u32, val(i * cols + j, s)))
            .collect();
        CsrMatrix::from_triplets(rows, cols, &trip).unwrap()
    };
    let (sa, sb) = (band(m, k, 4), band(k, n, 5));
    let one = backend.spgemm(&sa, &sb).unwrap();
    let ((rows, kc), (kr, cols)) = (grid.block(m, k), grid.block(k, n));
    let a_blk = column_block(&row_block(&sa, rows.clone()).unwrap(), kc).unwrap();
    let b_blk = column_block(&row_block(&sb, kr).unwrap(), cols.clone()).unwrap();
    let got = Sharded::new(cluster, &backend)
        .spgemm_summa(grid, (m, n, k), &a_blk, &b_blk)
        .unwrap();
    let want = column_block(&row_block(&one, rows).unwrap(), cols).unwrap();
    assert_eq!(
        (got.offsets(), got.indices()),
        (want.offsets(), want.indices())
    );
    for (x, y) in got.values().iter().zip(want.values()) {
        assert!((x - y).abs() <= 1e-12 * k as f64, "spgemm_summa {x} vs {y}");
    }
}

#[test]
fn nccl_split_communicators_and_summa_on_four_gpus() {
    if !gpus_or_skip(4) {
        return;
    }
    for (ok, text) in launch("child_split", 4, 29_631, Duration::from_secs(240)) {
        assert!(ok && text.contains("child_split: ok"), "{text}");
    }
}

#[test]
#[ignore = "a rank of nccl_split_communicators_and_summa_on_four_gpus"]
fn child_split() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let cluster = join(Duration::from_secs(60));
    let (rank, comm) = (cluster.rank(), cluster.comm());
    assert_eq!((comm.transport(), comm.size()), ("nccl", 4));
    // Two rows of two; in row 1 the keys reverse the parent order.
    let key = if rank < 2 { rank } else { 10 - rank };
    let row = comm.split(rank / 2, key).unwrap();
    assert_eq!((row.transport(), row.size()), ("nccl", 2));
    assert_eq!(row.rank(), if rank < 2 { rank } else { 3 - rank });
    // A broadcast inside each group stays inside it (more than one staging
    // piece), and the parent is still usable between.
    let big: Vec<u32> = (0..20_000_017u32).map(|i| i ^ rank as u32).collect();
    let got = row
        .broadcast_vec(0, (row.rank() == 0).then_some(&big[..]))
        .unwrap();
    let root = if rank < 2 { 0u32 } else { 3 };
    assert!(got.iter().enumerate().all(|(i, &x)| x == i as u32 ^ root));
    comm.barrier().unwrap();
    let mut sum = [rank as u64];
    row.all_reduce_u64(&mut sum, ReduceOp::Sum).unwrap();
    assert_eq!(sum, [if rank < 2 { 1 } else { 5 }]);
    let from = row.ring_shift(&vec![rank as u8; rank + 1]).unwrap();
    let other = [1, 0, 3, 2][rank];
    assert_eq!(from, vec![other as u8; other + 1]);
    let g = Grid2d::square(comm).unwrap();
    assert_eq!((g.shape(), g.pos()), ((2, 2), (rank / 2, rank % 2)));
    let top = g
        .col_comm()
        .broadcast_vec(0, (rank < 2).then_some(&[rank as u32][..]))
        .unwrap();
    assert_eq!(top, [(rank % 2) as u32]);
    summa_over_nccl(&cluster, &g);
    drop(row);
    comm.barrier().unwrap();
    println!("child_split: ok");
}

#[test]
fn resident_calls_equal_host_calls_on_two_gpus() {
    if !gpus_or_skip(2) {
        return;
    }
    for (ok, text) in launch("child_resident", 2, 29_641, Duration::from_secs(240)) {
        assert!(ok && text.contains("child_resident: ok"), "{text}");
    }
}

#[test]
#[ignore = "a rank of resident_calls_equal_host_calls_on_two_gpus"]
fn child_resident() {
    use trident_core::{
        DeviceMat, DeviceMemory, GemmParams, MatMut, MatRef, NearestIndexDevice, SparseCoderDevice,
        SparseGemmDevice,
    };
    use trident_dist::{Sharded, even_split};
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let cluster = join(Duration::from_secs(60));
    let (rank, size) = (cluster.rank(), cluster.size());
    let dev = trident_cuda::CudaBackend::new(rank).unwrap();
    let s = Sharded::new(&cluster, &dev);
    let seed = trident_testkit::DEFAULT_SEED;

    // Closest pairs: A's rows cut, B replicated.
    let c = trident_testkit::nearest_pairs::generate::pairs_uniform(60_001, 30_000, seed);
    let a = &c.a[even_split(c.a.len(), size, rank)];
    let host = s.closest_pairs(a, &c.b, 100).unwrap();
    let (da, db) = (dev.upload(a).unwrap(), dev.upload(&c.b).unwrap());
    assert_eq!(s.closest_pairs_resident(&dev, &da, &db, 100).unwrap(), host);
    // And against B's index, built once and kept: twice, with B's buffer gone.
    let index = dev.index_points(&db).unwrap();
    drop(db);
    for _ in 0..2 {
        assert_eq!(
            s.closest_pairs_indexed(&dev, &da, &index, 100).unwrap(),
            host
        );
    }

    // GEMM: rows of A and C cut, B replicated; the same kernels, so the same bits.
    let g = trident_testkit::cases::gemm::<f32>(300, seed);
    let rows = even_split(g.m, size, rank);
    let a_rows = &g.a[rows.start * g.k..rows.end * g.k];
    let p = GemmParams::<f32>::default();
    let mut host = vec![0f32; rows.len() * g.n];
    s.gemm(
        &p,
        MatRef::dense(a_rows, rows.len(), g.k).unwrap(),
        MatRef::dense(&g.b, g.k, g.n).unwrap(),
        MatMut::dense(&mut host, rows.len(), g.n).unwrap(),
    )
    .unwrap();
    let mat = |v: &[f32], r, c| DeviceMat {
        buf: dev.upload(v).unwrap(),
        rows: r,
        cols: c,
        ld: c,
    };
    let (ga, gb) = (mat(a_rows, rows.len(), g.k), mat(&g.b, g.k, g.n));
    let mut gc = mat(&vec![0f32; rows.len() * g.n], rows.len(), g.n);
    s.gemm_resident(&dev, &p, &ga, &gb, &mut gc).unwrap();
    let mut got = vec![0f32; rows.len() * g.n];
    dev.download(&gc.buf, &mut got).unwrap();
    assert!(got == host, "gemm_resident differs from gemm");

    // Batch-OMP: signals cut, codes stay with them.
    let o = trident_testkit::sparse_coder::generate::omp_dct::<f32>(5_001, seed);
    let n = o.dict.n();
    let rows = even_split(o.count, size, rank);
    let x = &o.signals[rows.start * n..rows.end * n];
    let host = s
        .encode(&o.dict, MatRef::dense(x, rows.len(), n).unwrap(), o.rule)
        .unwrap();
    let dx = mat(x, rows.len(), n);
    let codes = s.encode_resident(&dev, &o.dict, &dx, o.rule).unwrap();
    assert!(
        dev.download_codes(&codes).unwrap() == host,
        "encode_resident differs"
    );

    // SpGEMM: A's rows cut, B replicated.
    let m = trident_testkit::sparse_gemm::generate::uniform_rows::<f32>(4_000, 4_000, 8, seed);
    let mine = trident_dist::row_block(&m, even_split(m.rows(), size, rank)).unwrap();
    let host = s.spgemm(&mine, &m).unwrap();
    let (ca, cb) = (dev.upload_csr(&mine).unwrap(), dev.upload_csr(&m).unwrap());
    let got = dev
        .download_csr(&s.spgemm_resident(&dev, &ca, &cb).unwrap())
        .unwrap();
    assert!(got == host, "spgemm_resident differs from spgemm");

    // Grid cuts: layers cut into slabs on the GPUs, completed on rank 0's;
    // the flow and each rank's labels against the whole grid on one device.
    use trident_testkit::cases::{cut, cut3d, random_grid};
    for (g, what) in [
        (cut3d(40, seed), "cut3d-40"),
        (random_grid(9, 17, 13, true, 30, seed), "random 9x17x13"),
        (cut(300, seed), "cut-300 (rows)"),
    ] {
        let want = s.grid_cut(&g).unwrap();
        let (d, h, _) = g.shape();
        let layers = if g.is_3d() { d } else { h };
        let layer = g.nodes() / layers;
        let mine = even_split(layers, size, rank);
        let slab = dev.upload_grid_layers(&g, mine.clone()).unwrap();
        let (flow, labels) = s.grid_cut_resident(&dev, &slab).unwrap();
        assert_eq!(flow, want.flow, "{what}: flow value");
        let got = dev.download_vec(&labels).unwrap();
        let want = &want.source_side[mine.start * layer..mine.end * layer];
        assert!(
            got.len() == want.len() && got.iter().zip(want).all(|(&a, &b)| (a != 0) == b),
            "{what}: rank {rank}'s labels differ from one device's cut"
        );
    }
    // A slab other than the even split is an error on every rank.
    let g = cut3d(16, seed);
    let slab = dev.upload_grid_layers(&g, 0..16).unwrap();
    let Err(e) = s.grid_cut_resident(&dev, &slab) else {
        panic!("every rank holds the wrong layers, yet the call succeeded");
    };
    assert!(e.to_string().contains("slab.layers"), "{e}");
    cluster.comm().barrier().unwrap();
    println!("child_resident: ok");
}

/// The single-process mode: one process, a thread per GPU, one
/// `ncclCommInitAll`; the sharded calls answer as launched ranks do.
#[test]
fn one_process_drives_every_gpu() {
    use trident_core::NearestPairs;
    use trident_dist::even_split;
    if !gpus_or_skip(2) {
        return;
    }
    let c = trident_testkit::nearest_pairs::generate::pairs_uniform(40_001, 20_000, 7);
    let one = trident_cuda::CudaBackend::new(0)
        .unwrap()
        .closest_pairs(&c.a, &c.b, 50)
        .unwrap();
    let got = Cluster::run_local(Some(2), Duration::from_secs(60), |cluster| {
        assert_eq!((cluster.size(), cluster.gpu()), (2, Some(cluster.rank())));
        assert_eq!(cluster.comm().transport(), "nccl");
        let dev = trident_cuda::CudaBackend::new(cluster.rank()).unwrap();
        let a = &c.a[even_split(c.a.len(), 2, cluster.rank())];
        let pairs = Sharded::new(cluster, &dev)
            .closest_pairs(a, &c.b, 50)
            .unwrap();
        let mut sum = vec![cluster.rank() as u64 + 1];
        cluster
            .comm()
            .all_reduce_u64(&mut sum, ReduceOp::Sum)
            .unwrap();
        (pairs, sum[0])
    })
    .unwrap();
    for (pairs, sum) in got {
        assert_eq!(sum, 3);
        assert_eq!(pairs, one);
    }
}
