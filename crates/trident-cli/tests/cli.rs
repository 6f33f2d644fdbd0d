//! The `trident` binary on real files: every subcommand's happy path (output
//! read back and checked, `--json` parsed), its bad-input paths with the
//! documented exit code and no partial output left, and the CLI items of the
//! hardening issue (bad seed, unknown names, a huge DIMACS declaration).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn trident(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trident"))
        .args(args)
        .env_remove("TRIDENT_SEED")
        .env_remove("RUST_LOG")
        .env("TRIDENT_BACKEND", "rayon")
        .output()
        .expect("run trident")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code (not killed by a signal)")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

/// Runs a command that must fail with `want`, leaving `out` absent and no
/// temporary file beside it; its message must contain `needle`.
fn fails(args: &[&str], want: i32, needle: &str, out: &Path) {
    let o = trident(args);
    let err = stderr(&o);
    assert_eq!(code(&o), want, "{args:?}: stderr {err}");
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
    assert!(!out.exists(), "{args:?} left {out:?}");
    if let Some(dir) = out.parent().filter(|d| d.exists()) {
        let left: Vec<_> = std::fs::read_dir(dir)
            .expect("read dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(left.is_empty(), "{args:?} left temporary files {left:?}");
    }
}

use npyz::WriterBuilder;

fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], data: &[T]) {
    let mut buf = Vec::new();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut buf)
        .begin_nd()
        .expect("npy writer");
    w.extend(data.iter().copied()).expect("npy data");
    w.finish().expect("npy finish");
    std::fs::write(path, buf).expect("write npy");
}

fn read_npy_f64(path: &Path) -> (Vec<u64>, Vec<f64>) {
    let bytes = std::fs::read(path).expect("read npy");
    let f = npyz::NpyFile::new(&bytes[..]).expect("npy header");
    let shape = f.shape().to_vec();
    (shape, f.into_vec::<f64>().expect("npy f64 data"))
}

/// A Matrix Market file as read by `sprs` (an independent reader), densified.
fn sprs_dense(path: &Path) -> (usize, usize, Vec<f64>) {
    let m: sprs::TriMat<f64> = sprs::io::read_matrix_market(path).expect("sprs reads our output");
    let (r, c) = (m.rows(), m.cols());
    let mut d = vec![0.0; r * c];
    for (v, (i, j)) in m.triplet_iter() {
        d[i * c + j] += *v;
    }
    (r, c, d)
}

#[test]
fn help_documents_exit_codes_and_version_prints() {
    let o = trident(&["--help"]);
    assert_eq!(code(&o), 0);
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "Exit codes",
        "2  usage error",
        "3  bad input file",
        "4  I/O",
        "segment",
        "bench",
    ] {
        assert!(out.contains(needle), "help lacks {needle:?}");
    }
    let o = trident(&["--version"]);
    assert_eq!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("trident "));
    assert_eq!(code(&trident(&["no-such-command"])), 2);
    assert_eq!(
        code(&trident(&["maxflow", "x.max", "--backend", "nope"])),
        2
    );
}

#[test]
fn backends_json_parses() {
    let v = json(&trident(&["backends", "--json"]));
    assert_eq!(v["ok"], true);
    assert!(
        v["compiled"]
            .as_array()
            .expect("compiled")
            .iter()
            .any(|b| b == "rayon")
    );
}

#[test]
fn spgemm_matrix_market_round_trip_with_sprs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = dir.path().join("c.mtx");
    let a = fixture("a.mtx");
    let o = trident(&["spgemm", s(&a), s(&a), "-o", s(&c), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["c"]["nnz"], 5);
    // What we write, sprs's own Matrix Market reader reads.
    assert_eq!(
        sprs_dense(&c),
        (3, 3, vec![9.0, 0.0, 12.0, 0.0, 9.0, 0.0, 24.0, 0.0, 33.0])
    );

    // integer symmetric x pattern, and pattern x pattern^T.
    let (sym, pat) = (fixture("sym.mtx"), fixture("pattern.mtx"));
    let o = trident(&["spgemm", s(&sym), s(&pat), "-o", s(&c), "--f32"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // [[2,1,0],[1,0,0],[0,0,4]] x [[1,0],[0,1],[1,0]]
    assert_eq!(sprs_dense(&c), (3, 2, vec![2.0, 1.0, 1.0, 0.0, 4.0, 0.0]));
    let o = trident(&["spgemm", s(&pat), s(&pat), "--transpose-b", "-o", s(&c)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!((sprs_dense(&c).0, sprs_dense(&c).1), (3, 3));
    // Shapes that do not fit: bad input.
    fails(
        &[
            "spgemm",
            s(&a),
            s(&pat),
            "--transpose-b",
            "-o",
            s(&dir.path().join("x.mtx")),
        ],
        3,
        "inner dimensions",
        &dir.path().join("x.mtx"),
    );
}

#[test]
fn spgemm_bad_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("c.mtx");
    let a = fixture("a.mtx");
    let cases = [
        ("truncated.mtx", "line 4: truncated"),
        ("badheader.mtx", "line 1: format \"array\""),
        ("outofrange.mtx", "line 4: row index 3 out of range"),
        ("nan.mtx", "line 4: value nan is not finite"),
    ];
    for (name, needle) in cases {
        let f = fixture(name);
        fails(
            &["spgemm", s(&f), s(&a), "-o", s(&out)],
            3,
            &format!("{name}:{needle}"),
            &out,
        );
    }
    // A header that is not Matrix Market at all.
    let junk = dir.path().join("junk.mtx");
    std::fs::write(&junk, "hello\n1 1 1\n").expect("write");
    fails(
        &["spgemm", s(&junk), s(&a), "-o", s(&out)],
        3,
        "not a Matrix Market file",
        &out,
    );
    // Unwritable output: I/O error, nothing left.
    let bad = dir.path().join("no/such/dir/c.mtx");
    fails(
        &["spgemm", s(&a), s(&a), "-o", s(&bad)],
        4,
        "cannot create",
        &bad,
    );
    // A missing input is an I/O error too.
    fails(
        &[
            "spgemm",
            s(&dir.path().join("missing.mtx")),
            s(&a),
            "-o",
            s(&out),
        ],
        4,
        "cannot open",
        &out,
    );
}

#[test]
fn gemm_npy_f32_and_f64() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b, c) = (
        dir.path().join("a.npy"),
        dir.path().join("b.npy"),
        dir.path().join("c.npy"),
    );
    write_npy(&a, &[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
    write_npy(&b, &[3, 2], &[1.0f64, 0.0, 0.0, 1.0, 1.0, 1.0]);
    let o = trident(&["gemm", s(&a), s(&b), "-o", s(&c), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["precision"], "f64");
    let (shape, data) = read_npy_f64(&c);
    assert_eq!(shape, vec![2, 2]);
    assert_eq!(data, vec![4.0, 5.0, 10.0, 11.0]);
    // Larger, generated: A (64 x 48) times identity.
    let (m, k) = (64usize, 48usize);
    let big: Vec<f32> = (0..m * k).map(|i| (i % 17) as f32 - 8.0).collect();
    let eye: Vec<f32> = (0..k * k)
        .map(|i| if i / k == i % k { 1.0 } else { 0.0 })
        .collect();
    write_npy(&a, &[m as u64, k as u64], &big);
    write_npy(&b, &[k as u64, k as u64], &eye);
    let o = trident(&["gemm", s(&a), s(&b), "-o", s(&c)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let bytes = std::fs::read(&c).expect("c");
    let f = npyz::NpyFile::new(&bytes[..]).expect("npy");
    assert_eq!(f.into_vec::<f32>().expect("f32 output"), big);
    // Small integers times the identity are exact in every mode (TF32 keeps
    // them too).
    for mode in ["strict", "tf32", "tf32x3"] {
        let o = trident(&[
            "gemm",
            s(&a),
            s(&b),
            "-o",
            s(&c),
            "--precision",
            mode,
            "--json",
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(json(&o)["mode"], mode);
        let bytes = std::fs::read(&c).expect("c");
        let f = npyz::NpyFile::new(&bytes[..]).expect("npy");
        assert_eq!(f.into_vec::<f32>().expect("f32 output"), big, "{mode}");
    }
    let o = trident(&["gemm", s(&a), s(&b), "-o", s(&c), "--precision", "fp16"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--precision"), "{}", stderr(&o));
}

#[test]
fn gemm_bad_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b, out) = (
        dir.path().join("a.npy"),
        dir.path().join("b.npy"),
        dir.path().join("c.npy"),
    );
    write_npy(&b, &[2, 2], &[1.0f32, 0.0, 0.0, 1.0]);
    // NaN, named by element and byte offset.
    write_npy(&a, &[2, 2], &[1.0f32, f32::NAN, 0.0, 1.0]);
    fails(
        &["gemm", s(&a), s(&b), "-o", s(&out)],
        3,
        "element (0, 1) is NaN",
        &out,
    );
    // Truncated data.
    write_npy(&a, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0]);
    let mut bytes = std::fs::read(&a).expect("a");
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&a, &bytes).expect("a");
    fails(&["gemm", s(&a), s(&b), "-o", s(&out)], 3, "truncated", &out);
    // Not an npy file.
    std::fs::write(&a, b"P5 not numpy").expect("a");
    fails(
        &["gemm", s(&a), s(&b), "-o", s(&out)],
        3,
        "not a valid .npy header",
        &out,
    );
    // Wrong dtype and wrong rank.
    write_npy(&a, &[2, 2], &[1i32, 2, 3, 4]);
    fails(
        &["gemm", s(&a), s(&b), "-o", s(&out)],
        3,
        "expected float32",
        &out,
    );
    write_npy(&a, &[4], &[1.0f32, 2.0, 3.0, 4.0]);
    fails(
        &["gemm", s(&a), s(&b), "-o", s(&out)],
        3,
        "expected a 2-D array",
        &out,
    );
    // Shapes that do not fit.
    write_npy(&a, &[2, 3], &[1.0f32; 6]);
    fails(
        &["gemm", s(&a), s(&b), "-o", s(&out)],
        3,
        "inner dimensions differ",
        &out,
    );
}

#[test]
fn pairs_from_csv_ply_and_npy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("p.csv");
    let (a, b) = (fixture("a.csv"), fixture("b.ply"));
    let o = trident(&["pairs", s(&a), s(&b), "-o", s(&out), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["mode"], "nearest");
    let text = std::fs::read_to_string(&out).expect("out");
    let b_of: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).expect("b"))
        .collect();
    assert_eq!(b_of, ["0", "0", "2"]);
    // knn 2 from .npy into .csv.
    let an = dir.path().join("a.npy");
    write_npy(&an, &[2, 3], &[0.0f32, 0.0, 0.0, 5.0, 5.0, 4.0]);
    let o = trident(&[
        "pairs",
        s(&an),
        s(&fixture("b.csv")),
        "--knn",
        "2",
        "-o",
        s(&out),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).expect("out");
    assert_eq!(text.lines().next(), Some("a,rank,b,d2"));
    assert_eq!(text.lines().count(), 1 + 4);
    assert!(text.lines().any(|l| l.starts_with("1,0,1,")), "{text}");
    // closest pairs k = 1.
    let o = trident(&["pairs", s(&a), s(&b), "--k", "1", "-o", s(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&out).expect("out").lines().count(),
        2
    );
    // A binary little-endian PLY, generated.
    let ply = dir.path().join("b.ply");
    let mut bytes = b"ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty double z\nend_header\n".to_vec();
    for p in [[9.0f32, 9.0], [0.0, 0.0]] {
        bytes.extend_from_slice(&p[0].to_le_bytes());
        bytes.extend_from_slice(&p[1].to_le_bytes());
        bytes.extend_from_slice(&0.5f64.to_le_bytes());
    }
    std::fs::write(&ply, &bytes).expect("ply");
    let o = trident(&["pairs", s(&a), s(&ply), "-o", s(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(&out)
            .expect("out")
            .contains("0,1,0.25")
    );
    // Truncated binary PLY: byte offset.
    std::fs::write(&ply, &bytes[..bytes.len() - 4]).expect("ply");
    std::fs::remove_file(&out).expect("rm");
    fails(
        &["pairs", s(&a), s(&ply), "-o", s(&out)],
        3,
        "truncated",
        &out,
    );
}

#[test]
fn pairs_bad_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("p.csv");
    let b = fixture("b.csv");
    fails(
        &["pairs", s(&fixture("nan.csv")), s(&b), "-o", s(&out)],
        3,
        "nan.csv:line 2",
        &out,
    );
    fails(
        &["pairs", s(&fixture("truncated.ply")), s(&b), "-o", s(&out)],
        3,
        "truncated.ply:line 9: truncated",
        &out,
    );
    let wrong = dir.path().join("w.npy");
    write_npy(&wrong, &[2, 2], &[0.0f32; 4]);
    fails(
        &["pairs", s(&wrong), s(&b), "-o", s(&out)],
        3,
        "expected N x 3",
        &out,
    );
    let csv = dir.path().join("two.csv");
    std::fs::write(&csv, "1,2,3\n4,5\n").expect("csv");
    fails(
        &["pairs", s(&csv), s(&b), "-o", s(&out)],
        3,
        "line 2: expected `x,y,z`",
        &out,
    );
    let a = fixture("a.csv");
    assert_eq!(
        code(&trident(&[
            "pairs",
            s(&a),
            s(&b),
            "--k",
            "1",
            "--knn",
            "1",
            "-o",
            s(&out)
        ])),
        2
    );
}

#[test]
fn omp_writes_npz() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (d, x, out) = (
        dir.path().join("d.npy"),
        dir.path().join("x.npy"),
        dir.path().join("codes.npz"),
    );
    // n = 3, K = 4: the identity plus (1,1,0)/sqrt2.
    let r = std::f64::consts::FRAC_1_SQRT_2;
    write_npy(
        &d,
        &[3, 4],
        &[1.0, 0.0, 0.0, r, 0.0, 1.0, 0.0, r, 0.0, 0.0, 1.0, 0.0],
    );
    write_npy(&x, &[2, 3], &[2.0, 2.0, 0.0, 0.0, 0.0, 3.0]);
    let o = trident(&[
        "omp",
        "--dict",
        s(&d),
        "--signals",
        s(&x),
        "--sparsity",
        "2",
        "-o",
        s(&out),
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["signals"], 2);
    let file = std::fs::File::open(&out).expect("npz");
    let mut zip = zip::ZipArchive::new(file).expect("a zip archive");
    let mut names: Vec<String> = zip.file_names().map(String::from).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "atoms.npy",
            "coefs.npy",
            "offsets.npy",
            "residual_norm2.npy"
        ]
    );
    let mut read = |name: &str| -> Vec<u8> {
        let mut f = zip.by_name(name).expect("member");
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut v).expect("member data");
        v
    };
    let atoms: Vec<u32> = npyz::NpyFile::new(&read("atoms.npy")[..])
        .expect("npy")
        .into_vec()
        .expect("u32");
    let offsets: Vec<u64> = npyz::NpyFile::new(&read("offsets.npy")[..])
        .expect("npy")
        .into_vec()
        .expect("u64");
    // Signal 0 = (2, 2, 0) picks the diagonal atom 3 first (a second atom may
    // follow on rounding residue); signal 1 = (0, 0, 3) is atom 2 alone.
    assert_eq!((offsets.len(), offsets[2] as usize), (3, atoms.len()));
    assert_eq!((atoms[0], atoms[atoms.len() - 1]), (3, 2));
    assert_eq!(offsets[2] - offsets[1], 1);
    // --error instead, then the usage errors of the rule group.
    let o = trident(&[
        "omp",
        "--dict",
        s(&d),
        "--signals",
        s(&x),
        "--error",
        "1e-9",
        "-o",
        s(&out),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let fresh = dir.path().join("none.npz");
    assert_eq!(
        code(&trident(&[
            "omp",
            "--dict",
            s(&d),
            "--signals",
            s(&x),
            "-o",
            s(&fresh)
        ])),
        2
    );
    // A dictionary whose columns are not unit norm: bad input, with the hint.
    write_npy(&d, &[3, 2], &[2.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
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
            s(&fresh),
        ],
        3,
        "--normalize",
        &fresh,
    );
    let o = trident(&[
        "omp",
        "--dict",
        s(&d),
        "--signals",
        s(&x),
        "--sparsity",
        "1",
        "--normalize",
        "-o",
        s(&fresh),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Signals of the wrong length.
    write_npy(&x, &[1, 2], &[1.0, 1.0]);
    let gone = dir.path().join("gone.npz");
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
            s(&gone),
        ],
        3,
        "signals of length 2",
        &gone,
    );
}

#[test]
fn maxflow_dimacs_and_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cut = dir.path().join("cut.txt");
    let g = fixture("tiny.max");
    let o = trident(&["maxflow", s(&g), "--cut", s(&cut)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("flow 5 "));
    assert_eq!(std::fs::read_to_string(&cut).expect("cut"), "1\n");
    let v = json(&trident(&["maxflow", s(&g), "--json"]));
    assert_eq!(
        (v["flow"].as_i64(), v["nodes"].as_u64()),
        (Some(5), Some(4))
    );
    // Bad files: a parse error names the line; a negative capacity is bad input.
    let bad = dir.path().join("bad.max");
    std::fs::write(&bad, "p max 2 1\nn 1 s\nn 2 t\na 1 x 3\n").expect("w");
    fails(
        &[
            "maxflow",
            s(&bad),
            "--cut",
            s(&cut.with_file_name("cut2.txt")),
        ],
        3,
        "line 4",
        &cut.with_file_name("cut2.txt"),
    );
    std::fs::write(&bad, "p max 2 1\nn 1 s\nn 2 t\na 1 2 -3\n").expect("w");
    fails(
        &["maxflow", s(&bad)],
        3,
        "negative",
        &cut.with_file_name("cut3.txt"),
    );
}

#[test]
fn maxflow_huge_declared_size_is_an_error_not_an_abort() {
    // `p max 4294967295 1`: valid by the format, too large for memory.
    let o = trident(&["maxflow", s(&fixture("huge.max"))]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(stderr(&o).contains("huge.max"), "{}", stderr(&o));
}

/// A `w x h` grey image: a bright rectangle on a dark, noisy background.
fn scene(w: u32, h: u32) -> image::GrayImage {
    image::GrayImage::from_fn(w, h, |x, y| {
        let inside = (w / 4..3 * w / 4).contains(&x) && (h / 4..3 * h / 4).contains(&y);
        let noise = ((x * 7 + y * 13) % 11) as u8;
        image::Luma([if inside { 200 + noise } else { 40 + noise }])
    })
}

#[test]
fn segment_finds_the_rectangle_with_and_without_seeds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (w, h) = (40u32, 24u32); // not square, so a transposed mask would show
    let img = dir.path().join("img.png");
    scene(w, h).save(&img).expect("png");
    let mask = dir.path().join("mask.png");
    let o = trident(&["segment", s(&img), "-o", s(&mask), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["foreground_pixels"], (w / 2 * h / 2) as u64);
    let m = image::open(&mask).expect("mask").to_luma8();
    assert_eq!(m.dimensions(), (w, h));
    assert_eq!(m.get_pixel(w / 2, h / 2).0, [255]);
    assert_eq!(m.get_pixel(1, 1).0, [0]);
    // Scribbles: red inside, blue in a corner; JPEG input.
    let jpg = dir.path().join("img.jpg");
    image::DynamicImage::ImageLuma8(scene(w, h))
        .to_rgb8()
        .save(&jpg)
        .expect("jpeg");
    let seeds = image::RgbImage::from_fn(w, h, |x, y| match (x, y) {
        (20, 12) => image::Rgb([255, 0, 0]),
        (0, 0) => image::Rgb([0, 0, 255]),
        _ => image::Rgb([255, 255, 255]),
    });
    let sp = dir.path().join("seeds.png");
    seeds.save(&sp).expect("seeds");
    let o = trident(&[
        "segment",
        s(&jpg),
        "--seeds",
        s(&sp),
        "-o",
        s(&mask),
        "--lambda",
        "2",
        "--sigma",
        "15",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let m = image::open(&mask).expect("mask").to_luma8();
    assert_eq!((m.get_pixel(20, 12).0, m.get_pixel(0, 0).0), ([255], [0]));
    // Wrong seed size (the transpose of the image's): bad input, no mask.
    let wrong = dir.path().join("wrong.png");
    image::RgbImage::new(h, w).save(&wrong).expect("png");
    let out = dir.path().join("never.png");
    fails(
        &["segment", s(&img), "--seeds", s(&wrong), "-o", s(&out)],
        3,
        "must match",
        &out,
    );
    // Seeds without any foreground scribble.
    fails(
        &["segment", s(&img), "--seeds", s(&wrong), "-o", s(&out)],
        3,
        "",
        &out,
    );
    let blank = dir.path().join("blank.png");
    image::RgbImage::new(w, h).save(&blank).expect("png");
    fails(
        &["segment", s(&img), "--seeds", s(&blank), "-o", s(&out)],
        3,
        "no foreground seeds",
        &out,
    );
    // Not an image; a truncated PNG.
    let junk = dir.path().join("junk.png");
    std::fs::write(&junk, b"not an image").expect("w");
    fails(&["segment", s(&junk), "-o", s(&out)], 3, "junk.png", &out);
    let bytes = std::fs::read(&img).expect("png");
    std::fs::write(&junk, &bytes[..bytes.len() / 2]).expect("w");
    fails(
        &["segment", s(&junk), "-o", s(&out)],
        3,
        "cannot decode",
        &out,
    );
    assert_eq!(
        code(&trident(&[
            "segment",
            s(&img),
            "-o",
            s(&out),
            "--sigma",
            "0"
        ])),
        2
    );
}

#[test]
fn verify_usage_errors_are_exit_2_and_a_run_passes() {
    let o = Command::new(env!("CARGO_BIN_EXE_trident"))
        .args(["verify"])
        .env("TRIDENT_SEED", "zzz")
        .output()
        .expect("run");
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("TRIDENT_SEED"));
    assert_eq!(code(&trident(&["verify", "--primitive", "nope"])), 2);
    assert_eq!(code(&trident(&["verify", "--case", "nope"])), 2);
    assert_eq!(code(&trident(&["verify", "--size", "huge"])), 2);
    assert_eq!(code(&trident(&["verify", "--seed", "x1"])), 2);
    let o = trident(&[
        "verify",
        "--backend",
        "rayon",
        "--primitive",
        "max_flow",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["ok"], true);
    assert!(
        v["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .any(|r| r["backend"] == "rayon")
    );
}

#[test]
fn bench_table_and_svg_plot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("bench.svg");
    let o = trident(&[
        "bench",
        "--case",
        "flow-edge-net-direct",
        "flow-edge-grid-zero-caps",
        "--repeat",
        "1",
        "--backend",
        "rayon",
        "--plot",
        s(&svg),
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["rows"].as_array().expect("rows").len(), 2);
    let text = std::fs::read_to_string(&svg).expect("svg");
    assert!(text.contains("<svg") && text.contains("flow-edge-net-direct"));
    assert_eq!(code(&trident(&["bench", "--case", "nope"])), 2);
}

#[test]
fn bench_times_backends_and_peers_in_one_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("peers.svg");
    let cases = [
        "gemm-edge-outer-f32",
        "spgemm-edge-power-law-row",
        "pairs-edge-duplicates",
    ];
    // A stand-in for benches/peers.py (the real one needs numpy): it answers
    // for the gemm case only, in the results-file format.
    let script = dir.path().join("peers.py");
    std::fs::write(
        &script,
        "import sys\nprint('case\\tpeer\\tmedian_s\\treps\\tcheck\\tnote')\n\
         print('gemm-edge-outer-f32\\tfakenumpy 9.9\\t0.002\\t1\\t\\tA @ B')\n",
    )
    .expect("script");
    let mut args = vec!["bench", "--case"];
    args.extend(cases);
    args.extend(["--repeat", "1", "--backend", "rayon", "--json"]);
    args.extend(["--plot", s(&svg), "--py-peers", s(&script)]);
    let o = trident(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    let rows = v["rows"].as_array().expect("rows");
    for case in cases {
        let of_case: Vec<_> = rows.iter().filter(|r| r["case"] == case).collect();
        assert!(
            of_case
                .iter()
                .any(|r| r["kind"] == "backend" && r["backend"] == "rayon"),
            "{case}: {of_case:?}"
        );
        let peer = of_case
            .iter()
            .find(|r| {
                r["kind"] == "peer" && !r["backend"].as_str().unwrap_or("").starts_with("fake")
            })
            .unwrap_or_else(|| panic!("{case} has no Rust peer: {of_case:?}"));
        assert!(peer["median_s"].as_f64().is_some_and(|t| t > 0.0), "{peer}");
    }
    let svg_text = std::fs::read_to_string(&svg).expect("svg");
    for name in [
        "rayon",
        "nalgebra 0.35 (peer)",
        "sprs 0.11 (peer)",
        "kiddo 6 (peer)",
    ] {
        assert!(svg_text.contains(name), "the plot lacks {name:?}");
    }
    // With python3 on PATH the stand-in's row is there; without, a note says why.
    let has_python = Command::new("python3").arg("--version").output().is_ok();
    let fake = rows
        .iter()
        .any(|r| r["backend"] == "fakenumpy 9.9" && r["kind"] == "peer");
    assert_eq!(fake, has_python, "{v}");
    if has_python {
        assert!(svg_text.contains("fakenumpy 9.9 (peer)"));
    }
    let skipped = v["skipped_peers"].as_array().expect("skipped_peers");
    assert!(
        skipped.iter().any(|p| p["case"] == "pairs-edge-duplicates"),
        "{skipped:?}"
    );
    // A peer script that fails (as peers.py does without numpy): the run goes
    // on, and the reason is reported.
    std::fs::write(&script, "import sys\nsys.exit('No module named numpy')\n").expect("script");
    let o = trident(&[
        "bench",
        "--case",
        "spgemm-edge-1x1",
        "--repeat",
        "1",
        "--backend",
        "rayon",
        "--py-peers",
        s(&script),
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    let reason = v["skipped_peers"][0]["reason"]
        .as_str()
        .expect("a reason")
        .to_string();
    if has_python {
        assert!(reason.contains("No module named numpy"), "{reason}");
    }
    assert!(
        v["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .any(|r| r["kind"] == "peer" && r["backend"] == "sprs 0.11")
    );
}

#[test]
fn readme_command_lines_parse() {
    // Every `trident SUBCOMMAND ...` line of the README's CLI block names a
    // real subcommand whose flags parse (checked with --help appended, which
    // clap answers before touching any file).
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README");
    let lines: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("trident ") && !l.starts_with("trident ="))
        .collect();
    assert!(lines.len() >= 8, "README lost its CLI block");
    for line in lines {
        let mut args: Vec<&str> = line.split_whitespace().skip(1).collect();
        args.push("--help");
        let o = trident(&args);
        assert_eq!(code(&o), 0, "README line {line:?}: {}", stderr(&o));
    }
}

/// `omp --dict D --signals X --sparsity 1 -o OUT`.
fn omp_sparsity_1<'a>(d: &'a Path, x: &'a Path, out: &'a Path) -> Vec<&'a str> {
    let mut args = vec!["omp", "--dict", s(d), "--signals", s(x)];
    args.extend(["--sparsity", "1", "-o", s(out)]);
    args
}

#[test]
fn every_output_is_all_or_nothing_and_an_unwritable_path_is_exit_4() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (d, x, a, b) = (
        dir.path().join("d.npy"),
        dir.path().join("x.npy"),
        dir.path().join("a.npy"),
        dir.path().join("b.npy"),
    );
    write_npy(&d, &[2, 2], &[1.0f64, 0.0, 0.0, 1.0]);
    write_npy(&x, &[1, 2], &[1.0f64, 2.0]);
    write_npy(&a, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0]);
    write_npy(&b, &[2, 2], &[1.0f32, 0.0, 0.0, 1.0]);
    let img = dir.path().join("img.png");
    scene(20, 12).save(&img).expect("png");
    let bad = |ext: &str| dir.path().join(format!("no/such/dir/out.{ext}"));
    let (mtx, csv, max) = (fixture("a.mtx"), fixture("a.csv"), fixture("tiny.max"));
    let outs = [
        bad("mtx"),
        bad("npz"),
        bad("npy"),
        bad("csv"),
        bad("npz"),
        bad("npz"),
        bad("txt"),
        bad("png"),
    ];
    let runs: [Vec<&str>; 8] = [
        vec!["spgemm", s(&mtx), s(&mtx), "-o", s(&outs[0])],
        vec!["spgemm", s(&mtx), s(&mtx), "-o", s(&outs[1])],
        vec!["gemm", s(&a), s(&b), "-o", s(&outs[2])],
        vec!["pairs", s(&csv), s(&csv), "-o", s(&outs[3])],
        vec!["pairs", s(&csv), s(&csv), "--knn", "1", "-o", s(&outs[4])],
        omp_sparsity_1(&d, &x, &outs[5]),
        vec!["maxflow", s(&max), "--cut", s(&outs[6])],
        vec!["segment", s(&img), "-o", s(&outs[7])],
    ];
    for (args, bad) in runs.into_iter().zip(&outs) {
        fails(&args, 4, "out", bad);
        // With --json the failure is one JSON object naming the exit code.
        let mut with_json = args.clone();
        with_json.push("--json");
        let o = trident(&with_json);
        assert_eq!(json(&o)["exit_code"], 4, "{args:?}");
    }
}

#[test]
fn maxflow_bad_dimacs_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = dir.path().join("g.max");
    let cut = dir.path().join("cut.txt");
    let cases = [
        // An arc to a node the header does not declare.
        ("p max 2 1\nn 1 s\nn 2 t\na 1 9 3\n", "line 4"),
        // Fewer arcs than declared (a truncated file).
        (
            "p max 3 2\nn 1 s\nn 3 t\na 1 2 3\n",
            "g.max: at end of file",
        ),
        // Not a max-flow problem line.
        ("p min 2 1\nn 1 s\nn 2 t\na 1 2 3\n", "line 1"),
    ];
    for (text, needle) in cases {
        std::fs::write(&g, text).expect("write");
        fails(&["maxflow", s(&g), "--cut", s(&cut)], 3, needle, &cut);
    }
}

/// `-v` shows the libraries' debug events (the facade's span and choice, the
/// backend's phases) on stderr and leaves stdout alone; `--log` takes a
/// filter and a bad one is a usage error naming the flag.
#[test]
fn verbose_and_log_show_the_libraries_events() {
    let (mtx, dir) = (fixture("a.mtx"), tempfile::tempdir().expect("tempdir"));
    let c = dir.path().join("c.mtx");
    let args = ["spgemm", s(&mtx), s(&mtx), "-o", s(&c)];
    let quiet = trident(&args);
    assert_eq!(code(&quiet), 0, "{}", stderr(&quiet));
    assert_eq!(stderr(&quiet), "");
    for flag in [&["-v"][..], &["--log", "trident_rayon=debug"]] {
        let o = trident(&[&args[..], flag].concat());
        assert_eq!(code(&o), 0, "{flag:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("DEBUG") && err.contains("sparse_gemm"),
            "{flag:?}: {err}"
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("nonzeros") && !out.contains("DEBUG"),
            "{flag:?}: {out}"
        );
    }
    let v = stderr(&trident(&[&args[..], &["-v"]].concat()));
    assert!(
        v.contains("served") && v.contains("backend=\"rayon\""),
        "{v}"
    );
    // The other primitives' phase events (their timing runs only when asked).
    let (d, x, img) = (
        dir.path().join("d.npy"),
        dir.path().join("x.npy"),
        dir.path().join("img.png"),
    );
    write_npy(&d, &[2, 2], &[1.0f64, 0.0, 0.0, 1.0]);
    write_npy(&x, &[1, 2], &[1.0f64, 2.0]);
    scene(20, 12).save(&img).expect("png");
    let (csv, max, out) = (fixture("a.csv"), fixture("tiny.max"), |n: &str| {
        dir.path().join(n)
    });
    let (p1, p2, codes, mask) = (out("p1.csv"), out("p2.csv"), out("codes.npz"), out("m.png"));
    let runs: [Vec<&str>; 5] = [
        vec!["pairs", s(&csv), s(&csv), "--k", "2", "-o", s(&p1)],
        vec!["pairs", s(&csv), s(&csv), "--radius", "10", "-o", s(&p2)],
        omp_sparsity_1(&d, &x, &codes),
        vec!["maxflow", s(&max)],
        vec!["segment", s(&img), "-o", s(&mask)],
    ];
    for run in &runs {
        let o = trident(&[&run[..], &["-v"]].concat());
        assert_eq!(code(&o), 0, "{run:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("DEBUG"), "{run:?}: {}", stderr(&o));
    }
    let o = trident(&[&args[..], &["--log", "a=b=c"]].concat());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--log"), "{}", stderr(&o));
}

#[test]
fn a_successful_run_writes_nothing_to_stderr() {
    // Only the backend asked for is constructed: probing the GPU ones loads
    // the Vulkan loader, whose Mesa device-select layer has libwayland print
    // "error: XDG_RUNTIME_DIR is invalid" when that variable is unset (in a
    // build with the `wgpu` feature).
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a.npy"), dir.path().join("b.npy"));
    write_npy(&a, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0]);
    write_npy(&b, &[2, 2], &[1.0f32, 0.0, 0.0, 1.0]);
    let (mtx, csv, max) = (fixture("a.mtx"), fixture("a.csv"), fixture("tiny.max"));
    let out = |n: &str| dir.path().join(n);
    let (c_mtx, c_npy, p_csv, cut) = (out("c.mtx"), out("c.npy"), out("p.csv"), out("cut.txt"));
    let runs: [Vec<&str>; 4] = [
        vec!["spgemm", s(&mtx), s(&mtx), "-o", s(&c_mtx)],
        vec!["gemm", s(&a), s(&b), "-o", s(&c_npy)],
        vec!["pairs", s(&csv), s(&csv), "--knn", "1", "-o", s(&p_csv)],
        vec!["maxflow", s(&max), "--cut", s(&cut)],
    ];
    // Named and automatic (every compiled backend probed; the binary turns
    // the device-select layer off).
    for backend in [&["--backend", "rayon"][..], &[]] {
        for args in &runs {
            let o = Command::new(env!("CARGO_BIN_EXE_trident"))
                .args(args)
                .args(backend)
                .env_remove("XDG_RUNTIME_DIR")
                .env_remove("TRIDENT_BACKEND")
                .env_remove("NODEVICE_SELECT")
                .env_remove("RUST_LOG")
                .output()
                .expect("run trident");
            assert_eq!(code(&o), 0, "{args:?} {backend:?}: {}", stderr(&o));
            assert_eq!(stderr(&o), "", "{args:?} {backend:?} wrote to stderr");
        }
    }
}

#[test]
fn every_output_option_rejects_an_extension_it_cannot_write() {
    // Checked before any input is read (the inputs here do not exist): a
    // usage error naming what the command writes, and no file.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = |n: &str| dir.path().join(n);
    let cases: [(Vec<&str>, &str, &str); 8] = [
        (
            vec!["spgemm", "a.mtx", "b.mtx", "-o"],
            "c.tif",
            "writes .mtx, .npz",
        ),
        (
            vec!["spgemm", "a.mtx", "b.mtx", "-o"],
            "c",
            "without an extension",
        ),
        (vec!["gemm", "a.npy", "b.npy", "-o"], "c.npz", "writes .npy"),
        (
            vec!["pairs", "a.csv", "b.csv", "-o"],
            "p.mtx",
            "writes .csv, .npy, .npz",
        ),
        (
            vec![
                "omp",
                "--dict",
                "d.npy",
                "--signals",
                "x.npy",
                "--sparsity",
                "1",
                "-o",
            ],
            "c.npy",
            "writes .npz",
        ),
        (vec!["maxflow", "g.max", "--cut"], "cut.csv", "writes .txt"),
        (
            vec!["segment", "i.png", "-o"],
            "m.tif",
            "writes .png, .jpg, .jpeg",
        ),
        (
            vec!["bench", "--case", "x", "--plot"],
            "p.png",
            "writes .svg",
        ),
    ];
    for (mut args, name, needle) in cases {
        let target = out(name);
        args.push(s(&target));
        fails(&args, 2, needle, &target);
    }
}

/// The members of an `.npz` as `(name, dtype descr, shape)`, read with the
/// zip crate and npyz (not with trident-io).
fn npz_members(path: &Path) -> Vec<(String, String, Vec<u64>)> {
    use std::io::Read;
    let mut z = zip::ZipArchive::new(std::fs::File::open(path).expect("npz")).expect("zip");
    (0..z.len())
        .map(|i| {
            let mut f = z.by_index(i).expect("member");
            let name = f.name().trim_end_matches(".npy").to_string();
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).expect("read member");
            let npy = npyz::NpyFile::new(&bytes[..]).expect("npy member");
            let descr = npy.header().dtype().descr().trim_matches('\'').to_string();
            (name, descr, npy.shape().to_vec())
        })
        .collect()
}

/// One member of an `.npz` as values of `T`.
fn npz_member<T: npyz::Deserialize>(path: &Path, member: &str) -> Vec<T> {
    use std::io::Read;
    let mut z = zip::ZipArchive::new(std::fs::File::open(path).expect("npz")).expect("zip");
    let mut f = z.by_name(&format!("{member}.npy")).expect("member");
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).expect("read member");
    npyz::NpyFile::new(&bytes[..])
        .expect("npy")
        .into_vec()
        .expect("values")
}

#[test]
fn spgemm_writes_and_reads_scipy_npz() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (c, c2) = (dir.path().join("c.npz"), dir.path().join("c2.mtx"));
    let a = fixture("a.mtx");
    let o = trident(&["spgemm", s(&a), s(&a), "-o", s(&c)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // scipy.sparse.save_npz's members, in its order, with its dtypes.
    let members = npz_members(&c);
    let want = [
        ("indices", "<i4", vec![5]),
        ("indptr", "<i4", vec![4]),
        ("format", "|S3", vec![]),
        ("shape", "<i8", vec![2]),
        ("data", "<f8", vec![5]),
    ];
    assert_eq!(members.len(), want.len());
    for ((n, d, sh), (wn, wd, wsh)) in members.iter().zip(&want) {
        assert_eq!((n.as_str(), d.as_str(), sh), (*wn, *wd, wsh));
    }
    assert_eq!(npz_member::<i64>(&c, "shape"), [3, 3]);
    assert_eq!(npz_member::<i32>(&c, "indptr"), [0, 2, 3, 5]);
    assert_eq!(npz_member::<f64>(&c, "data"), [9.0, 12.0, 9.0, 24.0, 33.0]);
    // The .npz reads back as an input: C A = A^3, written as Matrix Market.
    let o = trident(&["spgemm", s(&c), s(&a), "-o", s(&c2)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sprs_dense(&c2).0, 3);
    // An .npz that is not a CSR matrix: bad input, naming the member.
    let bad = dir.path().join("bad.npz");
    {
        use std::io::{Read, Write};
        let mut z = zip::ZipArchive::new(std::fs::File::open(&c).expect("npz")).expect("zip");
        let mut w = zip::ZipWriter::new(std::fs::File::create(&bad).expect("create"));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for i in 0..z.len() {
            let mut f = z.by_index(i).expect("member");
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).expect("read");
            if f.name() == "format.npy" {
                let n = bytes.len();
                bytes[n - 3..].copy_from_slice(b"csc");
            }
            w.start_file(f.name(), opts).expect("start");
            w.write_all(&bytes).expect("write");
        }
        w.finish().expect("finish");
    }
    fails(
        &[
            "spgemm",
            s(&bad),
            s(&a),
            "-o",
            s(&dir.path().join("c3.mtx")),
        ],
        3,
        "only csr",
        &dir.path().join("c3.mtx"),
    );
}

#[test]
fn pairs_write_npz_npy_and_euclidean_csv() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a.npy"), dir.path().join("b.npy"));
    write_npy(&a, &[2, 3], &[0.0f32, 0.0, 0.0, 5.0, 5.0, 4.0]);
    write_npy(
        &b,
        &[3, 3],
        &[0.0f32, 0.0, 1.0, 5.0, 5.0, 5.0, 3.0, 4.0, 0.0],
    );
    let out = |n: &str| dir.path().join(n);
    let run = |args: &[&str]| {
        let o = trident(&[args, &["--json"][..]].concat());
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        json(&o)
    };
    // knn 2 as .npz: int64 indices and float32 d2, N x k.
    let knn = out("knn.npz");
    run(&["pairs", s(&a), s(&b), "--knn", "2", "-o", s(&knn)]);
    assert_eq!(
        npz_members(&knn),
        [
            ("indices".into(), "<i8".into(), vec![2, 2]),
            ("d2".into(), "<f4".into(), vec![2, 2])
        ]
    );
    assert_eq!(npz_member::<i64>(&knn, "indices"), [0, 2, 1, 2]);
    assert_eq!(npz_member::<f32>(&knn, "d2"), [1.0, 25.0, 1.0, 21.0]);
    // --euclidean: float64 distances under the name `distances`.
    let v = run(&[
        "pairs",
        s(&a),
        s(&b),
        "--knn",
        "2",
        "--euclidean",
        "-o",
        s(&knn),
    ]);
    assert_eq!(v["distance"], "distance");
    assert_eq!(
        npz_member::<f64>(&knn, "distances"),
        [1.0, 5.0, 1.0, 21f64.sqrt()]
    );
    // Closest pairs as .npz and .npy.
    let cp = out("cp.npz");
    run(&["pairs", s(&a), s(&b), "--k", "1", "-o", s(&cp)]);
    assert_eq!(npz_member::<i64>(&cp, "a"), [0]);
    assert_eq!(npz_member::<i64>(&cp, "b"), [0]);
    let cpn = out("cp.npy");
    run(&["pairs", s(&a), s(&b), "--k", "2", "-o", s(&cpn)]);
    let bytes = std::fs::read(&cpn).expect("npy");
    let f = npyz::NpyFile::new(&bytes[..]).expect("npy");
    assert_eq!(f.shape(), [2, 2]);
    assert_eq!(f.into_vec::<i64>().expect("i64"), [0, 0, 1, 1]);
    // Nearest as .npy: the indices alone.
    let near = out("near.npy");
    run(&["pairs", s(&a), s(&b), "-o", s(&near)]);
    let bytes = std::fs::read(&near).expect("npy");
    let f = npyz::NpyFile::new(&bytes[..]).expect("npy");
    assert_eq!(f.shape(), [2]);
    assert_eq!(f.into_vec::<i64>().expect("i64"), [0, 1]);
    // Euclidean CSV names its column.
    let csv = out("near.csv");
    run(&["pairs", s(&a), s(&b), "--euclidean", "-o", s(&csv)]);
    assert_eq!(
        std::fs::read_to_string(&csv).expect("csv"),
        "a,b,distance\n0,0,1\n1,1,1\n"
    );
}

#[test]
fn pairs_read_lidar_xyz_with_extra_columns_and_a_header() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b, out) = (
        dir.path().join("a.xyz"),
        dir.path().join("b.txt"),
        dir.path().join("p.csv"),
    );
    std::fs::write(
        &a,
        "X Y Z Intensity R G B\n0 0 0 12 255 0 0\n5 5 5 40 0 0 255\n",
    )
    .expect("xyz");
    std::fs::write(&b, "# scan 2\n5 5 4.5 1\n0 0 1 2\n").expect("txt");
    let o = trident(&["pairs", s(&a), s(&b), "-o", s(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&out).expect("out"),
        "a,b,d2\n0,1,1\n1,0,0.25\n"
    );
    // Fewer than three columns: the line is named.
    std::fs::write(&b, "1 2 3\n4 5\n").expect("txt");
    std::fs::remove_file(&out).expect("rm");
    fails(
        &["pairs", s(&a), s(&b), "-o", s(&out)],
        3,
        "b.txt:line 2: expected `x y z` (at least 3 fields), found 2",
        &out,
    );
}

/// Map coordinates given as float64 stay f64: with f32 rounding (half a
/// metre of resolution at 5.3e6) most nearest answers were wrong.
#[test]
fn pairs_keep_f64_coordinates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a.npy"), dir.path().join("b.npy"));
    // A jittered 20 x 20 metre grid around (5e5, 5.3e6, 200); queries between.
    let grid = |off: f64, n: usize| -> Vec<f64> {
        (0..n * n)
            .flat_map(|i| {
                let (x, y) = ((i % n) as f64, (i / n) as f64);
                let j = ((i * 7919) % 13) as f64 * 0.01;
                [5e5 + x + j + off, 5.3e6 + y - j + off, 200.0 + j]
            })
            .collect()
    };
    let (pa, pb) = (grid(0.37, 12), grid(0.0, 20));
    write_npy(&a, &[144, 3], &pa);
    write_npy(&b, &[400, 3], &pb);
    let out = dir.path().join("nn.npz");
    let o = trident(&["pairs", s(&a), s(&b), "-o", s(&out), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["coordinates"], "f64");
    let got = npz_member::<i64>(&out, "indices");
    let d2 = npz_member::<f64>(&out, "d2");
    for i in 0..144 {
        let q = &pa[3 * i..3 * i + 3];
        let dist = |j: usize| -> f64 { (0..3).map(|d| (q[d] - pb[3 * j + d]).powi(2)).sum() };
        let best = (0..400)
            .min_by(|&x, &y| dist(x).total_cmp(&dist(y)).then(x.cmp(&y)))
            .expect("B");
        assert_eq!(got[i], best as i64, "query {i}");
        assert!(
            (d2[i] - dist(best)).abs() <= 1e-9 * dist(best).max(1e-12),
            "query {i}"
        );
    }
    // The same points in float32 stay f32.
    let a32 = dir.path().join("a32.npy");
    write_npy(&a32, &[2, 3], &[0.0f32, 0.0, 0.0, 1.0, 1.0, 1.0]);
    let o = trident(&["pairs", s(&a32), s(&a32), "-o", s(&out), "--json"]);
    assert_eq!(json(&o)["coordinates"], "f32");
}

/// `--radius`: every pair within R in (a, d2, b) order, as CSV and as an
/// NPZ with CSR offsets; `--self`: the pairs i < j of one set; `--max-pairs`
/// exceeded is exit 3 (bad input) with no output.
#[test]
fn pairs_radius_and_self() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    std::fs::write(&a, "x,y,z\n0,0,0\n10,0,0\n").expect("a");
    std::fs::write(&b, "x,y,z\n2,0,0\n1,0,0\n0,3,0\n11,0,0\n").expect("b");
    let csv = dir.path().join("r.csv");
    let o = trident(&["pairs", s(&a), s(&b), "--radius", "2", "-o", s(&csv)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&csv).expect("csv"),
        "a,b,d2\n0,1,1\n0,0,4\n1,3,1\n"
    );
    let npz = dir.path().join("r.npz");
    let o = trident(&[
        "pairs",
        s(&a),
        s(&b),
        "--radius",
        "2",
        "--euclidean",
        "-o",
        s(&npz),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(npz_member::<i64>(&npz, "offsets"), [0, 2, 3]);
    assert_eq!(npz_member::<i64>(&npz, "b"), [1, 0, 3]);
    assert_eq!(npz_member::<f64>(&npz, "distances"), [1.0, 2.0, 1.0]);
    let o = trident(&["pairs", s(&b), "--self", "--radius", "3", "-o", s(&csv)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&csv).expect("csv"),
        "a,b,d2\n0,1,1\n"
    );
    let none = dir.path().join("none.csv");
    fails(
        &[
            "pairs",
            s(&a),
            s(&b),
            "--radius",
            "100",
            "--max-pairs",
            "3",
            "-o",
            s(&none),
        ],
        3,
        "exceeds the limit 3",
        &none,
    );
    fails(
        &["pairs", s(&a), s(&b), "--radius=-1", "-o", s(&none)],
        2,
        "--radius -1",
        &none,
    );
}
