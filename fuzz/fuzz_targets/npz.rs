//! Fuzzes the NPZ reader (zip container and NPY members): any bytes give the
//! members or an error, never a panic or an abort; members it returns,
//! written and read back, are the same to the bit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_io::{npy, npz};

fuzz_target!(|data: &[u8]| {
    let Ok(members) = npz::read(data) else {
        return;
    };
    let bytes = npz::encode_arrays(&members).expect("members we read encode");
    let back = npz::read(&bytes).expect("our own output reads");
    assert_eq!(back.len(), members.len());
    for ((n0, a0), (n1, a1)) in members.iter().zip(&back) {
        assert_eq!(n0, n1);
        assert_eq!(a0.shape, a1.shape);
        assert_eq!(npy::encode_array(a0).ok(), npy::encode_array(a1).ok());
    }
});
