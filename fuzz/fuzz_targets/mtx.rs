//! Fuzzes the Matrix Market reader: any bytes give a matrix or an error, never
//! a panic or an abort (row counts are capped by `Limits`, as a server reading
//! untrusted files would cap them); a matrix it returns, written and read
//! back, is the same matrix to the bit, in f64 and in f32.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_core::{CsrMatrix, Scalar};
use trident_io::{Limits, mtx};

const LIMITS: Limits = Limits {
    max_alloc: 64 << 20,
};

fn round_trip<T: Scalar>(data: &[u8]) {
    let Ok(m) = mtx::read_with::<T>(data, &LIMITS) else {
        return;
    };
    let mut out = Vec::new();
    mtx::write(&mut out, &m).expect("writing to memory");
    let back: CsrMatrix<T> = mtx::read_with(&out[..], &LIMITS).expect("our own output reads");
    assert_eq!(back.offsets(), m.offsets());
    assert_eq!(back.indices(), m.indices());
    let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(back.values()), bits(m.values()));
}

fuzz_target!(|data: &[u8]| {
    round_trip::<f64>(data);
    round_trip::<f32>(data);
});
