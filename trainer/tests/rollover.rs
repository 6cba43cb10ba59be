//! Two versions of one game with the same schema (a rollover) trained
//! separately can be held side by side: every set has a keyframe
//! dictionary, so every keyframe names its set.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use tickpack_sets::capture::{Capture, CaptureLimits};
use tickpack_sets::dictset::{DictKind, DictionarySets};
use tickpack_trainer::run;

fn cmd(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let mut out = Vec::new();
    run(&args, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn two_versions_of_one_schema_load_side_by_side() {
    let dir = std::env::temp_dir().join(format!("tickpack-rollover-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cap = dir.join("c.tpcap");
    let cap = cap.to_str().unwrap();
    // Cubes: keyframe dictionaries do not pay on these keyframes, so the
    // trainer used to leave them out.
    cmd(&["export", "cubes", cap, "--ticks", "60", "--seed", "2"]);
    let mut sets = DictionarySets::new();
    let mut loaded = Vec::new();
    for version in ["1", "2"] {
        let out = dir.join(format!("cube-pile/{version}"));
        let out = out.to_str().unwrap();
        cmd(&[
            "train",
            cap,
            "--out",
            out,
            "--version",
            version,
            "--sizes",
            "1024",
            "--quiet",
        ]);
        let set = tickpack_sets::dictset::DictionarySet::load(out).unwrap();
        assert!(
            set.dictionary(DictKind::Keyframe).is_some(),
            "version {version} has no keyframe dictionary"
        );
        loaded.push(set.clone());
        sets.insert(set).unwrap();
    }
    assert_eq!(
        loaded[0].schema().id(),
        loaded[1].schema().id(),
        "one schema"
    );
    // A keyframe of each version decodes with its own set.
    let capture = Capture::read(
        &std::fs::read(dir.join("c.tpcap")).unwrap()[..],
        CaptureLimits::default(),
    )
    .unwrap();
    let world = &capture.ticks[10].snapshot;
    for set in &loaded {
        let mut enc = set.encoder(3).unwrap();
        let packet = enc.encode(world, 10, None).unwrap();
        assert_eq!(sets.for_packet(&packet).unwrap().version(), set.version());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
