//! Every writer's output reads back equal (bit for bit: binary formats store
//! the bits, text formats print the shortest decimals that read back to
//! them), on random valid data: sparse matrices with empty rows, arrays of
//! every dtype and shape, point sets, images, masks, seeds, flow networks.
//! Where an independent library reads the format (sprs for Matrix Market,
//! npyz for NPY), it reads our output too, and we read its.

use proptest::prelude::*;
use trident_core::{CsrMatrix, FlowArc, FlowNetwork, Point, Scalar};
use trident_io::img::{self, Image, ImageFormat, Seed};
use trident_io::npy::{self, Array, Data};
use trident_io::{dimacs, mtx, npz, ply, points, sparse};

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(64)
}

/// Any finite f64: every exponent, subnormals, -0.0, the extremes.
fn finite_f64() -> BoxedStrategy<f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        Just(-0.0),
        Just(f64::MAX),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        -1e6..1e6f64,
    ]
    .prop_filter("finite", |x| x.is_finite())
    .boxed()
}

/// Any finite f32, likewise.
fn finite_f32() -> BoxedStrategy<f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        Just(-0.0f32),
        Just(f32::MAX),
        Just(1e-45f32),
        -1e3..1e3f32,
    ]
    .prop_filter("finite", |x| x.is_finite())
    .boxed()
}

/// A sparse matrix with empty rows (density up to a half), values from `v`.
fn csr<T: Scalar + std::fmt::Debug>(
    v: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = CsrMatrix<T>> {
    (0usize..12, 1usize..12).prop_flat_map(move |(rows, cols)| {
        proptest::collection::vec(
            proptest::collection::vec((0..cols as u32, v.clone()), 0..=cols / 2),
            rows,
        )
        .prop_map(move |rs| {
            let mut offsets = vec![0];
            let (mut idx, mut val) = (Vec::new(), Vec::new());
            for mut r in rs {
                r.sort_by_key(|e| e.0);
                r.dedup_by_key(|e| e.0);
                for (c, x) in r {
                    idx.push(c);
                    val.push(x);
                }
                offsets.push(idx.len());
            }
            CsrMatrix::new(rows, cols, offsets, idx, val).expect("a valid CSR")
        })
    })
}

fn bits<T: Scalar>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

fn same_csr<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) {
    assert_eq!((a.rows(), a.cols()), (b.rows(), b.cols()));
    assert_eq!(a.offsets(), b.offsets());
    assert_eq!(a.indices(), b.indices());
    assert_eq!(bits(a.values()), bits(b.values()));
}

fn point_bits(p: &[Point]) -> Vec<u32> {
    p.as_flattened().iter().map(|x| x.to_bits()).collect()
}

fn points_strategy() -> impl Strategy<Value = Vec<Point>> {
    proptest::collection::vec(
        (finite_f32(), finite_f32(), finite_f32()).prop_map(|(x, y, z)| [x, y, z]),
        0..40,
    )
}

/// An array of `dtype` index `t` with random bits (NaNs included: the binary
/// format keeps them) and 0 to 4 dimensions of 0 to 4.
fn array() -> impl Strategy<Value = Array> {
    (0usize..7, proptest::collection::vec(0u64..5, 0..5)).prop_flat_map(|(t, shape)| {
        let n = shape.iter().product::<u64>() as usize;
        proptest::collection::vec(any::<u64>(), n).prop_map(move |raw| {
            let data = match t {
                0 => Data::F32(raw.iter().map(|&x| f32::from_bits(x as u32)).collect()),
                1 => Data::F64(raw.iter().map(|&x| f64::from_bits(x)).collect()),
                2 => Data::I32(raw.iter().map(|&x| x as i32).collect()),
                3 => Data::I64(raw.iter().map(|&x| x as i64).collect()),
                4 => Data::U32(raw.iter().map(|&x| x as u32).collect()),
                // Byte strings of 1 to 4 bytes.
                5 => Data::Bytes {
                    width: 1 + raw.first().map_or(0, |&x| x % 4) as usize,
                    bytes: raw
                        .iter()
                        .flat_map(|&x| x.to_le_bytes())
                        .take(raw.len() * (1 + raw.first().map_or(0, |&x| x % 4) as usize))
                        .collect(),
                },
                _ => Data::U64(raw.clone()),
            };
            Array {
                shape: shape.clone(),
                data,
            }
        })
    })
}

/// Arrays equal to the bit (`PartialEq` would call NaN unequal to itself).
fn same_array(a: &Array, b: &Array) {
    assert_eq!(a.shape, b.shape);
    let raw = |d: &Data| -> Vec<u64> {
        match d {
            Data::F32(v) => v.iter().map(|x| x.to_bits() as u64).collect(),
            Data::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
            Data::I32(v) => v.iter().map(|&x| x as u64).collect(),
            Data::I64(v) => v.iter().map(|&x| x as u64).collect(),
            Data::U32(v) => v.iter().map(|&x| x as u64).collect(),
            Data::U64(v) => v.clone(),
            Data::Bytes { bytes, .. } => bytes.iter().map(|&b| b as u64).collect(),
        }
    };
    assert_eq!(a.data.dtype(), b.data.dtype());
    assert_eq!(raw(&a.data), raw(&b.data));
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mtx_f64_round_trip(m in csr(finite_f64())) {
        let mut out = Vec::new();
        mtx::write(&mut out, &m).unwrap();
        same_csr(&mtx::read::<f64>(&out[..]).unwrap(), &m);
        // sprs, an independent reader, reads the same entries.
        let t: sprs::TriMat<f64> =
            sprs::io::read_matrix_market_from_bufread(&mut &out[..]).unwrap();
        let mut entries: Vec<(usize, usize, u64)> =
            t.triplet_iter().map(|(v, (i, j))| (i, j, v.to_bits())).collect();
        entries.sort();
        let mut ours = Vec::new();
        for i in 0..m.rows() {
            let (c, v) = m.row(i);
            ours.extend(c.iter().zip(v).map(|(&j, x)| (i, j as usize, x.to_bits())));
        }
        prop_assert_eq!(entries, ours);
    }

    #[test]
    fn mtx_f32_round_trip(m in csr(finite_f32())) {
        let mut out = Vec::new();
        mtx::write(&mut out, &m).unwrap();
        same_csr(&mtx::read::<f32>(&out[..]).unwrap(), &m);
    }

    #[test]
    fn scipy_csr_npz_round_trip(m in csr(finite_f64()), m32 in csr(finite_f32())) {
        let bytes = npz::encode_csr(&m).unwrap();
        same_csr(&npz::read_csr::<f64>(&bytes).unwrap(), &m);
        same_csr(&sparse::read::<f64>(&bytes, sparse::Format::Npz).unwrap(), &m);
        let bytes = npz::encode_csr(&m32).unwrap();
        same_csr(&npz::read_csr::<f32>(&bytes).unwrap(), &m32);
        // The generic reader sees scipy's five members.
        let names: Vec<String> = npz::read(&bytes).unwrap().into_iter().map(|(n, _)| n).collect();
        prop_assert_eq!(names, ["indices", "indptr", "format", "shape", "data"]);
    }

    #[test]
    fn npy_array_round_trip(a in array()) {
        let bytes = npy::encode_array(&a).unwrap();
        same_array(&npy::read_array(&bytes).unwrap(), &a);
        // npyz reads what we write.
        let f = npyz::NpyFile::new(&bytes[..]).unwrap();
        prop_assert_eq!(f.shape(), &a.shape[..]);
        if let Data::U64(v) = &a.data {
            prop_assert_eq!(&f.into_vec::<u64>().unwrap(), v);
        }
    }

    #[test]
    fn npy_read_npyz_output_in_both_orders(
        (rows, cols, v) in (0usize..6, 0usize..6).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), proptest::collection::vec(finite_f64(), r * c))
        }),
        fortran in any::<bool>(),
    ) {
        use npyz::WriterBuilder;
        // npyz writes a Fortran file from the column-major values.
        let stored: Vec<f64> = if fortran {
            (0..rows * cols).map(|k| v[(k % rows.max(1)) * cols + k / rows.max(1)]).collect()
        } else {
            v.clone()
        };
        let mut bytes = Vec::new();
        let order = if fortran { npyz::Order::Fortran } else { npyz::Order::C };
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&[rows as u64, cols as u64])
            .order(order)
            .writer(&mut bytes)
            .begin_nd()
            .unwrap();
        w.extend(stored.iter().copied()).unwrap();
        w.finish().unwrap();
        let m = npy::read_matrix(&bytes).unwrap();
        prop_assert_eq!((m.rows, m.cols), (rows, cols));
        prop_assert_eq!(bits(&m.to_f64()), bits(&v));
        let a = npy::read_array(&bytes).unwrap();
        same_array(&a, &Array { shape: vec![rows as u64, cols as u64], data: Data::F64(v) });
    }

    #[test]
    fn npy_matrix_round_trip_f32(
        (rows, cols, v) in (0usize..6, 0usize..6).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), proptest::collection::vec(finite_f32(), r * c))
        }),
    ) {
        let bytes = npy::encode(&[rows as u64, cols as u64], &v).unwrap();
        let m = npy::read_matrix(&bytes).unwrap();
        prop_assert!(!m.is_f64());
        prop_assert_eq!((m.rows, m.cols), (rows, cols));
        prop_assert_eq!(bits(&m.to_f32()), bits(&v));
    }

    #[test]
    fn npz_round_trip(arrays in proptest::collection::vec(array(), 0..4)) {
        let members: Vec<(String, Array)> = arrays
            .into_iter()
            .enumerate()
            .map(|(i, a)| (format!("m{i}"), a))
            .collect();
        let bytes = npz::encode_arrays(&members).unwrap();
        let back = npz::read(&bytes).unwrap();
        prop_assert_eq!(back.len(), members.len());
        for ((n0, a0), (n1, a1)) in members.iter().zip(&back) {
            prop_assert_eq!(n0, n1);
            same_array(a0, a1);
        }
    }

    #[test]
    fn ply_round_trip(p in points_strategy()) {
        let mut bin = Vec::new();
        ply::write_binary(&mut bin, &p).unwrap();
        prop_assert_eq!(point_bits(&ply::read(&bin).unwrap()), point_bits(&p));
        let mut text = Vec::new();
        ply::write_ascii(&mut text, &p).unwrap();
        prop_assert_eq!(point_bits(&ply::read(&text).unwrap()), point_bits(&p));
    }

    #[test]
    fn points_text_and_npy_round_trip(p in points_strategy()) {
        let mut csv = Vec::new();
        points::write_csv(&mut csv, &p).unwrap();
        prop_assert_eq!(point_bits(&points::read_text(&csv[..]).unwrap()), point_bits(&p));
        let mut xyz = Vec::new();
        points::write_xyz(&mut xyz, &p).unwrap();
        prop_assert_eq!(point_bits(&points::read_text(&xyz[..]).unwrap()), point_bits(&p));
        let mut n = Vec::new();
        points::write_npy(&mut n, &p).unwrap();
        prop_assert_eq!(point_bits(&points::read_npy(&n).unwrap()), point_bits(&p));
        for (bytes, format) in [(&csv, points::Format::Text), (&n, points::Format::Npy)] {
            prop_assert_eq!(point_bits(&points::read(bytes, format).unwrap()), point_bits(&p));
        }
    }

    #[test]
    fn images_masks_and_seeds_round_trip(
        (w, h, raw) in (1u32..24, 1u32..24).prop_flat_map(|(w, h)| {
            (Just(w), Just(h), proptest::collection::vec(any::<u8>(), (w * h) as usize))
        }),
    ) {
        let gray = Image { width: w, height: h, pixels: raw.clone() };
        let mut png = Vec::new();
        img::write_gray(&mut png, &gray, ImageFormat::Png).unwrap();
        prop_assert_eq!(&img::read_gray(&png).unwrap(), &gray);

        let mask = Image { width: w, height: h, pixels: raw.iter().map(|&x| x & 1 == 1).collect() };
        let mut png = Vec::new();
        img::write_mask(&mut png, &mask, ImageFormat::Png).unwrap();
        prop_assert_eq!(&img::read_mask(&png).unwrap(), &mask);

        let seeds = Image {
            width: w,
            height: h,
            pixels: raw.iter().map(|&x| match x % 3 {
                0 => Seed::None,
                1 => Seed::Foreground,
                _ => Seed::Background,
            }).collect(),
        };
        let mut png = Vec::new();
        img::write_seeds(&mut png, &seeds).unwrap();
        prop_assert_eq!(&img::read_seeds(&png).unwrap(), &seeds);
    }

    #[test]
    fn dimacs_round_trip(
        (n, arcs) in (2usize..20).prop_flat_map(|n| {
            (Just(n), proptest::collection::vec((0..n as u32, 0..n as u32, 0i64..i64::MAX / 64), 0..30))
        }),
    ) {
        let arcs = arcs.into_iter().map(|(from, to, cap)| FlowArc { from, to, cap }).collect();
        let g = FlowNetwork::new(n, 0, n as u32 - 1, arcs).unwrap();
        let mut out = Vec::new();
        dimacs::write(&mut out, &g).unwrap();
        prop_assert_eq!(dimacs::read(&out[..]).unwrap(), g);
    }
}

/// A JPEG mask of solid regions reads back as written (the threshold at 128
/// absorbs the codec's ringing on blocks of one value).
#[test]
fn jpeg_mask_of_solid_blocks_reads_back() {
    let (w, h) = (32u32, 16u32);
    let mask = Image {
        width: w,
        height: h,
        pixels: (0..w * h).map(|i| (i % w) < 16).collect(),
    };
    let mut jpg = Vec::new();
    img::write_mask(&mut jpg, &mask, ImageFormat::Jpeg).unwrap();
    assert_eq!(img::read_mask(&jpg).unwrap(), mask);
}

#[test]
fn space_separated_xyz_reads() {
    let text = "# scan\n1 2 3\n  4.5\t-6   7e-1 \n";
    assert_eq!(
        points::read_text(text.as_bytes()).unwrap(),
        [[1.0, 2.0, 3.0], [4.5, -6.0, 0.7]]
    );
}

/// LiDAR exports: extra columns ignored, headers naming x, y, z pick the
/// columns, comments at line ends, CRLF, quoted CSV fields.
#[test]
fn lidar_style_text_reads() {
    let xyz = |s: &str| points::read_xyz(s.as_bytes()).unwrap();
    let csv = |s: &str| points::read_csv(s.as_bytes()).unwrap();
    let want = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    assert_eq!(xyz("1 2 3 40 255 0 0\n4 5 6 41 0 255 0\n"), want);
    assert_eq!(xyz("1 2 3 # first\r\n\n4\t5\t6 7\r\n"), want);
    assert_eq!(xyz("Intensity X Y Z\n40 1 2 3\n41 4 5 6\n"), want);
    assert_eq!(xyz("//X Y Z\n1 2 3\n4 5 6\n"), want);
    assert_eq!(csv("//X,Y,Z,Intensity\n1,2,3,40\n4,5,6,41\n"), want);
    assert_eq!(csv("id,z,y,x\n0,3,2,1\n1,6,5,4\n"), want);
    assert_eq!(csv("# exported\n\"1\", 2 ,3,\"a, b\"\r\n4,5,6\n"), want);
    // Rows of different lengths, a label in the fourth column of data rows.
    assert_eq!(csv("1,2,3,ground\n4,5,6\n"), want);
    // A .xyz / .txt with commas is CSV.
    assert_eq!(
        points::read(b"x,y,z,i\n1,2,3,0\n4,5,6,0\n", points::Format::Text).unwrap(),
        want
    );
}

/// The members of a CSR `.npz` byte for byte as the NPY format specifies
/// them and numpy writes them: `format` a 0-d `|S3` array holding `csr`,
/// `shape` two `<i8`, index arrays `<i4` while everything fits int32.
#[test]
fn scipy_csr_npz_members_follow_the_npy_spec() {
    let m = CsrMatrix::new(2, 3, vec![0, 2, 3], vec![0, 2, 1], vec![1.0f32, 2.0, 3.0]).unwrap();
    let members = npz::read(&npz::encode_csr(&m).unwrap()).unwrap();
    let get = |n: &str| &members.iter().find(|(k, _)| k == n).unwrap().1;
    assert_eq!(get("format").shape, Vec::<u64>::new());
    assert_eq!(
        get("format").data,
        Data::Bytes {
            width: 3,
            bytes: b"csr".to_vec()
        }
    );
    assert_eq!(get("shape").data, Data::I64(vec![2, 3]));
    assert_eq!(get("indptr").data, Data::I32(vec![0, 2, 3]));
    assert_eq!(get("indices").data, Data::I32(vec![0, 2, 1]));
    assert_eq!(get("data").data, Data::F32(vec![1.0, 2.0, 3.0]));
    // The exact bytes of the 0-d byte string: magic, version 1.0, a header
    // of 118 bytes (10 + 118 = 128, a multiple of 64) ending in a newline.
    let mut format = Vec::new();
    npy::write_bytes(&mut format, &[], 3, b"csr").unwrap();
    let dict = "{'descr': '|S3', 'fortran_order': False, 'shape': (), }";
    let mut want = b"\x93NUMPY\x01\x00".to_vec();
    want.extend_from_slice(&118u16.to_le_bytes());
    want.extend_from_slice(dict.as_bytes());
    want.resize(10 + 117, b' ');
    want.push(b'\n');
    want.extend_from_slice(b"csr");
    assert_eq!(format, want);
}

/// What scipy allows and CSR here does not: unsorted columns and duplicates
/// in a row are sorted and summed.
#[test]
fn scipy_csr_npz_with_unsorted_rows_reads_sorted() {
    let enc = |name: &str, a: Array| (name.to_string(), npy::encode_array(&a).unwrap());
    let arr = |shape: Vec<u64>, data: Data| Array { shape, data };
    let members = vec![
        enc("indices", arr(vec![3], Data::I64(vec![2, 0, 2]))),
        enc("indptr", arr(vec![2], Data::I64(vec![0, 3]))),
        enc(
            "format",
            arr(
                vec![],
                Data::Bytes {
                    width: 3,
                    bytes: b"csr".to_vec(),
                },
            ),
        ),
        enc("shape", arr(vec![2], Data::I64(vec![1, 3]))),
        enc("data", arr(vec![3], Data::F64(vec![1.0, 2.0, 4.0]))),
    ];
    let m: CsrMatrix<f64> = npz::read_csr(&npz::encode(&members).unwrap()).unwrap();
    assert_eq!(m.indices(), [0, 2]);
    assert_eq!(m.values(), [2.0, 5.0]);
}

/// Neighbour results read back by the NPZ/NPY readers with the shapes, names
/// and dtypes the module documents, and as CSV with the named columns.
#[test]
fn neighbor_results_in_every_format() {
    use trident_io::neighbors::{self, Distance, Format};
    let idx = [3u32, 1, 0, 2, 2, 4];
    let d2 = [0.5f32, 1.0, 2.0, 3.0, 4.0, 5.0];
    let member = |bytes: &[u8], name: &str| {
        npz::read(bytes)
            .unwrap()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no member {name}"))
            .1
    };
    // knn, 3 queries x 2, squared f32.
    let mut out = Vec::new();
    neighbors::write_knn(&mut out, Format::Npz, 3, 2, &idx, &d2, Distance::Squared).unwrap();
    let i = member(&out, "indices");
    assert_eq!(
        (i.shape, i.data),
        (vec![3, 2], Data::I64(vec![3, 1, 0, 2, 2, 4]))
    );
    assert_eq!(member(&out, "d2").data, Data::F32(d2.to_vec()));
    let mut out = Vec::new();
    neighbors::write_knn(&mut out, Format::Npy, 3, 2, &idx, &d2, Distance::Squared).unwrap();
    assert_eq!(npy::read_array(&out).unwrap().shape, [3, 2]);
    // nearest, Euclidean f64.
    let d = [1.5f64, 0.25, 1e-300];
    let mut out = Vec::new();
    neighbors::write_nearest(&mut out, Format::Npz, &idx[..3], &d, Distance::Euclidean).unwrap();
    assert_eq!(member(&out, "indices").shape, [3]);
    assert_eq!(member(&out, "distances").data, Data::F64(d.to_vec()));
    let mut out = Vec::new();
    neighbors::write_nearest(&mut out, Format::Csv, &idx[..3], &d, Distance::Euclidean).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "a,b,distance\n0,3,1.5\n1,1,0.25\n2,0,1e-300\n"
    );
    // closest pairs.
    let mut out = Vec::new();
    neighbors::write_pairs(
        &mut out,
        Format::Npz,
        &[2, 0],
        &[5, 1],
        &d2[..2],
        Distance::Squared,
    )
    .unwrap();
    assert_eq!(member(&out, "a").data, Data::I64(vec![2, 0]));
    assert_eq!(member(&out, "b").data, Data::I64(vec![5, 1]));
    let mut out = Vec::new();
    neighbors::write_pairs(
        &mut out,
        Format::Npy,
        &[2, 0],
        &[5, 1],
        &d2[..2],
        Distance::Squared,
    )
    .unwrap();
    let ab = npy::read_array(&out).unwrap();
    assert_eq!(
        (ab.shape, ab.data),
        (vec![2, 2], Data::I64(vec![2, 5, 0, 1]))
    );
    let mut out = Vec::new();
    neighbors::write_pairs(
        &mut out,
        Format::Csv,
        &[2, 0],
        &[5, 1],
        &d2[..2],
        Distance::Squared,
    )
    .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "a,b,d2\n2,5,0.5\n0,1,1\n");
    // Lengths that do not match the shape are an error, not a short file.
    let mut out = Vec::new();
    assert!(
        neighbors::write_knn(&mut out, Format::Csv, 4, 2, &idx, &d2, Distance::Squared).is_err()
    );
    assert!(out.is_empty());
    // k = 0: an empty N x 0 array.
    let mut out = Vec::new();
    neighbors::write_knn::<f32>(&mut out, Format::Npz, 3, 0, &[], &[], Distance::Squared).unwrap();
    assert_eq!(member(&out, "indices").shape, [3, 0]);
}
