//! `trident bench` on the user's own files, its ratios to the fastest peer,
//! the grouped and stably coloured plot with the machine named, and its bad
//! inputs.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn bench(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["bench", "--backend", "rayon", "--repeat", "1"];
    args.extend(extra);
    ok_json(&args)
}

fn rows_of<'a>(v: &'a serde_json::Value, case: &str) -> Vec<&'a serde_json::Value> {
    v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["case"] == case)
        .collect()
}

#[test]
fn files_are_cases_with_their_ratio_to_the_fastest_peer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = |n: &str| dir.path().join(n);
    let (a, d, x, img, svg) = (p("a.npy"), p("d.npy"), p("x.npy"), p("img.png"), p("b.svg"));
    write_npy(&a, &[3, 2], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
    write_npy(&d, &[2, 2], &[1.0f64, 0.0, 0.0, 1.0]);
    write_npy(&x, &[3, 2], &[1.0f64, 2.0, 0.0, 1.0, 3.0, 0.0]);
    image::GrayImage::from_fn(12, 8, |x, _| image::Luma([if x < 6 { 40 } else { 200 }]))
        .save(&img)
        .expect("png");
    let (mtx, ca, cb, ply, max) = (
        fixture("a.mtx"),
        fixture("a.csv"),
        fixture("b.csv"),
        fixture("b.ply"),
        fixture("tiny.max"),
    );
    let pair = format!("{},{}", s(&ca), s(&cb));
    let omp = format!("{},{}", s(&d), s(&x));
    let v = bench(&[
        "--mtx",
        s(&mtx),
        "--npy",
        s(&a),
        "--points",
        &pair,
        "--points",
        s(&ply),
        "--omp",
        &omp,
        "--dimacs",
        s(&max),
        "--image",
        s(&img),
        "--plot",
        s(&svg),
    ]);
    let cases = [
        ("mtx:a.mtx", "sparse_gemm", Some("sprs 0.11")),
        ("npy:a.npy", "dense_gemm", Some("nalgebra 0.35")),
        ("points:a.csv+b.csv", "nearest_pairs", Some("kiddo 6")),
        ("points:b.ply", "nearest_pairs", Some("kiddo 6")),
        ("omp:d.npy+x.npy", "sparse_coder", None),
        ("dimacs:tiny.max", "max_flow", None),
        ("image:img.png", "max_flow", None),
    ];
    for (case, primitive, peer) in cases {
        let rows = rows_of(&v, case);
        let ours = rows
            .iter()
            .find(|r| r["backend"] == "rayon")
            .unwrap_or_else(|| panic!("{case}: {rows:?}"));
        assert_eq!(ours["primitive"], primitive, "{case}");
        let t = ours["median_s"].as_f64().expect("timed");
        assert!(t > 0.0, "{case}: {ours}");
        match peer {
            Some(name) => {
                let p = rows
                    .iter()
                    .find(|r| r["backend"] == name)
                    .expect("peer row");
                let pt = p["median_s"].as_f64().expect("peer timed");
                let ratio = ours["ratio_to_best_peer"].as_f64().expect("a ratio");
                assert!(
                    (ratio * pt / t - 1.0).abs() < 1e-9,
                    "{case}: {ratio} {t} {pt}"
                );
                assert_eq!(p["ratio_to_best_peer"].as_f64(), Some(1.0));
            }
            None => assert!(ours["ratio_to_best_peer"].is_null(), "{case}"),
        }
    }
    let machine = v["machine"].as_str().expect("machine");
    assert!(
        machine.contains("threads") && machine.contains("rayon ("),
        "{machine}"
    );
    let text = std::fs::read_to_string(&svg).expect("svg");
    assert!(text.contains(&format!("machine: {machine}")));
    for (case, _, _) in cases {
        assert!(text.contains(case), "the plot lacks {case}");
    }
    assert!(text.contains("1.00x") && text.contains("no peer"));
    // rayon's colour and sprs's are the same in every plot.
    assert!(text.contains("fill=\"#1F77B4\"") && text.contains("fill=\"#D62728\""));
    let v2 = bench(&["--case", "spgemm-edge-1x1", "--plot", s(&svg)]);
    assert_eq!(v2["rows"].as_array().map(Vec::len), Some(2));
    let text = std::fs::read_to_string(&svg).expect("svg");
    assert!(text.contains("fill=\"#1F77B4\"") && text.contains("fill=\"#D62728\""));
}

#[test]
fn bad_files_and_flags_fail_with_their_exit_code_and_no_plot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = |n: &str| dir.path().join(n);
    let (d, x, svg) = (p("d.npy"), p("x.npy"), p("b.svg"));
    write_npy(&d, &[2, 2], &[1.0f64, 0.0, 0.0, 1.0]);
    write_npy(&x, &[1, 3], &[1.0f64, 2.0, 3.0]);
    let run = |extra: &[&str], want: i32, needles: &[&str]| {
        let mut args = vec![
            "bench",
            "--backend",
            "rayon",
            "--repeat",
            "1",
            "--plot",
            s(&svg),
        ];
        args.extend(extra);
        fails(&args, want, needles, &svg);
    };
    run(&[], 2, &["give --case NAME or a file"]);
    run(
        &["--points", "a,b,c"],
        2,
        &["expected 1 to 2 comma-separated files"],
    );
    run(&["--omp", s(&d)], 2, &["expected 2 comma-separated files"]);
    run(
        &["--mtx", s(&p("absent.mtx"))],
        4,
        &["absent.mtx", "cannot open"],
    );
    run(&["--mtx", s(&fixture("nan.mtx"))], 3, &["nan.mtx", "line"]);
    run(&["--npy", s(&fixture("a.mtx"))], 3, &["a.mtx"]);
    run(&["--points", s(&fixture("nan.csv"))], 3, &["nan.csv"]);
    let omp = format!("{},{}", s(&d), s(&x));
    run(
        &["--omp", &omp],
        3,
        &["x.npy has signals of length 3", "n = 2"],
    );
    write_npy(&d, &[2, 2], &[2.0f64, 0.0, 0.0, 1.0]);
    write_npy(&x, &[1, 2], &[1.0f64, 2.0]);
    run(&["--omp", &omp], 3, &["d.npy", "column 0 has norm 2"]);
    run(&["--dimacs", s(&fixture("huge.max"))], 3, &["huge.max"]);
    run(&["--image", s(&fixture("a.csv"))], 3, &["a.csv"]);
    // A plot that cannot be written: exit 4, the bench's work is not reported.
    let o = trident(&[
        "bench",
        "--backend",
        "rayon",
        "--repeat",
        "1",
        "--case",
        "spgemm-edge-1x1",
        "--plot",
        s(&p("no/such/dir/b.svg")),
    ]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
}
