//! Fuzzes the PLY reader: any bytes give points or an error, never a panic or
//! an abort; points it returns, written as binary and as ascii PLY and read
//! back, are the same to the bit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_io::ply;

fn bits(p: &[[f32; 3]]) -> Vec<u32> {
    p.as_flattened().iter().map(|x| x.to_bits()).collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(pts) = ply::read(data) else {
        return;
    };
    let mut bin = Vec::new();
    ply::write_binary(&mut bin, &pts).expect("writing to memory");
    assert_eq!(bits(&ply::read(&bin).expect("our binary output reads")), bits(&pts));
    let mut text = Vec::new();
    ply::write_ascii(&mut text, &pts).expect("writing to memory");
    assert_eq!(bits(&ply::read(&text).expect("our ascii output reads")), bits(&pts));
});
