//! `.npy` files for the Python peers: the bench programs write the very input
//! they time (points, dictionaries, signals, grid capacities) so that SciPy,
//! scikit-learn, SPAMS or PyMaxflow run on the same data with `numpy.load`,
//! shape and dtype included (no side file saying how to reshape raw bytes).

use std::io::BufWriter;
use std::path::Path;

/// Writes `data` (row-major, `shape.iter().product()` values) as a NumPy
/// `.npy` file, creating the parent directory if needed.
pub fn write<T: trident_io::npy::Element>(
    path: impl AsRef<Path>,
    shape: &[usize],
    data: &[T],
) -> std::io::Result<()> {
    let path = path.as_ref();
    // Checked before the file is created, so a wrong shape leaves no file.
    let want: usize = shape.iter().product();
    if want != data.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{}: shape {shape:?} holds {want} values, got {}",
                path.display(),
                data.len()
            ),
        ));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let file = BufWriter::new(std::fs::File::create(path)?);
    trident_io::npy::write(file, &shape, data)
        .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))
}

/// Writes a symmetric 2-D grid cut as `benches/examples/cut_pymaxflow.py`
/// reads it: `source.npy`, `sink.npy`, `right.npy` (+x weights) and
/// `down.npy` (+y weights), each `h x w` int32. The script adds each
/// neighbour weight in both directions, so a grid whose two directions differ
/// is refused rather than silently changed.
pub fn write_grid(dir: impl AsRef<Path>, g: &trident_core::GridGraph) -> std::io::Result<()> {
    use trident_core::Dir;
    let bad = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, msg);
    let (depth, h, w) = g.shape();
    if depth != 1 {
        return Err(bad(format!(
            "PyMaxflow dump takes 2-D grids, got depth {depth}"
        )));
    }
    for v in 0..g.nodes() {
        for (d, back) in [(Dir::PosX, Dir::NegX), (Dir::PosY, Dir::NegY)] {
            if let Some(u) = g.neighbor(v, d)
                && g.plane(d)[v] != g.plane(back)[u]
            {
                return Err(bad(format!("grid is not symmetric at node {v} ({d:?})")));
            }
        }
    }
    let planes = [
        ("source", g.source()),
        ("sink", g.sink()),
        ("right", g.plane(Dir::PosX)),
        ("down", g.plane(Dir::PosY)),
    ];
    for (name, plane) in planes {
        let data = plane
            .iter()
            .map(|&x| {
                i32::try_from(x).map_err(|_| bad(format!("{name}: capacity {x} exceeds int32")))
            })
            .collect::<std::io::Result<Vec<i32>>>()?;
        write(dir.as_ref().join(format!("{name}.npy")), &[h, w], &data)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_shape_and_values() {
        let dir = std::env::temp_dir().join(format!("trident-npy-{}", std::process::id()));
        let path = dir.join("m.npy");
        super::write(&path, &[2, 3], &[1i32, 2, 3, 4, 5, -6]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
        assert_eq!(npy.shape(), &[2, 3]);
        assert_eq!(npy.into_vec::<i32>().unwrap(), vec![1, 2, 3, 4, 5, -6]);
        assert!(super::write(&path, &[2, 2], &[1i32]).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
