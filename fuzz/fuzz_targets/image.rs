//! Fuzzes the image readers (PNG / JPEG as grey levels and as a binary mask):
//! any bytes give an image or an error, never a panic or an abort (decoded
//! sizes are capped by `Limits`); an image it returns, written as PNG and
//! read back, is the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_io::Limits;
use trident_io::img::{self, ImageFormat};

const LIMITS: Limits = Limits {
    max_alloc: 64 << 20,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = img::read_gray_with(data, &LIMITS) {
        let mut png = Vec::new();
        img::write_gray(&mut png, &g, ImageFormat::Png).expect("an image we read encodes");
        assert_eq!(img::read_gray_with(&png, &LIMITS).expect("our PNG reads"), g);
    }
    if let Ok(m) = img::read_mask_with(data, &LIMITS) {
        let mut png = Vec::new();
        img::write_mask(&mut png, &m, ImageFormat::Png).expect("a mask we read encodes");
        assert_eq!(img::read_mask_with(&png, &LIMITS).expect("our PNG reads"), m);
    }
});
