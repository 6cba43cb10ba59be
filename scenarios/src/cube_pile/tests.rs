use super::*;
use crate::changed_entities;

fn fields(rec: &[u8]) -> [i32; 8] {
    core::array::from_fn(|i| i32::from_le_bytes(rec[4 * i..4 * i + 4].try_into().unwrap()))
}

#[test]
fn identity_quantises_to_the_middle() {
    let b = Body::new(V3::new(1.0, -2.0, 0.5), 0.5, 0.5, 1.0, false);
    assert_eq!(quantise(&b, true), [3, 256, 256, 256, 512, -1024, 256, 1]);
}

#[test]
fn schema_has_the_challenge_layout() {
    let s = cube_schema();
    let e = &s.sections()[0];
    assert_eq!(e.record_size(), 32);
    let names: Vec<&str> = e.fields().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, CUBE_FIELDS);
    assert!(e
        .fields()
        .iter()
        .all(|f| f.ty == Primitive::I32 && f.len == 1));
}

#[test]
fn realistic_activity_and_ranges() {
    let sc = cube_pile(1, 900);
    assert_eq!(sc.ticks.len(), 900);
    let mut changed = Vec::new();
    for (t, snap) in sc.ticks.iter().enumerate() {
        let sec = &snap.sections()[0];
        assert_eq!(sec.len(), CUBE_COUNT);
        assert_eq!(sec.ids(), (0..CUBE_COUNT as u32).collect::<Vec<_>>());
        for (id, rec) in sec.iter() {
            let f = fields(rec);
            assert!((0..=3).contains(&f[0]), "tick {t} cube {id}: {f:?}");
            assert!(
                f[1..4].iter().all(|c| (0..=511).contains(c)),
                "tick {t} cube {id}: {f:?}"
            );
            assert!(
                f[4..6].iter().all(|c| (-16383..=16383).contains(c)),
                "tick {t} cube {id}: {f:?}"
            );
            assert!((0..=8191).contains(&f[6]), "tick {t} cube {id}: {f:?}");
            assert!((0..=1).contains(&f[7]), "tick {t} cube {id}: {f:?}");
        }
        if t >= 6 {
            changed.push(changed_entities(&sc.ticks[t - 6], snap));
        }
    }
    let mean = changed.iter().sum::<usize>() as f64 / changed.len() as f64;
    let max = changed.iter().max().copied().unwrap_or(0);
    let resting = sc.ticks[899].sections()[0]
        .iter()
        .filter(|(_, r)| fields(r)[6] == 256)
        .count();
    println!("cubes changed vs 6 ticks earlier: mean {mean:.1}, max {max}; {resting} resting at z = 0.5 m at the end");
    assert!((5.0..400.0).contains(&mean), "mean changed {mean}");
    assert!(resting > 600, "{resting}");
}

#[test]
fn cubes_get_knocked_over() {
    let sc = cube_pile(2, 900);
    let last = &sc.ticks[899].sections()[0];
    let turned = last
        .iter()
        .skip(1)
        .filter(|(_, r)| fields(r)[..4] != [3, 256, 256, 256])
        .count();
    let moved = last
        .iter()
        .zip(sc.ticks[0].sections()[0].iter())
        .skip(1)
        .filter(|((_, a), (_, b))| fields(a)[4..6] != fields(b)[4..6])
        .count();
    println!("after 15 s: {moved} cubes moved, {turned} turned");
    assert!(moved > 20 && turned > 10, "{moved} moved, {turned} turned");
}

#[test]
fn idle_repeats_the_first_frame() {
    let i = idle(10);
    assert_eq!(i.ticks.len(), 10);
    assert!(i.ticks.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(i.ticks[0], cube_pile(5, 1).ticks[0]);
}
