//! Fuzzes the CSV / XYZ point readers: any bytes give points or an error,
//! never a panic or an abort; points it returns, written as CSV and as XYZ
//! and read back, are the same to the bit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_io::points;

fn bits(p: &[[f32; 3]]) -> Vec<u32> {
    p.as_flattened().iter().map(|x| x.to_bits()).collect()
}

fuzz_target!(|data: &[u8]| {
    // The CSV and XYZ readers on their own: a value or an error.
    let _ = points::read_csv(data);
    let _ = points::read_xyz(data);
    let Ok(pts) = points::read_text(data) else {
        return;
    };
    let mut csv = Vec::new();
    points::write_csv(&mut csv, &pts).expect("writing to memory");
    assert_eq!(bits(&points::read_text(&csv[..]).expect("our CSV reads")), bits(&pts));
    let mut xyz = Vec::new();
    points::write_xyz(&mut xyz, &pts).expect("writing to memory");
    assert_eq!(bits(&points::read_text(&xyz[..]).expect("our XYZ reads")), bits(&pts));
});
