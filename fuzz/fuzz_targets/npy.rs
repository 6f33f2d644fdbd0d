//! Fuzzes the NPY readers (any array, a float matrix, N x 3 points): any
//! bytes give a value or an error, never a panic or an abort; a value it
//! returns, written and read back, is the same to the bit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_io::{npy, points};

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = npy::read_array(data) {
        // Encoding is one-to-one on (dtype, shape, bits): equal bytes after a
        // second pass mean the read-back array equals the first to the bit.
        let bytes = npy::encode_array(&a).expect("an array we read encodes");
        let back = npy::read_array(&bytes).expect("our own output reads");
        assert_eq!(back.shape, a.shape);
        assert_eq!(npy::encode_array(&back).expect("encodes"), bytes);
    }
    if let Ok(m) = npy::read_matrix(data) {
        let shape = [m.rows as u64, m.cols as u64];
        let bytes = match &m.data {
            npy::Dense::F32(v) => npy::encode(&shape, v),
            npy::Dense::F64(v) => npy::encode(&shape, v),
        }
        .expect("a matrix we read encodes");
        let back = npy::read_matrix(&bytes).expect("our own output reads");
        assert_eq!((back.rows, back.cols, back.is_f64()), (m.rows, m.cols, m.is_f64()));
        let bits = |m: &npy::Matrix| m.to_f64().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&m));
    }
    if let Ok(p) = points::read_npy(data) {
        let mut out = Vec::new();
        points::write_npy(&mut out, &p).expect("writing to memory");
        let back = points::read_npy(&out).expect("our own output reads");
        let bits = |p: &[[f32; 3]]| p.as_flattened().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&p));
    }
});
