//! Fuzzes the seed (scribble) reader of `trident segment --seeds`: any bytes
//! give seeds or an error, never a panic or an abort (decoded sizes are
//! capped by `Limits`); seeds it returns, written as a scribble PNG and read
//! back, are the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_io::Limits;
use trident_io::img;

const LIMITS: Limits = Limits {
    max_alloc: 64 << 20,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = img::read_seeds_with(data, &LIMITS) {
        let mut png = Vec::new();
        img::write_seeds(&mut png, &s).expect("seeds we read encode");
        assert_eq!(img::read_seeds_with(&png, &LIMITS).expect("our PNG reads"), s);
    }
});
