//! Fuzzes the readers of images and volumes as samples: `.npy` arrays of any
//! numeric dtype (`npy::read_samples`) and RGB images (`img::read_rgb`). Any
//! bytes give a value or an error, never a panic or an abort; a value it
//! returns, written and read back, is the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_io::img::{self, Image, ImageFormat};
use trident_io::{Limits, npy};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = npy::read_samples(data) {
        let shape: Vec<u64> = s.shape.iter().map(|&d| d as u64).collect();
        let bytes = npy::encode(&shape, &s.values).expect("samples we read encode");
        let back = npy::read_samples(&bytes).expect("our own output reads");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!((back.shape, bits(&back.values)), (s.shape, bits(&s.values)));
    }
    let limits = Limits { max_alloc: 64 << 20 };
    if let Ok(rgb) = img::read_rgb_with(data, &limits) {
        // Grey levels written losslessly read back as three equal channels.
        let grey = Image {
            width: rgb.width,
            height: rgb.height,
            pixels: rgb.pixels.iter().map(|p| p[0]).collect(),
        };
        let mut png = Vec::new();
        img::write_gray(&mut png, &grey, ImageFormat::Png).expect("writing to memory");
        let back = img::read_rgb(&png).expect("our own output reads");
        assert!(back.pixels.iter().zip(&grey.pixels).all(|(p, &g)| *p == [g, g, g]));
    }
});
