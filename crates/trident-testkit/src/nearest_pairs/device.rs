//! The kept index of a GPU backend ([`NearestIndexDevice`]) against the same
//! backend's plain device calls: the contract asks the same answers bit for
//! bit, with the index built once and queried by several point sets, after
//! the buffer it was built from is gone. Panics on the first difference (a
//! test helper, run by each GPU backend's tests).

use trident_core::{Error, NearestIndexDevice, Neighbor, Point};

use super::generate::{cluster_centers, clustered_points, lattice_points, uniform_points};

/// A labelled B and the query sets run against its index.
type IndexCase = (&'static str, Vec<Point>, Vec<Vec<Point>>);

/// Checks `be`'s index on uniform, clustered and tied (lattice) points.
pub fn kept_index_matches_plain_calls<D: NearestIndexDevice>(be: &D, seed: u64) {
    let centers = cluster_centers(5, seed);
    let sets: [IndexCase; 3] = [
        (
            "uniform",
            uniform_points(20_000, seed),
            vec![uniform_points(9_000, seed ^ 1), Vec::new()],
        ),
        (
            "clustered",
            clustered_points(15_000, &centers, 2_000.0, seed ^ 2),
            vec![
                clustered_points(7_000, &centers, 3_000.0, seed ^ 3),
                uniform_points(3_000, seed ^ 4),
            ],
        ),
        (
            "lattice (ties)",
            lattice_points(20, seed ^ 5),
            vec![lattice_points(15, seed ^ 6)],
        ),
    ];
    for (label, hb, queries) in sets {
        let db = be.upload(&hb).unwrap();
        let index = be.index_points(&db).unwrap();
        assert_eq!(be.index_len(&index), hb.len(), "{label}: index_len");
        for ha in &queries {
            let da = be.upload(ha).unwrap();
            let (mut plain, mut kept) = (
                be.alloc_zeroed::<Neighbor>(ha.len()).unwrap(),
                be.alloc_zeroed::<Neighbor>(ha.len()).unwrap(),
            );
            be.nearest_device(&da, &db, &mut plain).unwrap();
            be.nearest_indexed(&da, &index, &mut kept).unwrap();
            let mut want = vec![Neighbor::default(); ha.len()];
            let mut got = vec![Neighbor::default(); ha.len()];
            be.download(&plain, &mut want).unwrap();
            be.download(&kept, &mut got).unwrap();
            assert!(want == got, "{label}, |A| = {}: nearest_indexed", ha.len());
            for k in [1, 100, ha.len() + 3] {
                assert_eq!(
                    be.closest_pairs_indexed(&da, &index, k).unwrap(),
                    be.closest_pairs_device(&da, &db, k).unwrap(),
                    "{label}, |A| = {}: closest_pairs_indexed({k})",
                    ha.len()
                );
            }
        }
        // The index keeps its own copy of B.
        drop(db);
        let ha = &queries[0];
        let da = be.upload(ha).unwrap();
        let again = be.closest_pairs_indexed(&da, &index, 50).unwrap();
        assert_eq!(
            again.len(),
            50.min(ha.len()),
            "{label}: after B's buffer is gone"
        );
        assert!(
            again.iter().all(|p| (p.b as usize) < hb.len()),
            "{label}: after B's buffer is gone"
        );
    }
    // Bad input is named.
    let empty = be.upload::<Point>(&[]).unwrap();
    assert!(matches!(
        be.index_points(&empty),
        Err(Error::InvalidArgument { field: "b", .. })
    ));
    let hb = uniform_points(100, seed);
    let (db, da) = (be.upload(&hb).unwrap(), be.upload(&hb[..10]).unwrap());
    let index = be.index_points(&db).unwrap();
    let mut wrong = be.alloc_zeroed::<Neighbor>(3).unwrap();
    assert!(matches!(
        be.nearest_indexed(&da, &index, &mut wrong),
        Err(Error::DimensionMismatch { field: "out", .. })
    ));
}
