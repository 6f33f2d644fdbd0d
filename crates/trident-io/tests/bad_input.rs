//! Bad files: each reader answers a clear error saying where (line, byte,
//! header, member) and what is wrong, and sizes a header declares never make
//! it allocate before the data proves them.

use trident_core::CsrMatrix;
use trident_io::img::{self, Image, ImageFormat};
use trident_io::{At, Error, Limits, mtx, npy, npz, ply, points};

/// The message of `r`'s error, which must contain every one of `needles`.
fn fails<T: std::fmt::Debug>(r: trident_io::Result<T>, needles: &[&str]) -> Error {
    let e = r.expect_err("a bad file must be an error");
    let msg = e.to_string();
    for n in needles {
        assert!(msg.contains(n), "{msg:?} lacks {n:?}");
    }
    e
}

fn at(e: &Error) -> At {
    match e {
        Error::Format { at, .. } => at.clone(),
        other => panic!("expected a format error, got {other:?}"),
    }
}

fn header(h: &str) -> Vec<u8> {
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(h.len() as u16).to_le_bytes());
    b.extend_from_slice(h.as_bytes());
    b
}

#[test]
fn matrix_market() {
    let read = |s: &str| mtx::read::<f64>(s.as_bytes());
    let e = fails(read(""), &["line 1", "empty file"]);
    assert_eq!(at(&e), At::Line(1));
    fails(
        read("%%MatrixMarket matrix array real general\n2 2\n"),
        &["line 1: format \"array\""],
    );
    fails(read("hello\n"), &["not a Matrix Market file"]);
    fails(
        read("%%MatrixMarket matrix coordinate complex general\n"),
        &["field \"complex\""],
    );
    fails(
        read("%%MatrixMarket matrix coordinate real general\n% c\n2 2\n"),
        &["line 3", "ROWS COLS ENTRIES"],
    );
    fails(
        read("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n"),
        &["line 3: truncated", "declares 2 entries"],
    );
    fails(
        read("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n"),
        &["line 3: row index 3 out of range 1..=2"],
    );
    fails(
        read("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 inf\n"),
        &["line 3: value inf is not finite"],
    );
    fails(
        read("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 2\n"),
        &["line 4: more entries than the 1"],
    );
    fails(
        read("%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n"),
        &["line 3", "above the diagonal"],
    );
    fails(
        mtx::read::<f64>(&b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\xff\n"[..]),
        &["line 3", "not UTF-8"],
    );
    fails(
        mtx::read::<f32>(
            "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1e300\n".as_bytes(),
        ),
        &["line 3", "does not fit f32"],
    );
    // Duplicates that sum past f64: the core's CSR check, named.
    let e = fails(
        read("%%MatrixMarket matrix coordinate real general\n1 2 2\n1 1 1.7e308\n1 1 1.7e308\n"),
        &["not finite"],
    );
    assert!(matches!(e, Error::Core(_)), "{e:?}");
    // 10^12 entries declared, two present: an error after two lines, no
    // allocation of the declared size.
    fails(
        read(
            "%%MatrixMarket matrix coordinate real general\n1000000 1000000 1000000000000\n1 1 1\n",
        ),
        &["truncated", "declares 1000000000000 entries"],
    );
    fails(
        read("%%MatrixMarket matrix coordinate real general\n4294967296 1 0\n"),
        &["exceeds the 4294967295 rows/columns"],
    );
    // u32::MAX rows with no entries: the offsets alone are 32 GiB, refused
    // under a limit before any allocation.
    let small = Limits { max_alloc: 1 << 20 };
    fails(
        mtx::read_with::<f64>(
            "%%MatrixMarket matrix coordinate real general\n4294967295 1 0\n".as_bytes(),
            &small,
        ),
        &["line 2", "CSR offsets of 4294967295 rows", "over the limit"],
    );
    let ok: CsrMatrix<f64> = mtx::read_with(
        "%%MatrixMarket matrix coordinate real general\n1000 1 0\n".as_bytes(),
        &small,
    )
    .unwrap();
    assert_eq!(ok.rows(), 1000);
}

#[test]
fn npy() {
    let e = fails(
        npy::read_array(b"P5 not numpy"),
        &["not a valid .npy header"],
    );
    assert_eq!(at(&e), At::Byte(0));
    fails(
        npy::read_array(b"\x93NUMPY\x04\x00\x00\x00"),
        &["version 4.0"],
    );
    fails(
        npy::read_array(b"\x93NUMPY\x01\x00\xff\xff{"),
        &["byte 8", "truncated", "declares 65535 bytes"],
    );
    // A version 2.0 header claiming 4 GiB: an error, not a 4 GiB allocation.
    fails(
        npy::read_array(b"\x93NUMPY\x02\x00\xff\xff\xff\xff{}"),
        &["declares 4294967295 bytes"],
    );
    fails(
        npy::read_array(&header("{'descr': '<f4', 'shape': (2,), }")),
        &["no 'fortran_order' key"],
    );
    fails(
        npy::read_array(&header(
            "{'descr': '<f4', 'fortran_order': 1, 'shape': (2,), }",
        )),
        &["expected a string, True, False or a tuple"],
    );
    fails(
        npy::read_array(&header(
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
        )),
        &["record dtypes are not read"],
    );
    fails(
        npy::read_array(&header(
            "{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }",
        )),
        &["header", "dtype \"<c16\""],
    );
    fails(
        npy::read_array(&header(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
        )),
        &["larger than 2^64 - 1"],
    );
    // Shapes whose product overflows, or that the file does not hold.
    fails(
        npy::read_array(&header(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
        )),
        &["too large"],
    );
    fails(
        npy::read_array(&header(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000), }",
        )),
        &["truncated", "needs 8000000000000 bytes"],
    );
    // A zero dimension makes the array empty whatever the others say.
    let a = npy::read_array(&header(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 18446744073709551615), }",
    ))
    .unwrap();
    assert!(a.data.is_empty());
    fails(
        npy::read_matrix(&npy::encode(&[4], &[1.0f32; 4]).unwrap()),
        &["expected a 2-D array"],
    );
    fails(
        npy::read_matrix(&npy::encode(&[2, 2], &[1i32; 4]).unwrap()),
        &["expected float32"],
    );
    let e = fails(
        npy::read_matrix(&npy::encode(&[2, 2], &[1.0f32, f32::NAN, 0.0, 1.0]).unwrap()),
        &["element (0, 1) is NaN"],
    );
    // The header takes 128 bytes; element 1 starts at byte 132.
    assert_eq!(at(&e), At::Byte(132));
    fails(
        npy::encode(&[2, 2], &[1.0f32; 3]),
        &["3 values for an array of shape 2 x 2"],
    );
}

#[test]
fn npz() {
    fails(npz::read(b"not a zip"), &["byte 0", "not an .npz archive"]);
    let good = npy::encode(&[2], &[1u32, 2]).unwrap();
    let bad = b"\x93NUMPY\x01\x00\x02\x00{}".to_vec();
    let bytes = npz::encode(&[("ok".into(), good), ("broken".into(), bad)]).unwrap();
    let e = fails(npz::read(&bytes), &["broken.npy:", "no 'descr' key"]);
    assert!(matches!(at(&e), At::Member { name, .. } if name == "broken.npy"));
}

#[test]
fn scipy_csr_npz() {
    let m = CsrMatrix::new(2, 2, vec![0, 1, 2], vec![1, 0], vec![1.0f64, 2.0]).unwrap();
    let good = npz::read(&npz::encode_csr(&m).unwrap()).unwrap();
    // `good` with member `name` replaced by `a` (or dropped).
    let with = |name: &str, a: Option<npy::Array>| {
        let members: Vec<npz::Member> = good
            .iter()
            .filter_map(|(n, arr)| {
                let arr = if n == name { a.clone()? } else { arr.clone() };
                Some((n.clone(), npy::encode_array(&arr).unwrap()))
            })
            .collect();
        npz::encode(&members).unwrap()
    };
    let arr = |shape: Vec<u64>, data: npy::Data| Some(npy::Array { shape, data });
    let read = |b: &[u8]| npz::read_csr::<f64>(b);
    fails(
        read(&with("indptr", None)),
        &[
            "no member \"indptr\"",
            "indices, indptr, format, shape, data",
        ],
    );
    fails(
        read(&with(
            "format",
            arr(
                vec![],
                npy::Data::Bytes {
                    width: 3,
                    bytes: b"csc".to_vec(),
                },
            ),
        )),
        &["format.npy:header", "\"csc\"", "only csr"],
    );
    fails(
        read(&with("indptr", arr(vec![3], npy::Data::I32(vec![0, 2, 1])))),
        &["indptr.npy:data", "element 2", "non-decreasing"],
    );
    fails(
        read(&with("indices", arr(vec![2], npy::Data::I32(vec![1, 2])))),
        &[
            "indices.npy:data",
            "element 1",
            "column 2 out of range 0..2",
        ],
    );
    fails(
        read(&with("shape", arr(vec![2], npy::Data::I64(vec![-1, 2])))),
        &["shape.npy:data", "-1 x 2"],
    );
    fails(
        read(&with("data", arr(vec![2], npy::Data::I32(vec![1, 2])))),
        &[
            "data.npy:header",
            "dtype int32: expected float32 or float64",
        ],
    );
    fails(
        read(&with("data", arr(vec![1], npy::Data::F64(vec![1.0])))),
        &["needs 3 indptr values", "found 3, 1 and 2"],
    );
    // An f64 beyond f32's range does not fit an f32 matrix.
    let big = with("data", arr(vec![2], npy::Data::F64(vec![1.0, 1e300])));
    fails(
        npz::read_csr::<f32>(&big),
        &["data.npy:data", "element 1", "f32"],
    );
    // Not an archive at all.
    fails(read(b"%%MatrixMarket"), &["byte 0", "not an .npz archive"]);
}

#[test]
fn ply() {
    fails(ply::read(b"PLY\n"), &["line 1", "not a PLY file"]);
    fails(
        ply::read(b"ply\nformat ascii 1.0\nelement vertex 1\n"),
        &["line 3", "no `end_header`"],
    );
    fails(
        ply::read(b"ply\nformat ascii 2.0\nend_header\n"),
        &["line 2", "format ascii|binary_little_endian"],
    );
    fails(
        ply::read(b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nend_header\n1 2\n"),
        &["lacks one of the properties x, y, z"],
    );
    let head = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nend_header\n";
    fails(
        ply::read(format!("{head}0.1 0 0\n").as_bytes()),
        &["line 9: truncated", "declares 3 vertices"],
    );
    fails(
        ply::read(format!("{head}0.1 0\n").as_bytes()),
        &["line 8: expected 3 values"],
    );
    fails(
        ply::read(format!("{head}nan 0 0\n").as_bytes()),
        &["line 8", "not finite"],
    );
    // 4 billion binary vertices declared, none present: an error at once.
    let huge = b"ply\nformat binary_little_endian 1.0\nelement vertex 4000000000\nproperty float x\nproperty float y\nproperty float z\nend_header\n\0\0\0\0";
    fails(ply::read(huge), &["truncated", "need 48000000000 bytes"]);
    fails(
        ply::read(b"ply\nformat binary_little_endian 1.0\nelement vertex 5000000000\nproperty float x\nproperty float y\nproperty float z\nend_header\n"),
        &["5000000000 vertices exceed the limit"],
    );
    fails(
        ply::read(b"ply\nformat binary_middle_endian 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\nend_header\n"),
        &["line 2", "\"binary_middle_endian\" is not read"],
    );
}

#[test]
fn points_text() {
    let read = |s: &str| points::read_text(s.as_bytes());
    fails(
        read("1,2,3\n4,5\n"),
        &["line 2: expected `x,y,z` (at least 3 fields), found 2"],
    );
    fails(
        read("1 2 3\n4 5\n"),
        &["line 2: expected `x y z` (at least 3 fields), found 2 in \"4 5\""],
    );
    fails(
        read("0,0,0\n1,NaN,0\n"),
        &["line 2", "coordinate NaN is not finite"],
    );
    fails(
        read("x,y,z\n1,two,3\n"),
        &["line 2", "\"two\" is not a number"],
    );
    // A quote left open swallows the rest of the file into one field.
    fails(read("1,2,3\n\"4,5,6\n7,8,9\n"), &["line 2", "found 1"]);
    fails(read("1 2 1e39\n"), &["line 1", "not finite"]);
    // After the header, a row of words is an error, not a second header.
    fails(
        read("x y z\n1 2 3\nx y z\n"),
        &["line 3", "\"x\" is not a number"],
    );
    // A header alone, and nothing at all, are empty point sets.
    assert!(read("x,y,z\n").unwrap().is_empty());
    assert!(read("").unwrap().is_empty());
    assert!(points::read_csv("".as_bytes()).unwrap().is_empty());
    fails(
        points::read_npy(&npy::encode(&[2, 2], &[0.0f32; 4]).unwrap()),
        &["header", "expected N x 3"],
    );
    let e = fails(
        points::read_npy(&npy::encode(&[2, 3], &[0.0, 0.0, 0.0, 1e300, 0.0, 0.0]).unwrap()),
        &["does not fit f32"],
    );
    assert_eq!(at(&e), At::Point(1));
    assert_eq!(
        points::Format::from_extension("xyz"),
        Some(points::Format::Text)
    );
    assert_eq!(
        points::Format::from_extension("csv"),
        Some(points::Format::Csv)
    );
    assert_eq!(points::Format::from_extension("obj"), None);
}

/// CRC-32 (IEEE) for hand-made PNG chunks.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xffff_ffffu32;
    for &b in bytes {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 == 1 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// A PNG chunk: length, type, data, CRC.
fn chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    let mut c = kind.to_vec();
    c.extend_from_slice(data);
    png.extend_from_slice(&(data.len() as u32).to_be_bytes());
    png.extend_from_slice(&c);
    png.extend_from_slice(&crc32(&c).to_be_bytes());
}

/// A PNG declaring `w x h` grey pixels whose image data is one empty zlib
/// stream: the header reads, the pixels do not.
fn png_header(w: u32, h: u32) -> Vec<u8> {
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(
        &mut png,
        b"IDAT",
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    );
    chunk(&mut png, b"IEND", &[]);
    png
}

#[test]
fn images() {
    fails(
        img::read_gray(b"not an image"),
        &["byte 0", "not a PNG or JPEG"],
    );
    // 100000 x 100000 declared: refused from the header, nothing decoded.
    let e = fails(
        img::read_gray(&png_header(100_000, 100_000)),
        &["header", "exceeds 268435456 pixels"],
    );
    assert_eq!(at(&e), At::Header);
    let limits = Limits { max_alloc: 1 << 20 };
    fails(
        img::read_seeds_with(&png_header(1000, 1000), &limits),
        &["header", "over the limit"],
    );
    // A header and no pixel data: a decoding error.
    fails(
        img::read_mask(&png_header(4, 4)),
        &["data", "cannot decode the image"],
    );
    let mut png = Vec::new();
    img::write_gray(
        &mut png,
        &Image {
            width: 8,
            height: 8,
            pixels: vec![7; 64],
        },
        ImageFormat::Png,
    )
    .unwrap();
    fails(
        img::read_gray(&png[..png.len() / 2]),
        &["cannot decode the image"],
    );
    fails(
        img::write_gray(
            Vec::new(),
            &Image {
                width: 3,
                height: 3,
                pixels: vec![0; 8],
            },
            ImageFormat::Png,
        ),
        &["8 pixels for a 3 x 3 image"],
    );
}

/// A JPEG whose declared height is at the top of the 16-bit range, with the
/// one component subsampled 2x2: the decoder's rounding of the height up to
/// whole blocks overflows there, so it is refused from the header.
#[test]
fn jpeg_at_the_top_of_the_size_range() {
    let mut jpeg = Vec::new();
    img::write_gray(
        &mut jpeg,
        &Image {
            width: 8,
            height: 8,
            pixels: vec![100; 64],
        },
        ImageFormat::Jpeg,
    )
    .unwrap();
    let sof = jpeg
        .windows(2)
        .position(|w| w == [0xFF, 0xC0])
        .expect("a baseline frame header");
    // Marker (2), length (2), precision (1), height (2), width (2), count (1),
    // then the component: id (1), sampling (1), table (1).
    jpeg[sof + 5..sof + 7].copy_from_slice(&u16::MAX.to_be_bytes());
    jpeg[sof + 11] = 0x22;
    let e = fails(img::read_gray(&jpeg), &["header", "65535"]);
    assert_eq!(at(&e), At::Header);
}
