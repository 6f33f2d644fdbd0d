//! A deterministic byte-mutation fuzz of every reader, for toolchains without
//! libFuzzer (the `fuzz/` targets do the same, guided, on nightly): valid
//! files of each format are flipped, cut, spliced and grown; every reader
//! answers a value or an error, never a panic, and a value it returns reads
//! back equal after writing.

use trident_core::CsrMatrix;
use trident_io::img::{self, Image, ImageFormat, Seed};
use trident_io::{Limits, mtx, npy, npz, ply, points};

const LIMITS: Limits = Limits {
    max_alloc: 64 << 20,
};

/// Valid small files of every format.
fn seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = vec![
        b"%%MatrixMarket matrix coordinate real general\n% c\n3 4 3\n1 1 1.5\n1 4 -2\n3 2 1e-300\n"
            .to_vec(),
        b"%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n1 1 2\n3 1 -1\n".to_vec(),
        b"x,y,z\n0.5,-1,2\n\"3\",0,1e30\n".to_vec(),
        b"1 2 3\n\t4 5 6\n".to_vec(),
        b"ply\nformat ascii 1.0\nelement face 1\nproperty list uchar int vertex_index\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\nend_header\n3 0 1 1\n0.1 0 0\n5 5 5\n".to_vec(),
    ];
    let pts = [[0.5f32, -1.0, 2.0], [3.0, 0.0, 1e-3]];
    let mut b = Vec::new();
    ply::write_binary(&mut b, &pts).unwrap();
    out.push(b);
    out.push(npy::encode(&[2, 3], &[1.0f32, -2.0, 3.5, 0.0, 1e-30, 7.0]).unwrap());
    out.push(npy::encode(&[3], &[0u64, 2, 5]).unwrap());
    out.push(
        npz::encode(&[
            ("atoms".into(), npy::encode(&[2], &[4u32, 1]).unwrap()),
            (
                "coefs".into(),
                npy::encode(&[1, 2], &[0.5f64, -1.25]).unwrap(),
            ),
        ])
        .unwrap(),
    );
    let gray = Image {
        width: 5,
        height: 3,
        pixels: (0..15).map(|i| (i * 17) as u8).collect(),
    };
    for f in [ImageFormat::Png, ImageFormat::Jpeg] {
        let mut b = Vec::new();
        img::write_gray(&mut b, &gray, f).unwrap();
        out.push(b);
    }
    let s = Image {
        width: 2,
        height: 2,
        pixels: vec![Seed::Foreground, Seed::None, Seed::Background, Seed::None],
    };
    let mut b = Vec::new();
    img::write_seeds(&mut b, &s).unwrap();
    out.push(b);
    out
}

/// Every reader on `data`; values read are written and read back equal.
fn read_all(data: &[u8]) {
    if let Ok(m) = mtx::read_with::<f64>(data, &LIMITS) {
        let mut out = Vec::new();
        mtx::write(&mut out, &m).unwrap();
        let back: CsrMatrix<f64> = mtx::read(&out[..]).unwrap();
        assert_eq!(back, m);
    }
    let _ = mtx::read_with::<f32>(data, &LIMITS);
    if let Ok(a) = npy::read_array(data) {
        let bytes = npy::encode_array(&a).unwrap();
        let back = npy::read_array(&bytes).unwrap();
        assert_eq!(npy::encode_array(&back).unwrap(), bytes);
    }
    let _ = npy::read_matrix(data);
    if let Ok(m) = npz::read(data) {
        let bytes = npz::encode_arrays(&m).unwrap();
        assert_eq!(npz::read(&bytes).unwrap().len(), m.len());
    }
    for format in [
        points::Format::Npy,
        points::Format::Ply,
        points::Format::Text,
        points::Format::Csv,
    ] {
        if let Ok(p) = points::read(data, format) {
            let mut out = Vec::new();
            ply::write_binary(&mut out, &p).unwrap();
            assert_eq!(ply::read(&out).unwrap(), p);
        }
    }
    if let Ok(g) = img::read_gray_with(data, &LIMITS) {
        let mut out = Vec::new();
        img::write_gray(&mut out, &g, ImageFormat::Png).unwrap();
        assert_eq!(img::read_gray(&out).unwrap(), g);
    }
    let _ = img::read_seeds_with(data, &LIMITS);
}

#[test]
fn every_reader_survives_byte_mutations() {
    let seeds = seeds();
    for s in &seeds {
        read_all(s);
    }
    let inserts: [&[u8]; 9] = [
        b"0",
        b"-",
        b" ",
        b"\n",
        b",",
        b"18446744073709551616",
        b"\xff",
        b"4294967295",
        b"nan",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |m: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m.max(1) as u64) as usize
    };
    for round in 0..3000 {
        let mut s = seeds[round % seeds.len()].clone();
        for _ in 0..1 + next(4) {
            let at = next(s.len() + 1);
            match next(5) {
                0 if at < s.len() => s[at] ^= 1 << next(8),
                1 => {
                    let ins = inserts[next(inserts.len())];
                    s.splice(at..at, ins.iter().copied());
                }
                2 if at < s.len() => {
                    s.remove(at);
                }
                3 if at < s.len() => s[at] = [0, 0xff, b'9', b'('][next(4)],
                _ => s.truncate(at),
            }
        }
        read_all(&s);
    }
}
