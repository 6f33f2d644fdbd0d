//! `trident omp` in scikit-learn's terms: the `components_` layout
//! (`--atoms-as-rows`), `--tol`, the hints of the dimension error, the stop
//! rules in `--help`, and every bad input with its exit code and no output.

mod common;

use std::path::Path;

use common::*;

/// Five atoms of length 3 as rows (scikit-learn's `components_`): e1, e2, e3,
/// (e1 + e2)/sqrt2, (e2 + e3)/sqrt2.
fn rows() -> Vec<f64> {
    let r = std::f64::consts::FRAC_1_SQRT_2;
    vec![
        1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, r, r, 0.0, 0.0, r, r,
    ]
}

/// The same dictionary with one atom per column (3 x 5).
fn columns() -> Vec<f64> {
    let r = rows();
    let mut c = vec![0.0; 15];
    for i in 0..3 {
        for j in 0..5 {
            c[i * 5 + j] = r[j * 3 + i];
        }
    }
    c
}

fn codes(out: &Path) -> (Vec<u64>, Vec<u32>, Vec<f64>) {
    (
        npz_member(out, "offsets"),
        npz_member(out, "atoms"),
        npz_member(out, "coefs"),
    )
}

#[test]
fn atoms_as_rows_gives_scikit_learns_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (d, dc, x, out) = (
        dir.path().join("d.npy"),
        dir.path().join("dc.npy"),
        dir.path().join("x.npy"),
        dir.path().join("c.npz"),
    );
    write_npy(&d, &[5, 3], &rows());
    write_npy(&dc, &[3, 5], &columns());
    write_npy(&x, &[2, 3], &[3.0, 2.0, 0.5, 0.0, 1.0, 2.0]);
    // scikit-learn 1.9.1, sparse_encode(x, d, algorithm='omp',
    // n_nonzero_coefs=2) and orthogonal_mp(d.T, x.T, tol=0.3), both:
    // [[0, -1.0000000000000013, 0, 4.242640687119287, 0],
    //  [0, -1.0000000000000007, 0, 0, 2.828427124746191]]
    let want_atoms = [3u32, 1, 4, 1];
    let want = [
        4.242640687119287,
        -1.0000000000000013,
        2.828427124746191,
        -1.0000000000000007,
    ];
    let rules: [&[&str]; 3] = [&["--sparsity", "2"], &["--tol", "0.3"], &["--error", "0.3"]];
    for rule in rules {
        let mut args = vec![
            "omp",
            "--dict",
            s(&d),
            "--atoms-as-rows",
            "--signals",
            s(&x),
        ];
        args.extend(rule);
        args.extend(["-o", s(&out)]);
        let v = ok_json(&args);
        assert_eq!((v["n"].as_u64(), v["atoms"].as_u64()), (Some(3), Some(5)));
        let (offsets, atoms, coefs) = codes(&out);
        assert_eq!(
            (offsets, atoms),
            (vec![0, 2, 4], want_atoms.to_vec()),
            "{rule:?}"
        );
        for (g, w) in coefs.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{rule:?}: {coefs:?}");
        }
    }
    // The column layout without the flag codes the same.
    let mut args = vec!["omp", "--dict", s(&dc), "--signals", s(&x)];
    args.extend(["--sparsity", "2", "-o", s(&out)]);
    ok_json(&args);
    assert_eq!(codes(&out).1, want_atoms);
}

#[test]
fn tol_stops_before_the_first_atom_where_the_signal_already_meets_it() {
    // ||x||^2 = 0.25 <= tol: no atom (scikit-learn would add one).
    let dir = tempfile::tempdir().expect("tempdir");
    let (d, x, out) = (
        dir.path().join("d.npy"),
        dir.path().join("x.npy"),
        dir.path().join("c.npz"),
    );
    write_npy(&d, &[5, 3], &rows());
    write_npy(&x, &[1, 3], &[0.5, 0.0, 0.0]);
    let mut args = vec![
        "omp",
        "--dict",
        s(&d),
        "--atoms-as-rows",
        "--signals",
        s(&x),
    ];
    args.extend(["--tol", "0.25", "-o", s(&out)]);
    ok_json(&args);
    assert_eq!(codes(&out).0, [0, 0]);
    assert_eq!(npz_member::<f64>(&out, "residual_norm2"), [0.25]);
}

#[test]
fn a_length_mismatch_hints_at_the_other_layout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (d, dc, x, out) = (
        dir.path().join("d.npy"),
        dir.path().join("dc.npy"),
        dir.path().join("x.npy"),
        dir.path().join("c.npz"),
    );
    write_npy(&d, &[5, 3], &rows());
    write_npy(&dc, &[3, 5], &columns());
    write_npy(&x, &[1, 3], &[1.0, 0.0, 0.0]);
    // Rows read as columns: n = 5, signals of 3; the transpose fits.
    fails(
        &[
            "omp",
            "--dict",
            s(&d),
            "--signals",
            s(&x),
            "--sparsity",
            "1",
            "-o",
            s(&out),
        ],
        3,
        &[
            "signals of length 3",
            "n = 5",
            "transpose would fit",
            "--atoms-as-rows",
        ],
        &out,
    );
    // Columns read as rows: the hint says to drop the flag.
    fails(
        &[
            "omp",
            "--dict",
            s(&dc),
            "--atoms-as-rows",
            "--signals",
            s(&x),
            "--sparsity",
            "1",
            "-o",
            s(&out),
        ],
        3,
        &["n = 5 columns", "drop --atoms-as-rows"],
        &out,
    );
    // Neither layout fits: no hint.
    write_npy(&x, &[1, 4], &[1.0, 0.0, 0.0, 0.0]);
    let o = trident(&[
        "omp",
        "--dict",
        s(&d),
        "--signals",
        s(&x),
        "--sparsity",
        "1",
        "-o",
        s(&out),
    ]);
    assert_eq!(code(&o), 3);
    assert!(!stderr(&o).contains("--atoms-as-rows"), "{}", stderr(&o));
    assert!(!out.exists());
}

#[test]
fn bad_atoms_are_named_as_the_file_lays_them_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (d, x, out) = (
        dir.path().join("d.npy"),
        dir.path().join("x.npy"),
        dir.path().join("c.npz"),
    );
    write_npy(&x, &[1, 3], &[1.0, 0.0, 0.0]);
    let mut r = rows();
    r[6..9].copy_from_slice(&[0.0, 0.0, 2.0]); // atom 2 = 2 e3
    write_npy(&d, &[5, 3], &r);
    let base = [
        "omp",
        "--dict",
        s(&d),
        "--atoms-as-rows",
        "--signals",
        s(&x),
    ];
    let mut args = base.to_vec();
    args.extend(["--sparsity", "1", "-o", s(&out)]);
    fails(
        &args,
        3,
        &["d.npy", "atom 2 (row 2) has norm 2.000000", "--normalize"],
        &out,
    );
    // --normalize scales it, and the code refers to the scaled atom.
    args.push("--normalize");
    ok_json(&args);
    write_npy(&x, &[1, 3], &[0.0, 0.0, 3.0]);
    ok_json(&args);
    assert_eq!((codes(&out).1, codes(&out).2), (vec![2], vec![3.0]));
    std::fs::remove_file(&out).expect("rm");
    // A zero atom cannot be normalized.
    r[3..6].fill(0.0);
    write_npy(&d, &[5, 3], &r);
    fails(&args, 3, &["atom 1 (row 1) is zero"], &out);
    // In the column layout the message names the column.
    write_npy(&d, &[3, 2], &[1.0, 0.0, 0.0, 0.5, 0.0, 0.0]);
    fails(
        &[
            "omp",
            "--dict",
            s(&d),
            "--signals",
            s(&x),
            "--sparsity",
            "1",
            "-o",
            s(&out),
        ],
        3,
        &["atom 1 (column 1) has norm 0.500000"],
        &out,
    );
}

#[test]
fn bad_values_and_files_fail_with_their_exit_code_and_no_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (d, x, out) = (
        dir.path().join("d.npy"),
        dir.path().join("x.npy"),
        dir.path().join("c.npz"),
    );
    write_npy(&d, &[5, 3], &rows());
    write_npy(&x, &[1, 3], &[1.0, f64::NAN, 0.0]);
    let run = |rule: &[&str], want: i32, needles: &[&str]| {
        let mut args = vec![
            "omp",
            "--dict",
            s(&d),
            "--atoms-as-rows",
            "--signals",
            s(&x),
        ];
        args.extend(rule);
        args.extend(["-o", s(&out)]);
        fails(&args, want, needles, &out);
    };
    // Usage: a negative or NaN tolerance, no rule at all.
    run(
        &["--tol", "-1"],
        2,
        &["--error (--tol) -1", "finite number >= 0"],
    );
    run(&["--tol", "NaN"], 2, &["finite number >= 0"]);
    run(&[], 2, &["--sparsity"]);
    // A NaN signal entry names the file and the element.
    run(&["--sparsity", "1"], 3, &["x.npy", "element (0, 1) is NaN"]);
    // An integer dictionary, a missing file.
    write_npy(&x, &[1, 3], &[1.0, 0.0, 0.0]);
    write_npy(&d, &[5, 3], &[1i64; 15]);
    run(&["--sparsity", "1"], 3, &["d.npy", "float32"]);
    std::fs::remove_file(&d).expect("rm");
    run(&["--sparsity", "1"], 4, &["d.npy", "cannot open"]);
}

#[test]
fn help_states_where_the_stop_rules_differ_from_scikit_learn() {
    let o = trident(&["omp", "--help"]);
    assert_eq!(code(&o), 0);
    let help = stdout(&o);
    for needle in [
        "--atoms-as-rows",
        "components_",
        "[alias: --tol]",
        "n_nonzero_coefs = --sparsity, tol = --error",
        "a signal with ||x||^2 <= E gets no atom",
        "64 sqrt(n) eps ||x||",
        "|<d_j, r>| < 1.5e-8 in float64",
        "in scikit-learn tol overrides",
    ] {
        assert!(
            help.contains(needle),
            "omp --help lacks {needle:?}:\n{help}"
        );
    }
}
