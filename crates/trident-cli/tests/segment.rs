//! `trident segment` beyond scribbles: trimaps and label masks, the colour
//! model, 8-connectivity, 3-D volumes, and every bad input with its exit code
//! and no output left. The same energies are checked against PyMaxflow by
//! `tests/python/test_segment_pymaxflow.py`.

mod common;

use std::path::Path;

use common::*;

/// A `w x h` image: a rectangle (the middle half on both axes) of one colour
/// on another. Red (200, 50, 50) and green (32, 100, 50) have the same grey
/// level, 81, as `image` converts colour.
fn two_colours(w: u32, h: u32, fg: [u8; 3], bg: [u8; 3]) -> image::RgbImage {
    image::RgbImage::from_fn(w, h, |x, y| {
        let inside = (w / 4..3 * w / 4).contains(&x) && (h / 4..3 * h / 4).contains(&y);
        image::Rgb(if inside { fg } else { bg })
    })
}

const RED: [u8; 3] = [200, 50, 50];
const GREEN: [u8; 3] = [32, 100, 50];

fn mask_count(path: &Path) -> usize {
    let m = image::open(path).expect("mask").to_luma8();
    m.pixels().filter(|p| p.0[0] == 255).count()
}

#[test]
fn colour_separates_what_grey_cannot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (w, h) = (32u32, 20u32);
    let (img, mask) = (dir.path().join("img.png"), dir.path().join("mask.png"));
    two_colours(w, h, RED, GREEN).save(&img).expect("png");
    let rect = (w / 2 * h / 2) as u64;
    // Without seeds: a 2-means in RGB; red is the brighter cluster.
    let v = ok_json(&["segment", s(&img), "-o", s(&mask)]);
    assert_eq!(
        (v["features"].as_str(), v["colour_image"].as_bool()),
        (Some("rgb"), Some(true))
    );
    assert_eq!(v["foreground_pixels"], rect);
    assert_eq!(mask_count(&mask), rect as usize);
    let fg_mean = &v["models"]["foreground"]["mean"];
    assert_eq!(fg_mean, &serde_json::json!([200.0, 50.0, 50.0]));
    // Hard seeds from a trimap, with both models.
    let trimap = dir.path().join("trimap.png");
    image::GrayImage::from_fn(w, h, |x, y| match (x, y) {
        (16, 10) => image::Luma([255]),
        (0, 0) => image::Luma([0]),
        _ => image::Luma([128]),
    })
    .save(&trimap)
    .expect("png");
    for model in ["gauss", "hist"] {
        let v = ok_json(&[
            "segment",
            s(&img),
            "--trimap",
            s(&trimap),
            "--model",
            model,
            "-o",
            s(&mask),
        ]);
        assert_eq!(v["foreground_pixels"], rect, "{model}");
        assert_eq!(
            v["seeds"],
            serde_json::json!({"kind": "trimap", "foreground": 1, "background": 1})
        );
    }
    // As grey levels the two colours are one: the data term is 0 everywhere,
    // and the cheapest cut isolates the background seed in its corner (its
    // 2 n-links, 500 each): everything else is foreground.
    let v = ok_json(&[
        "segment",
        s(&img),
        "--trimap",
        s(&trimap),
        "--grey",
        "-o",
        s(&mask),
    ]);
    assert_eq!(v["features"].as_str(), Some("grey"));
    assert_eq!(
        (v["foreground_pixels"].as_u64(), v["cut"].as_i64()),
        (Some(639), Some(1000))
    );
}

/// A uniform `3 x 3` image (or `3 x 3 x 3` volume) with the centre seeded
/// foreground and everything else background: the cut is the centre's
/// n-links, `lambda * 100 / dist` each (lambda 5).
#[test]
fn the_cut_of_the_centre_counts_its_neighbours() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (img, labels, out) = (
        dir.path().join("img.npy"),
        dir.path().join("labels.npy"),
        dir.path().join("mask.npy"),
    );
    write_npy(&img, &[3, 3], &[100u8; 9]);
    let mut l = [2u8; 9];
    l[4] = 1;
    write_npy(&labels, &[3, 3], &l);
    // 500 per axis neighbour, round(500 / sqrt 2) = 354 per diagonal one.
    for (conn, cut, graph) in [("4", 2000, "grid"), ("8", 2000 + 4 * 354, "network")] {
        let v = ok_json(&[
            "segment",
            s(&img),
            "--labels",
            s(&labels),
            "--connectivity",
            conn,
            "-o",
            s(&out),
        ]);
        assert_eq!(
            (v["cut"].as_i64(), v["graph"].as_str()),
            (Some(cut), Some(graph)),
            "{conn}"
        );
        let (shape, mask) = read_npy::<u8>(&out);
        assert_eq!((shape, mask), (vec![3, 3], vec![0, 0, 0, 0, 1, 0, 0, 0, 0]));
    }
    // 3-D: round(500 / sqrt 3) = 289 per corner neighbour.
    write_npy(&img, &[3, 3, 3], &[7.5f32; 27]);
    let mut l = [2u8; 27];
    l[13] = 1;
    write_npy(&labels, &[3, 3, 3], &l);
    for (conn, cut) in [
        ("6", 3000),
        ("18", 3000 + 12 * 354),
        ("26", 3000 + 12 * 354 + 8 * 289),
    ] {
        let v = ok_json(&[
            "segment",
            s(&img),
            "--labels",
            s(&labels),
            "--connectivity",
            conn,
            "--sigma",
            "1",
            "-o",
            s(&out),
        ]);
        assert_eq!(v["cut"].as_i64(), Some(cut), "{conn}");
        let (shape, mask) = read_npy::<u8>(&out);
        assert_eq!(shape, [3, 3, 3]);
        assert_eq!(mask.iter().map(|&m| m as usize).sum::<usize>(), 1);
        assert_eq!(mask[13], 1);
    }
}

#[test]
fn a_volume_is_cut_in_three_dimensions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (vol, labels, out) = (
        dir.path().join("vol.npy"),
        dir.path().join("labels.npy"),
        dir.path().join("mask.npy"),
    );
    // 6 x 8 x 10, a bright 2 x 4 x 5 box with a little texture; z-major.
    let (d, h, w) = (6usize, 8usize, 10usize);
    let inside = |z: usize, y: usize, x: usize| {
        (2..4).contains(&z) && (2..6).contains(&y) && (3..8).contains(&x)
    };
    let mut data = Vec::new();
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                let t = ((x * 7 + y * 13 + z * 5) % 9) as u8;
                data.push(if inside(z, y, x) { 190 + t } else { 50 + t });
            }
        }
    }
    write_npy(&vol, &[d as u64, h as u64, w as u64], &data);
    let v = ok_json(&["segment", s(&vol), "-o", s(&out)]);
    assert_eq!(
        (
            v["volume"].as_bool(),
            v["depth"].as_u64(),
            v["graph"].as_str()
        ),
        (Some(true), Some(6), Some("grid"))
    );
    assert_eq!(v["foreground_pixels"], 40);
    let (shape, mask) = read_npy::<u8>(&out);
    assert_eq!(shape, [6, 8, 10]);
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                assert_eq!(
                    mask[(z * h + y) * w + x],
                    inside(z, y, x) as u8,
                    "({z}, {y}, {x})"
                );
            }
        }
    }
    // Seeded from a label volume, 26-connected: the same box.
    let mut l = vec![0i32; d * h * w];
    l[(3 * h + 4) * w + 5] = 1;
    l[0] = 2;
    write_npy(&labels, &[d as u64, h as u64, w as u64], &l);
    let v = ok_json(&[
        "segment",
        s(&vol),
        "--labels",
        s(&labels),
        "--connectivity",
        "26",
        "-o",
        s(&out),
    ]);
    assert_eq!(
        (v["foreground_pixels"].as_u64(), v["graph"].as_str()),
        (Some(40), Some("network"))
    );
}

#[test]
fn bad_seeds_and_flags_fail_with_their_exit_code_and_no_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = |n: &str| dir.path().join(n);
    let (img, vol, out, npy_out) = (p("img.png"), p("vol.npy"), p("mask.png"), p("mask.npy"));
    two_colours(8, 6, RED, GREEN).save(&img).expect("png");
    write_npy(&vol, &[2, 3, 4], &[10u8; 24]);
    let labels = p("labels.npy");
    let run = |extra: &[&str], input: &Path, o: &Path, want: i32, needles: &[&str]| {
        let mut args = vec!["segment", s(input), "-o", s(o)];
        args.extend(extra);
        fails(&args, want, needles, o);
    };
    // Label masks: a value outside the convention, the wrong shape, no
    // foreground; a lossy trimap; a trimap with no background.
    let mut l = vec![0u8; 48];
    l[8 + 2] = 7;
    write_npy(&labels, &[6, 8], &l);
    run(
        &["--labels", s(&labels)],
        &img,
        &out,
        3,
        &[
            "labels.npy",
            "element (1, 2) is 7",
            "0 (unknown), 1 (foreground) or 2 (background)",
        ],
    );
    write_npy(&labels, &[8, 6], &[0u8; 48]);
    run(
        &["--labels", s(&labels)],
        &img,
        &out,
        3,
        &["labels.npy", "are 8 x 6", "is 6 x 8", "must match"],
    );
    let mut l = vec![0u8; 48];
    l[0] = 2;
    write_npy(&labels, &[6, 8], &l);
    run(
        &["--labels", s(&labels)],
        &img,
        &out,
        3,
        &["no foreground pixels: a label mask marks them 1"],
    );
    let jpg = p("trimap.jpg");
    image::GrayImage::new(8, 6).save(&jpg).expect("jpeg");
    run(
        &["--trimap", s(&jpg)],
        &img,
        &out,
        3,
        &["trimap.jpg", "lossless"],
    );
    let tri = p("trimap.png");
    image::GrayImage::from_pixel(8, 6, image::Luma([255]))
        .save(&tri)
        .expect("png");
    run(
        &["--trimap", s(&tri)],
        &img,
        &out,
        3,
        &["no background pixels: a trimap marks them 0"],
    );
    run(
        &["--labels", s(&p("absent.npy"))],
        &img,
        &out,
        4,
        &["absent.npy", "cannot open"],
    );
    // Usage: two seed sources, bad numbers, connectivity and output for the dimension.
    run(
        &["--trimap", s(&tri), "--labels", s(&labels)],
        &img,
        &out,
        2,
        &["cannot be used with"],
    );
    run(&["--sigma", "abc"], &img, &out, 2, &["--sigma abc", "auto"]);
    run(&["--sigma", "-2"], &img, &out, 2, &["--sigma -2"]);
    run(&["--lambda", "-1"], &img, &out, 2, &["--lambda -1"]);
    run(
        &["--model", "hist", "--bins", "1"],
        &img,
        &out,
        2,
        &["--bins 1"],
    );
    run(
        &["--model", "hist", "--bins", "100"],
        &img,
        &out,
        2,
        &["--bins 100", "at most 64"],
    );
    run(
        &["--connectivity", "6"],
        &img,
        &out,
        2,
        &["is an image, which takes 4 or 8"],
    );
    run(
        &["--connectivity", "5"],
        &img,
        &out,
        2,
        &["invalid value '5'"],
    );
    run(
        &["--connectivity", "8"],
        &vol,
        &npy_out,
        2,
        &["is a volume, which takes 6, 18 or 26"],
    );
    run(
        &[],
        &vol,
        &out,
        2,
        &["the mask of a volume is written as .npy"],
    );
    run(
        &["--seeds", s(&img)],
        &vol,
        &npy_out,
        2,
        &["--seeds takes a scribble image"],
    );
    // Bad arrays: 4-D, empty, NaN, a dtype numpy has but segment does not read.
    write_npy(&vol, &[1, 2, 3, 4], &[1u8; 24]);
    run(
        &[],
        &vol,
        &npy_out,
        3,
        &[
            "vol.npy",
            "expected Y x X (an image) or Z x Y x X (a volume)",
        ],
    );
    write_npy::<u8>(&vol, &[0, 3, 4], &[]);
    run(&[], &vol, &npy_out, 3, &["vol.npy", "no elements"]);
    let mut f = vec![1.0f64; 24];
    f[6] = f64::NAN;
    write_npy(&vol, &[2, 3, 4], &f);
    run(
        &[],
        &vol,
        &npy_out,
        3,
        &["vol.npy", "element (0, 1, 2) is NaN"],
    );
    write_npy(&vol, &[2, 3, 4], &[1.5f64; 24]);
    write_npy(&labels, &[2, 3, 4], &[0.5f64; 24]);
    run(
        &["--labels", s(&labels)],
        &vol,
        &npy_out,
        3,
        &["element (0, 0, 0) is 0.5"],
    );
}

#[test]
fn help_states_the_energy_and_the_seed_conventions() {
    let o = trident(&["segment", "--help"]);
    assert_eq!(code(&o), 0);
    let help = stdout(&o);
    for needle in [
        "E(L) = sum_p D_p(L_p)",
        "w_pq = lambda exp(-|I_p - I_q|^2 / (2 sigma^2)) / dist(p, q)",
        "--trimap",
        "0 background, 255",
        "0 unknown, 1 foreground, 2",
        "Z x Y x X",
        "a general network",
        "--connectivity",
    ] {
        assert!(
            help.contains(needle),
            "segment --help lacks {needle:?}:\n{help}"
        );
    }
}
