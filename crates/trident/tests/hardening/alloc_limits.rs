//! Sizes that used to abort the process in a failed allocation: each is now a
//! typed error naming the size (or, on a machine that could hold it, skipped,
//! so that a test never allocates tens of gigabytes for real).

use trident::{CsrMatrix, Error, FlowArc, FlowNetwork, SparseGemm};

use crate::{backends, machine_could_hold};

fn assert_oom_or_too_large<T: std::fmt::Debug>(what: &str, r: trident::Result<T>) {
    match r {
        Err(e @ (Error::OutOfMemory { .. } | Error::TooLarge { .. })) => {
            let msg = e.to_string();
            assert!(msg.chars().any(|c| c.is_ascii_digit()), "{what}: {msg}");
        }
        other => panic!("{what}: expected OutOfMemory or TooLarge, got {other:?}"),
    }
}

#[test]
fn zeros_beyond_u32_rows_is_too_large() {
    match CsrMatrix::<f32>::zeros(1 << 40, 4) {
        Err(Error::TooLarge { field, value, .. }) => {
            assert_eq!((field, value), ("rows", 1u128 << 40));
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn zeros_whose_offsets_do_not_fit_in_memory_is_out_of_memory() {
    let rows = u32::MAX as usize;
    if machine_could_hold((rows as u128 + 1) * 8) {
        return;
    }
    match CsrMatrix::<f32>::zeros(rows, 1) {
        Err(Error::OutOfMemory { bytes, detail }) => {
            assert_eq!(bytes, (rows as u64 + 1) * 8);
            assert!(detail.contains(&rows.to_string()), "{detail}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}

fn huge_network() -> FlowNetwork {
    let n = u32::MAX as usize;
    FlowNetwork::new(
        n,
        0,
        u32::MAX - 1,
        vec![FlowArc {
            from: 0,
            to: u32::MAX - 1,
            cap: 3,
        }],
    )
    .unwrap()
}

#[test]
fn network_of_u32_max_nodes_is_an_error_not_an_abort() {
    if machine_could_hold(u32::MAX as u128 * 30) {
        return;
    }
    let g = huge_network();
    for (name, be) in backends() {
        assert_oom_or_too_large(name, be.network_flow(&g));
    }
}

/// The 4-line file of the issue: `trident maxflow` on it aborted.
#[test]
fn dimacs_declaring_u32_max_nodes_reads_then_fails_cleanly() {
    let text = "p max 4294967295 1\nn 1 s\nn 4294967295 t\na 1 4294967295 5\n";
    let g = FlowNetwork::read_dimacs(text.as_bytes()).unwrap();
    assert_eq!(g.nodes(), u32::MAX as usize);
    if !machine_could_hold(u32::MAX as u128 * 30) {
        for (name, be) in backends() {
            assert_oom_or_too_large(name, be.network_flow(&g));
        }
    }
    let over = "p max 4294967296 1\nn 1 s\nn 2 t\na 1 2 5\n";
    assert_oom_or_too_large("dimacs", FlowNetwork::read_dimacs(over.as_bytes()));
}

/// A 70,000 x 1 column times a 1 x 70,000 row: 4.9e9 output entries.
#[test]
fn outer_product_too_large_for_memory_is_out_of_memory() {
    let m = 70_000usize;
    if machine_could_hold((m * m) as u128 * 12) {
        return;
    }
    let col: Vec<(u32, u32, f32)> = (0..m as u32).map(|i| (i, 0, 1.0)).collect();
    let row: Vec<(u32, u32, f32)> = (0..m as u32).map(|j| (0, j, 1.0)).collect();
    let a = CsrMatrix::from_triplets(m, 1, &col).unwrap();
    let b = CsrMatrix::from_triplets(1, m, &row).unwrap();
    for (name, be) in backends() {
        match SparseGemm::<f32>::spgemm(be.as_ref(), &a, &b) {
            Err(Error::OutOfMemory { detail, .. }) => {
                assert!(detail.contains("4900000000"), "{name}: {detail}")
            }
            other => panic!("{name}: expected OutOfMemory, got {other:?}"),
        }
    }
}

/// An output 1 x u32::MAX wide with two entries needs no n-wide workspace.
#[test]
fn product_u32_max_columns_wide_is_computed() {
    let n = u32::MAX as usize;
    let a = CsrMatrix::from_triplets(1, 1, &[(0, 0, 2.0f64)]).unwrap();
    let b = CsrMatrix::from_triplets(1, n, &[(0, 0, 1.0), (0, u32::MAX - 1, 3.0)]).unwrap();
    for (name, be) in backends() {
        let c = SparseGemm::<f64>::spgemm(be.as_ref(), &a, &b).unwrap();
        assert_eq!(c.cols(), n, "{name}");
        assert_eq!(c.indices(), &[0, u32::MAX - 1], "{name}");
        assert_eq!(c.values(), &[2.0, 6.0], "{name}");
    }
}
