//! Several ranks for real: each test here starts `mpirun -n N` on this same
//! test binary, which then runs one `#[ignore]`d child test per rank (the
//! child tests do nothing when started any other way). The children compare
//! every sharded call with one device's answer on the same inputs, bit for
//! bit, and check the fault rules: inputs that disagree, a rank whose step
//! fails, a rank that dies.
#![cfg(feature = "mpi")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::Range;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use trident_core::{
    CsrMatrix, DenseGemm, Dictionary, Error, GemmParams, MatMut, MatRef, MaxFlow, NearestPairs,
    Neighbor, Op, Point, Precision, Scalar, SparseCoder, SparseGemm, StopRule,
};
use trident_dist::{
    Cluster, ClusterOptions, CommExt, Grid2d, ReduceOp, ShardScalar, Sharded, Transport,
    column_block, even_split, row_block,
};
use trident_rayon::RayonBackend;

const CHILD: &str = "TRIDENT_DIST_TEST_CHILD";

/// Runs child test `name` on `n` ranks; the job's exit status, its output,
/// and how long it took. A job still running after `limit` is killed and
/// reported as hung.
fn mpirun(n: usize, name: &str, limit: Duration) -> (bool, String, Duration) {
    let version = Command::new("mpirun").arg("--version").output();
    let Ok(version) = version else {
        panic!(
            "mpirun is not installed: install OpenMPI (apt-get install openmpi-bin libopenmpi-dev) to run the multi-rank tests"
        );
    };
    let mut cmd = Command::new("mpirun");
    if String::from_utf8_lossy(&version.stdout).contains("Open MPI") {
        cmd.args(["--allow-run-as-root", "--oversubscribe"]);
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    let exe = std::env::current_exe().unwrap();
    cmd.arg("-n")
        .arg(n.to_string())
        .arg(exe)
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env("RAYON_NUM_THREADS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap();
    loop {
        if let Some(_status) = child.try_wait().unwrap() {
            break;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{name} on {n} ranks hung (killed after {limit:?}):\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let elapsed = start.elapsed();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text, elapsed)
}

/// These tests are about MPI: even a build with NCCL on a GPU machine joins
/// over MPI here.
fn mpi_cluster() -> Cluster {
    Cluster::new(ClusterOptions {
        transport: Transport::Mpi,
        ..ClusterOptions::default()
    })
    .unwrap()
}

fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// A small deterministic generator (the same numbers on every rank).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn points(&mut self, n: usize) -> Vec<Point<f32>> {
        (0..n)
            .map(|_| [self.next() as f32, self.next() as f32, self.next() as f32])
            .collect()
    }
}

#[test]
fn sharded_calls_on_two_and_three_ranks_equal_one_device() {
    for n in [2, 3] {
        let (ok, text, _) = mpirun(n, "child_primitives", Duration::from_secs(300));
        assert!(ok, "{n} ranks:\n{text}");
        assert_eq!(text.matches("child_primitives: ok").count(), n, "{text}");
    }
}

#[test]
#[ignore = "runs under mpirun, started by sharded_calls_on_two_and_three_ranks_equal_one_device"]
fn child_primitives() {
    if !is_child() {
        return;
    }
    let cluster = mpi_cluster();
    let (rank, size) = (cluster.rank(), cluster.size());
    assert!(size > 1, "{}", cluster.describe());
    let backend = RayonBackend::new().unwrap();
    let sharded = Sharded::new(&cluster, &backend).check_replicas(true);
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);

    // NearestPairs: A partitioned, B replicated, and B partitioned (ring).
    let a = rng.points(1000);
    let mut b = rng.points(700);
    b.extend_from_within(0..50); // exact ties between B points
    let rows = even_split(a.len(), size, rank);
    let mut one = vec![Neighbor::default(); a.len()];
    backend.nearest(&a, &b, &mut one).unwrap();
    let mut mine = vec![Neighbor::default(); rows.len()];
    sharded.nearest(&a[rows.clone()], &b, &mut mine).unwrap();
    assert_eq!(sharded.gather_neighbors(&mine).unwrap(), one);

    let k = 5;
    let mut one_k = vec![Neighbor::default(); a.len() * k];
    backend.knn(&a, &b, k, &mut one_k).unwrap();
    let mut mine_k = vec![Neighbor::default(); rows.len() * k];
    sharded.knn(&a[rows.clone()], &b, k, &mut mine_k).unwrap();
    assert_eq!(sharded.gather_neighbors(&mine_k).unwrap(), one_k);

    let b_rows = even_split(b.len(), size, rank);
    let mut ring = vec![Neighbor::default(); rows.len() * k];
    sharded
        .knn_ring(&a[rows.clone()], &b[b_rows.clone()], k, &mut ring)
        .unwrap();
    assert_eq!(sharded.gather_neighbors(&ring).unwrap(), one_k);
    let mut ring1 = vec![Neighbor::default(); rows.len()];
    sharded
        .nearest_ring(&a[rows.clone()], &b[b_rows], &mut ring1)
        .unwrap();
    assert_eq!(sharded.gather_neighbors(&ring1).unwrap(), one);

    for kk in [1, 17, 1000, 5000] {
        assert_eq!(
            sharded.closest_pairs(&a[rows.clone()], &b, kk).unwrap(),
            backend.closest_pairs(&a, &b, kk).unwrap(),
            "closest_pairs k = {kk}"
        );
    }
    // Past the one-exchange merge's size: every pair of 30,000 rows.
    let big = rng.points(30_000);
    let big_rows = even_split(big.len(), size, rank);
    assert_eq!(
        sharded
            .closest_pairs(&big[big_rows], &b, big.len())
            .unwrap(),
        backend.closest_pairs(&big, &b, big.len()).unwrap(),
        "closest_pairs of every row"
    );
    let r = 0.08f32;
    let within = sharded.within(&a[rows.clone()], &b, r, usize::MAX).unwrap();
    assert_eq!(
        sharded.gather_radius(&within).unwrap(),
        backend.within(&a, &b, r, usize::MAX).unwrap()
    );
    let (self_rows, local) = sharded.self_pairs(&a, r, usize::MAX).unwrap();
    assert_eq!(self_rows, even_split(a.len(), size, rank));
    assert_eq!(
        sharded.gather_radius(&local).unwrap(),
        backend.self_pairs(&a, r, usize::MAX).unwrap()
    );
    let total = backend.within(&a, &b, r, usize::MAX).unwrap().len();
    match sharded.within(&a[rows.clone()], &b, r, total - 1) {
        Err(Error::TooLarge { .. }) => {}
        other => panic!("max_pairs over all ranks: {other:?}"),
    }

    // f64 points take the same road.
    let a64: Vec<Point<f64>> = a
        .iter()
        .map(|p| p.map(|x| f64::from(x) * 1e5 + 5e5))
        .collect();
    let b64: Vec<Point<f64>> = b
        .iter()
        .map(|p| p.map(|x| f64::from(x) * 1e5 + 5e5))
        .collect();
    let mut one64 = vec![Neighbor::<f64>::default(); a.len()];
    backend.nearest(&a64, &b64, &mut one64).unwrap();
    let mut mine64 = vec![Neighbor::<f64>::default(); rows.len()];
    sharded
        .nearest(&a64[rows.clone()], &b64, &mut mine64)
        .unwrap();
    assert_eq!(sharded.gather_neighbors(&mine64).unwrap(), one64);

    // DenseGemm: rows of A and C partitioned, B replicated (and op(A) = A^T).
    let (m, kd, n) = (97, 64, 33);
    let ad: Vec<f32> = (0..m * kd).map(|_| rng.next() as f32 - 0.5).collect();
    let bd: Vec<f32> = (0..kd * n).map(|_| rng.next() as f32 - 0.5).collect();
    let c0: Vec<f32> = (0..m * n).map(|_| rng.next() as f32).collect();
    let params = GemmParams {
        alpha: 1.5,
        beta: 0.5,
        ..GemmParams::default()
    };
    let mut c_one = c0.clone();
    backend
        .gemm(
            &params,
            MatRef::dense(&ad, m, kd).unwrap(),
            MatRef::dense(&bd, kd, n).unwrap(),
            MatMut::dense(&mut c_one, m, n).unwrap(),
        )
        .unwrap();
    let rm = even_split(m, size, rank);
    let mut c_mine = c0[rm.start * n..rm.end * n].to_vec();
    sharded
        .gemm(
            &params,
            MatRef::dense(&ad[rm.start * kd..rm.end * kd], rm.len(), kd).unwrap(),
            MatRef::dense(&bd, kd, n).unwrap(),
            MatMut::dense(&mut c_mine, rm.len(), n).unwrap(),
        )
        .unwrap();
    assert_eq!(sharded.gather_rows(&c_mine).unwrap(), c_one, "gemm");
    // A^T: this rank's rows of op(A) are columns of the stored A (k x m).
    let at: Vec<f32> = (0..kd * rm.len())
        .map(|t| ad[(rm.start + t % rm.len()) * kd + t / rm.len()])
        .collect();
    let mut c_t = c0[rm.start * n..rm.end * n].to_vec();
    sharded
        .gemm(
            &GemmParams {
                op_a: Op::T,
                ..params
            },
            MatRef::dense(&at, kd, rm.len()).unwrap(),
            MatRef::dense(&bd, kd, n).unwrap(),
            MatMut::dense(&mut c_t, rm.len(), n).unwrap(),
        )
        .unwrap();
    let gathered = sharded.gather_rows(&c_t).unwrap();
    let worst = gathered
        .iter()
        .zip(&c_one)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    assert!(worst < 1e-4, "gemm with op(A) = A^T off by {worst}");

    // B partitioned by columns too, passed round the ring.
    let cols = even_split(n, size, rank);
    let b_cols: Vec<f32> = (0..kd)
        .flat_map(|r| bd[r * n + cols.start..r * n + cols.end].to_vec())
        .collect();
    let mut c_ring = c0[rm.start * n..rm.end * n].to_vec();
    sharded
        .gemm_ring(
            &params,
            MatRef::dense(&ad[rm.start * kd..rm.end * kd], rm.len(), kd).unwrap(),
            MatRef::dense(&b_cols, kd, cols.len()).unwrap(),
            MatMut::dense(&mut c_ring, rm.len(), n).unwrap(),
        )
        .unwrap();
    let ring = sharded.gather_rows(&c_ring).unwrap();
    let worst = ring
        .iter()
        .zip(&c_one)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    assert!(worst < 1e-4, "gemm_ring off by {worst}");

    // SparseGemm: A cut by work (one heavy row), B replicated.
    let nrows = 300;
    let mut trip = Vec::new();
    for i in 0..nrows {
        let len = if i == 7 {
            250
        } else {
            1 + (rng.next() * 6.0) as usize
        };
        for _ in 0..len {
            trip.push((
                i as u32,
                ((rng.next() * nrows as f64) as usize % nrows) as u32,
                rng.next() - 0.5,
            ));
        }
    }
    trip.sort_by_key(|&(i, j, _)| (i, j));
    trip.dedup_by_key(|t| (t.0, t.1));
    let sa = CsrMatrix::<f64>::from_triplets(nrows, nrows, &trip).unwrap();
    let one_c = backend.spgemm(&sa, &sa).unwrap();
    let (srows, block) = sharded.spgemm_balanced(&sa, &sa).unwrap();
    assert_eq!(
        block,
        backend
            .spgemm(&row_block(&sa, srows).unwrap(), &sa)
            .unwrap()
    );
    assert_eq!(sharded.gather_csr(&block).unwrap(), one_c);
    // B cut by columns too, passed round the ring: still one device's C.
    let my_rows = even_split(nrows, size, rank);
    let ring = sharded
        .spgemm_ring(
            &row_block(&sa, my_rows).unwrap(),
            &column_block(&sa, even_split(nrows, size, rank)).unwrap(),
        )
        .unwrap();
    assert_eq!(sharded.gather_csr(&ring).unwrap(), one_c);

    // SparseCoder: signals partitioned, dictionary from rank 0.
    let (dn, atoms, signals) = (16, 40, 200);
    let dict = (rank == 0).then(|| {
        Dictionary::normalize(
            dn,
            atoms,
            (0..dn * atoms).map(|_| rng.next() - 0.5).collect(),
        )
        .unwrap()
    });
    let dict = sharded.broadcast_dictionary(0, dict.as_ref()).unwrap();
    let mut rng = Rng(77);
    let x: Vec<f64> = (0..signals * dn).map(|_| rng.next() - 0.5).collect();
    let rule = StopRule::Sparsity(6);
    let one_codes = backend
        .encode(&dict, MatRef::dense(&x, signals, dn).unwrap(), rule)
        .unwrap();
    let rs = even_split(signals, size, rank);
    let codes = sharded
        .encode(
            &dict,
            MatRef::dense(&x[rs.start * dn..rs.end * dn], rs.len(), dn).unwrap(),
            rule,
        )
        .unwrap();
    assert_eq!(sharded.gather_codes(&codes).unwrap(), one_codes);

    // MaxFlow on grids: whole on rank 0, and slabs of layers then the
    // exact finisher; 2-D, 3-D, and a 3-D grid of two layers (a rank with
    // an empty slab on 3).
    for g in [
        trident_testkit::max_flow::generate::cut(24, 3),
        trident_testkit::max_flow::generate::cut3d(9, 4),
        trident_testkit::max_flow::generate::random_grid(2, 9, 11, true, 20, 5),
    ] {
        let one = backend.grid_cut(&g).unwrap();
        assert_eq!(sharded.grid_cut(&g).unwrap(), one, "{:?}", g.shape());
        assert_eq!(
            sharded.grid_cut_slabs(&g, None).unwrap(),
            one,
            "{:?}",
            g.shape()
        );
        assert_eq!(
            sharded.grid_cut_slabs(&g, Some(1)).unwrap(),
            one,
            "one round, {:?}",
            g.shape()
        );
    }

    cluster.comm().barrier().unwrap();
    println!("child_primitives: ok (rank {rank} of {size})");
}

#[test]
fn split_communicators_and_grids_on_four_ranks() {
    let (ok, text, _) = mpirun(4, "child_split", Duration::from_secs(120));
    assert!(ok, "{text}");
    assert_eq!(text.matches("child_split: ok").count(), 4, "{text}");
}

#[test]
#[ignore = "runs under mpirun, started by split_communicators_and_grids_on_four_ranks"]
fn child_split() {
    if !is_child() {
        return;
    }
    let cluster = mpi_cluster();
    let (rank, comm) = (cluster.rank(), cluster.comm());
    assert_eq!(cluster.size(), 4, "{}", cluster.describe());

    // Two rows of two; in row 1 the keys reverse the parent order.
    let key = if rank < 2 { rank } else { 10 - rank };
    let row = comm.split(rank / 2, key).unwrap();
    assert_eq!((row.size(), row.transport()), (2, "mpi"));
    assert_eq!(row.rank(), if rank < 2 { rank } else { 3 - rank });
    // A broadcast inside each group stays inside it: each gets its own
    // group's first rank (parent rank 0 and 3).
    let got = row
        .broadcast_vec(0, (row.rank() == 0).then_some(&[rank as u64][..]))
        .unwrap();
    assert_eq!(got, [if rank < 2 { 0 } else { 3 }]);
    let mut sum = [rank as u64];
    row.all_reduce_u64(&mut sum, ReduceOp::Sum).unwrap();
    assert_eq!(sum, [if rank < 2 { 1 } else { 5 }]);
    let mut max = [rank as f64];
    row.all_reduce_f64(&mut max, ReduceOp::Max).unwrap();
    assert_eq!(max, [if rank < 2 { 1.0 } else { 3.0 }]);
    let from = row.ring_shift(&vec![rank as u8; rank + 1]).unwrap();
    let other = [1, 0, 3, 2][rank];
    assert_eq!(from, vec![other as u8; other + 1]);
    // Groups of unequal size, and the parent still in use between.
    let odd = comm.split(usize::from(rank == 3), 0).unwrap();
    assert_eq!(
        (odd.rank(), odd.size()),
        if rank == 3 { (0, 1) } else { (rank, 3) }
    );
    comm.barrier().unwrap();
    odd.barrier().unwrap();
    // A split of a split.
    let single = row.split(row.rank(), 0).unwrap();
    assert_eq!((single.rank(), single.size()), (0, 1));

    // Grids: 2 x 2 (the square one), 1 x 4, and shapes that cannot be.
    let g = Grid2d::square(comm).unwrap();
    assert_eq!((g.shape(), g.pos()), ((2, 2), (rank / 2, rank % 2)));
    assert_eq!(g.rank(), rank);
    assert_eq!((g.row_comm().rank(), g.row_comm().size()), (rank % 2, 2));
    assert_eq!((g.col_comm().rank(), g.col_comm().size()), (rank / 2, 2));
    let top = g
        .col_comm()
        .broadcast_vec(0, (rank < 2).then_some(&[rank as u32][..]))
        .unwrap();
    assert_eq!(top, [(rank % 2) as u32], "the process column's top rank");
    assert_eq!(
        g.block(5, 3),
        (even_split(5, 2, rank / 2), even_split(3, 2, rank % 2))
    );
    let flat = Grid2d::new(comm, 1, 4).unwrap();
    assert_eq!((flat.row_comm().size(), flat.col_comm().size()), (4, 1));
    assert_eq!(flat.row_comm().rank(), rank);
    match Grid2d::new(comm, 3, 1) {
        Err(Error::InvalidArgument {
            field: "pr x pc", ..
        }) => {}
        other => panic!("rank {rank}: {other:?}"),
    }
    match Grid2d::new(
        comm,
        if rank == 2 { 4 } else { 2 },
        if rank == 2 { 1 } else { 2 },
    ) {
        Err(Error::InvalidArgument {
            field: "pr",
            detail,
        }) => {
            assert!(detail.contains("rank 2"), "{detail}")
        }
        other => panic!("rank {rank}: {other:?}"),
    }
    // A color no transport takes, on one rank: the same error everywhere.
    match comm.split(if rank == 1 { 1 << 40 } else { 0 }, 0) {
        Err(Error::InvalidArgument {
            field: "color",
            detail,
        }) => assert!(detail.contains("rank 1"), "{detail}"),
        other => panic!("rank {rank}: {:?}", other.map(|c| c.size())),
    }
    comm.barrier().unwrap();
    println!("child_split: ok (rank {rank})");
}

/// Rows `rows` and columns `cols` of a row-major matrix with `ld` columns.
fn cut<T: Copy>(whole: &[T], ld: usize, rows: Range<usize>, cols: Range<usize>) -> Vec<T> {
    rows.flat_map(|r| whole[r * ld + cols.start..r * ld + cols.end].to_vec())
        .collect()
}

/// Every rank's dense block of an `m x n` matrix, put back together.
fn assemble<T: Scalar>(cluster: &Cluster, grid: &Grid2d, mine: &[T], m: usize, n: usize) -> Vec<T> {
    let mut whole = vec![T::ZERO; m * n];
    for (r, block) in cluster
        .comm()
        .all_gather_vec(mine)
        .unwrap()
        .iter()
        .enumerate()
    {
        let (rows, cols) = grid.block_of(r, m, n);
        for (t, row) in rows.enumerate() {
            whole[row * n + cols.start..row * n + cols.end]
                .copy_from_slice(&block[t * cols.len()..(t + 1) * cols.len()]);
        }
    }
    whole
}

/// `gemm_summa` on `grid` against one device's GEMM of the whole matrices:
/// within the GEMM tolerance, the same bits on a second run, and C's
/// padding untouched.
fn summa_dense<T: ShardScalar>(
    cluster: &Cluster,
    sharded: &Sharded<'_>,
    grid: &Grid2d,
    (m, n, k): (usize, usize, usize),
    (alpha, beta): (f64, f64),
    seed: u64,
) {
    let mut rng = Rng(seed);
    let mut mat =
        |len: usize| -> Vec<T> { (0..len).map(|_| T::from_f64(rng.next() - 0.5)).collect() };
    let (a, b, c0) = (mat(m * k), mat(k * n), mat(m * n));
    let params = GemmParams {
        alpha: T::from_f64(alpha),
        beta: T::from_f64(beta),
        ..GemmParams::default()
    };
    let backend = sharded.backend();
    let mut one = c0.clone();
    T::gemm(backend)
        .gemm(
            &params,
            MatRef::dense(&a, m, k).unwrap(),
            MatRef::dense(&b, k, n).unwrap(),
            MatMut::dense(&mut one, m, n).unwrap(),
        )
        .unwrap();
    let ((rows, kc), (kr, cols)) = (grid.block(m, k), grid.block(k, n));
    let a_blk = cut(&a, k, rows.clone(), kc.clone());
    let b_blk = cut(&b, n, kr.clone(), cols.clone());
    // C with two padding elements per row, which must keep their bits.
    let (mi, nj, ld) = (rows.len(), cols.len(), cols.len() + 2);
    let pad = T::from_f64(-7.25);
    let mut c_pad = vec![pad; mi * ld];
    for t in 0..mi {
        let r = rows.start + t;
        c_pad[t * ld..t * ld + nj].copy_from_slice(&c0[r * n + cols.start..r * n + cols.end]);
    }
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut c_blk = c_pad.clone();
        sharded
            .gemm_summa(
                grid,
                &params,
                (m, n, k),
                MatRef::dense(&a_blk, mi, kc.len()).unwrap(),
                MatRef::dense(&b_blk, kr.len(), nj).unwrap(),
                MatMut::new(&mut c_blk, mi, nj, ld).unwrap(),
            )
            .unwrap();
        runs.push(c_blk);
    }
    let what = format!(
        "{} gemm_summa {m} x {n} x {k} on a {:?} grid, alpha {alpha} beta {beta}",
        T::NAME,
        grid.shape()
    );
    assert!(
        runs[0]
            .iter()
            .zip(&runs[1])
            .all(|(x, y)| x.to_f64().to_bits() == y.to_f64().to_bits()),
        "{what}: two runs differ"
    );
    let c_blk = &runs[0];
    assert!(
        (0..mi).all(|t| c_blk[t * ld + nj..(t + 1) * ld].iter().all(|&x| x == pad)),
        "{what}: padding written"
    );
    let dense: Vec<T> = (0..mi)
        .flat_map(|t| c_blk[t * ld..t * ld + nj].to_vec())
        .collect();
    let got = assemble(cluster, grid, &dense, m, n);
    let err: Vec<f64> = got
        .iter()
        .zip(&one)
        .map(|(x, y)| x.to_f64() - y.to_f64())
        .collect();
    let norm: Vec<f64> = one.iter().map(|x| x.to_f64()).collect();
    let tol = trident_testkit::check::gemm_tol::<T>(Precision::Strict);
    let (e, r) = (
        trident_core::tol::norm2(&err),
        trident_core::tol::norm2(&norm),
    );
    assert!(
        e <= tol.bound(r),
        "{what}: ||C - C_one||_F = {e:e}, ||C_one||_F = {r:e}"
    );
}

/// A random `rows x cols` sparse matrix: about `per_row` entries a row,
/// some rows empty, one stored zero.
fn sparse<T: Scalar>(rng: &mut Rng, rows: usize, cols: usize, per_row: f64) -> CsrMatrix<T> {
    let mut trip = Vec::new();
    for i in 0..rows {
        if rng.next() < 0.15 || cols == 0 {
            continue;
        }
        for _ in 0..(rng.next() * 2.0 * per_row) as usize {
            let j = ((rng.next() * cols as f64) as usize).min(cols.saturating_sub(1));
            trip.push((i as u32, j as u32, T::from_f64(rng.next() - 0.5)));
        }
    }
    if let Some(t) = trip.first_mut() {
        t.2 = T::ZERO;
    }
    trip.sort_by_key(|&(i, j, _)| (i, j));
    trip.dedup_by_key(|t| (t.0, t.1));
    CsrMatrix::from_triplets(rows, cols, &trip).unwrap()
}

/// `spgemm_summa` on `grid` against one device's SpGEMM of the whole
/// matrices: the same structure, every value within the SpGEMM tolerance,
/// the same bits on a second run.
fn summa_sparse<T: ShardScalar>(
    cluster: &Cluster,
    sharded: &Sharded<'_>,
    grid: &Grid2d,
    (m, n, k): (usize, usize, usize),
    seed: u64,
) {
    let mut rng = Rng(seed);
    let a = sparse::<T>(&mut rng, m, k, 4.0);
    let b = sparse::<T>(&mut rng, k, n, 3.0);
    let backend = sharded.backend();
    let one = T::spgemm(backend).spgemm(&a, &b).unwrap();
    let abs = |x: &CsrMatrix<T>| {
        let v = x.values().iter().map(|v| v.to_f64().abs()).collect();
        CsrMatrix::<f64>::new(
            x.rows(),
            x.cols(),
            x.offsets().to_vec(),
            x.indices().to_vec(),
            v,
        )
        .unwrap()
    };
    let bound = backend.spgemm(&abs(&a), &abs(&b)).unwrap();
    let ((rows, kc), (kr, cols)) = (grid.block(m, k), grid.block(k, n));
    let a_blk = column_block(&row_block(&a, rows.clone()).unwrap(), kc).unwrap();
    let b_blk = column_block(&row_block(&b, kr).unwrap(), cols.clone()).unwrap();
    let c = sharded
        .spgemm_summa(grid, (m, n, k), &a_blk, &b_blk)
        .unwrap();
    let again = sharded
        .spgemm_summa(grid, (m, n, k), &a_blk, &b_blk)
        .unwrap();
    let what = format!(
        "{} spgemm_summa {m} x {n} x {k} on a {:?} grid",
        T::NAME,
        grid.shape()
    );
    assert_eq!((c.rows(), c.cols()), (rows.len(), cols.len()), "{what}");
    assert!(
        c == again
            && c.values()
                .iter()
                .zip(again.values())
                .all(|(x, y)| x.to_f64().to_bits() == y.to_f64().to_bits()),
        "{what}: two runs differ"
    );
    // Every rank's block, put back together at its rows and columns.
    let comm = cluster.comm();
    let offs: Vec<u64> = c.offsets().iter().map(|&o| o as u64).collect();
    let (offs, idx, val) = (
        comm.all_gather_vec(&offs).unwrap(),
        comm.all_gather_vec(c.indices()).unwrap(),
        comm.all_gather_vec(c.values()).unwrap(),
    );
    let mut trip = Vec::new();
    for r in 0..comm.size() {
        let (br, bc) = grid.block_of(r, m, n);
        for (t, row) in br.enumerate() {
            for p in offs[r][t] as usize..offs[r][t + 1] as usize {
                trip.push((row as u32, idx[r][p] + bc.start as u32, val[r][p]));
            }
        }
    }
    trip.sort_by_key(|&(i, j, _)| (i, j));
    let got = CsrMatrix::from_triplets(m, n, &trip).unwrap();
    assert_eq!(got.offsets(), one.offsets(), "{what}: structure");
    assert_eq!(got.indices(), one.indices(), "{what}: structure");
    let tol = trident_core::tol::spgemm::<T>();
    for p in 0..got.nnz() {
        let (x, y) = (got.values()[p].to_f64(), one.values()[p].to_f64());
        assert!(
            (x - y).abs() <= tol * bound.values()[p],
            "{what}: entry {p} is {x}, one device {y}, bound {}",
            bound.values()[p]
        );
    }
}

/// The grids to try on `size` ranks: the square one, and flat ones.
fn grids(cluster: &Cluster) -> Vec<Grid2d> {
    let comm = cluster.comm();
    let size = comm.size();
    let mut out = vec![Grid2d::square(comm).unwrap()];
    let (pr, pc) = out[0].shape();
    if pr != pc {
        out.push(Grid2d::new(comm, pc, pr).unwrap());
    }
    if pr != 1 {
        out.push(Grid2d::new(comm, 1, size).unwrap());
    }
    out
}

#[test]
fn summa_on_three_four_and_six_ranks_is_one_device_within_tolerance() {
    for n in [3, 4, 6] {
        let (ok, text, _) = mpirun(n, "child_summa", Duration::from_secs(300));
        assert!(ok, "{n} ranks:\n{text}");
        assert_eq!(text.matches("child_summa: ok").count(), n, "{text}");
    }
}

#[test]
#[ignore = "runs under mpirun, started by summa_on_three_four_and_six_ranks_is_one_device_within_tolerance"]
fn child_summa() {
    if !is_child() {
        return;
    }
    let cluster = mpi_cluster();
    let rank = cluster.rank();
    let backend = RayonBackend::new().unwrap();
    let sharded = Sharded::new(&cluster, &backend);
    for grid in grids(&cluster) {
        for (shape, scalars) in [
            ((37, 23, 29), (1.5, 0.5)),
            ((41, 19, 53), (-0.75, 0.0)),
            ((5, 7, 2), (1.0, 1.0)),    // fewer k than process columns
            ((3, 2, 0), (2.0, -0.5)),   // k = 0: C = beta C
            ((17, 13, 11), (0.0, 2.0)), // alpha = 0: C = beta C
            ((0, 9, 8), (1.0, 0.5)),
        ] {
            summa_dense::<f32>(&cluster, &sharded, &grid, shape, scalars, 7);
            summa_dense::<f64>(&cluster, &sharded, &grid, shape, scalars, 8);
        }
    }
    for grid in grids(&cluster) {
        for shape in [
            (37, 23, 29),
            (41, 19, 53),
            (60, 45, 70),
            (5, 7, 2),
            (3, 2, 0),
            (0, 9, 8),
        ] {
            summa_sparse::<f32>(&cluster, &sharded, &grid, shape, 9);
            summa_sparse::<f64>(&cluster, &sharded, &grid, shape, 10);
        }
    }

    // Errors: the same on every rank where the ranks disagree, the failing
    // rank's own and RankFailed elsewhere where one rank's block is wrong;
    // C untouched either way.
    let grid = Grid2d::square(cluster.comm()).unwrap();
    let (m, n, k) = (9, 8, 7);
    let ((rows, kc), (kr, cols)) = (grid.block(m, k), grid.block(k, n));
    let a = vec![1.0f64; rows.len() * kc.len()];
    let b = vec![1.0f64; kr.len() * cols.len()];
    let c0 = vec![3.0f64; rows.len() * cols.len()];
    let mut c = c0.clone();
    let params = GemmParams::<f64>::default();
    let call = |c: &mut [f64], params: &GemmParams<f64>, k: usize, a_cols: usize| {
        sharded.gemm_summa(
            &grid,
            params,
            (m, n, k),
            MatRef::dense(&a[..rows.len() * a_cols], rows.len(), a_cols).unwrap(),
            MatRef::dense(&b, kr.len(), cols.len()).unwrap(),
            MatMut::dense(c, rows.len(), cols.len()).unwrap(),
        )
    };
    match call(&mut c, &params, if rank == 1 { k + 1 } else { k }, kc.len()) {
        Err(Error::InvalidArgument { field: "k", detail }) => {
            assert!(detail.contains("rank 1"), "{detail}")
        }
        other => panic!("rank {rank}: {other:?}"),
    }
    let short = if rank == 2 { kc.len() - 1 } else { kc.len() };
    match (rank, call(&mut c, &params, k, short)) {
        (2, Err(Error::DimensionMismatch { field: "a", .. })) => {}
        (r, Err(Error::RankFailed { rank: 2, detail })) if r != 2 => {
            assert!(detail.contains("block"), "{detail}")
        }
        (r, other) => panic!("rank {r}: {other:?}"),
    }
    let transposed = GemmParams {
        op_b: Op::T,
        ..params
    };
    match call(&mut c, &transposed, k, kc.len()) {
        Err(Error::InvalidArgument { field: "op_b", .. }) => {}
        other => panic!("rank {rank}: {other:?}"),
    }
    assert_eq!(c, c0, "C written by a failed call");
    call(&mut c, &params, k, kc.len()).unwrap();
    assert!(c.iter().all(|&x| x == k as f64), "{c:?}");
    // The same for the sparse call.
    let sa = CsrMatrix::<f64>::zeros(rows.len(), kc.len()).unwrap();
    let sb = CsrMatrix::<f64>::zeros(kr.len(), cols.len()).unwrap();
    match sharded.spgemm_summa(&grid, (m, n, if rank == 1 { k + 1 } else { k }), &sa, &sb) {
        Err(Error::InvalidArgument { field: "k", detail }) => {
            assert!(detail.contains("rank 1"), "{detail}")
        }
        other => panic!("rank {rank}: {other:?}"),
    }
    let sb_wrong = CsrMatrix::<f64>::zeros(kr.len() + 1, cols.len()).unwrap();
    match (
        rank,
        sharded.spgemm_summa(
            &grid,
            (m, n, k),
            &sa,
            if rank == 1 { &sb_wrong } else { &sb },
        ),
    ) {
        (1, Err(Error::DimensionMismatch { field: "b", .. })) => {}
        (r, Err(Error::RankFailed { rank: 1, .. })) if r != 1 => {}
        (r, other) => panic!("rank {r}: {other:?}"),
    }

    cluster.comm().barrier().unwrap();
    println!("child_summa: ok (rank {rank})");
}

#[test]
fn disagreeing_inputs_and_a_failing_rank_are_errors_on_every_rank() {
    let (ok, text, _) = mpirun(3, "child_faults", Duration::from_secs(120));
    assert!(ok, "{text}");
    assert_eq!(text.matches("child_faults: ok").count(), 3, "{text}");
}

#[test]
#[ignore = "runs under mpirun, started by disagreeing_inputs_and_a_failing_rank_are_errors_on_every_rank"]
fn child_faults() {
    if !is_child() {
        return;
    }
    let cluster = mpi_cluster();
    let rank = cluster.rank();
    let backend = RayonBackend::new().unwrap();
    let sharded = Sharded::new(&cluster, &backend);
    let mut rng = Rng(5);
    let a = rng.points(50);
    let b = rng.points(40);

    // k differs on rank 1: the same InvalidArgument on every rank.
    let k = if rank == 1 { 4 } else { 3 };
    let mut out = vec![Neighbor::default(); a.len() * k];
    match sharded.knn(&a, &b, k, &mut out) {
        Err(Error::InvalidArgument { field: "k", detail }) => {
            assert!(detail.contains("rank 1"), "{detail}")
        }
        other => panic!("rank {rank}: {other:?}"),
    }
    // B differs on rank 2: found by the replica digests.
    let checked = Sharded::new(&cluster, &backend).check_replicas(true);
    let mut b2 = b.clone();
    if rank == 2 {
        b2[7][0] += 1.0;
    }
    let mut out = vec![Neighbor::default(); a.len()];
    match checked.nearest(&a, &b2, &mut out) {
        Err(Error::InvalidArgument {
            field: "b (contents)",
            ..
        }) => {}
        other => panic!("rank {rank}: {other:?}"),
    }
    // A NaN in rank 2's queries: its own error there, RankFailed elsewhere.
    let mut a2 = a.clone();
    if rank == 2 {
        a2[3][1] = f32::NAN;
    }
    match (rank, sharded.nearest(&a2, &b, &mut out)) {
        (2, Err(Error::InvalidArgument { field: "a", .. })) => {}
        (0 | 1, Err(Error::RankFailed { rank: 2, detail })) => {
            assert!(detail.contains("NaN"), "{detail}")
        }
        (r, other) => panic!("rank {r}: {other:?}"),
    }
    // A rank without a usable backend (no GPU there): unavailable everywhere.
    let here: trident_core::Result<&RayonBackend> = if rank == 1 {
        Err(Error::BackendUnavailable("no GPU on this rank".into()))
    } else {
        Ok(&backend)
    };
    match cluster.require(here) {
        Err(Error::BackendUnavailable(why)) => assert!(why.contains("no GPU"), "{why}"),
        other => panic!("rank {rank}: {other:?}"),
    }
    // The cluster is still usable after errors.
    sharded.nearest(&a, &b, &mut out).unwrap();
    cluster.comm().barrier().unwrap();
    println!("child_faults: ok (rank {rank})");
}

#[test]
fn a_rank_that_dies_ends_the_job_instead_of_hanging() {
    let (ok, text, _) = mpirun(3, "child_dies", Duration::from_secs(120));
    assert!(!ok, "the job succeeded although rank 1 aborted:\n{text}");
    assert!(!text.contains("child_dies: finished"), "{text}");
}

#[test]
#[ignore = "runs under mpirun, started by a_rank_that_dies_ends_the_job_instead_of_hanging"]
fn child_dies() {
    if !is_child() {
        return;
    }
    let cluster = mpi_cluster();
    let backend = RayonBackend::new().unwrap();
    let sharded = Sharded::new(&cluster, &backend);
    let mut rng = Rng(9);
    let (a, b) = (rng.points(100), rng.points(100));
    if cluster.rank() == 1 {
        std::process::abort();
    }
    // The others wait for rank 1 in the first collective.
    let mut out = vec![Neighbor::default(); a.len()];
    let _ = sharded.nearest(&a, &b, &mut out);
    let _ = sharded.closest_pairs(&a, &b, 10);
    println!("child_dies: finished");
}

#[test]
fn a_rank_that_panics_ends_the_job_instead_of_hanging() {
    let (ok, text, _) = mpirun(3, "child_panics", Duration::from_secs(120));
    assert!(!ok, "the job succeeded although rank 2 panicked:\n{text}");
    assert!(!text.contains("child_panics: finished"), "{text}");
}

#[test]
#[ignore = "runs under mpirun, started by a_rank_that_panics_ends_the_job_instead_of_hanging"]
fn child_panics() {
    if !is_child() {
        return;
    }
    let cluster = mpi_cluster();
    let backend = RayonBackend::new().unwrap();
    let sharded = Sharded::new(&cluster, &backend);
    let mut rng = Rng(11);
    let (a, b) = (rng.points(100), rng.points(100));
    let mut out = vec![Neighbor::default(); a.len()];
    sharded.nearest(&a, &b, &mut out).unwrap();
    // Rank 2 fails an assertion of its own code; the others are already in
    // the next call's first collective.
    assert!(cluster.rank() != 2, "rank 2 stops here");
    let _ = sharded.closest_pairs(&a, &b, 10);
    println!("child_panics: finished");
}
