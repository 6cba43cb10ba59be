//! Replays the fuzz properties of `tickpack_testkit::props`:
//!
//! - every file under `fuzz/regressions/<target>/` (crash inputs saved by
//!   `fuzz/run.sh`) is fed to the property of the same name;
//! - every property runs on a fixed set of deterministic pseudo-random
//!   inputs, so this test exercises them even with no regressions committed;
//! - the fuzz crate declares exactly one target per property.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use tickpack_testkit::props::PROPERTIES;
use tickpack_testkit::rng::SplitMix64;

/// Pseudo-random inputs per property.
const INPUTS: u64 = 300;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn property(name: &str) -> Option<fn(&[u8])> {
    PROPERTIES.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

/// Runs `f(input)`, returning the panic message if it panics.
fn run(f: fn(&[u8]), input: &[u8]) -> Option<String> {
    let r = catch_unwind(AssertUnwindSafe(|| f(input)));
    r.err().map(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "non-string panic".to_owned())
    })
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(Result::ok).map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    };
    v.retain(|p| {
        !p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.') || n.eq_ignore_ascii_case("README.md"))
    });
    v.sort();
    v
}

#[test]
fn regressions() {
    let root = fuzz_dir().join("regressions");
    let mut failures = Vec::new();
    let mut count = 0;
    for dir in sorted_entries(&root) {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let Some(f) = property(&name) else {
            failures.push(format!("{}: no property named `{name}`", dir.display()));
            continue;
        };
        for file in sorted_entries(&dir) {
            match std::fs::read(&file) {
                Ok(input) => {
                    count += 1;
                    if let Some(msg) = run(f, &input) {
                        failures.push(format!("{}: {msg}", file.display()));
                    }
                }
                Err(e) => failures.push(format!("{}: {e}", file.display())),
            }
        }
    }
    eprintln!("replayed {count} regression inputs");
    assert!(
        failures.is_empty(),
        "{} failing:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The `i`-th fixed input of property `name`: lengths from 0 to about 4 KiB,
/// mostly random bytes, some biased towards small values and runs.
fn input(name: &str, i: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(
        name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        }) ^ i,
    );
    let len = match i % 4 {
        0 => rng.below(64),
        1 | 2 => rng.below(1024),
        _ => rng.below(4096),
    } as usize;
    let mask = [0xff, 0xff, 0x0f, 0x03][(i / 4 % 4) as usize];
    (0..len).map(|_| rng.next_u64() as u8 & mask).collect()
}

#[test]
fn pseudo_random_inputs() {
    let mut failures = Vec::new();
    for &(name, f) in PROPERTIES {
        for i in 0..INPUTS {
            let data = input(name, i);
            if let Some(msg) = run(f, &data) {
                failures.push(format!("{name} input {i} ({} bytes): {msg}", data.len()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn one_fuzz_target_per_property() {
    if !fuzz_dir().join("Cargo.toml").exists() {
        eprintln!("no fuzz crate next to the codec; skipped");
        return;
    }
    let dir = fuzz_dir().join("fuzz_targets");
    let mut targets: Vec<String> = sorted_entries(&dir)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(str::to_owned))
        .collect();
    targets.sort();
    let mut props: Vec<String> = PROPERTIES.iter().map(|(n, _)| (*n).to_owned()).collect();
    props.sort();
    assert_eq!(
        targets, props,
        "fuzz/fuzz_targets/*.rs vs tickpack_testkit::props::PROPERTIES"
    );
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap_or_default();
    for p in &props {
        assert!(
            manifest.contains(&format!("name = \"{p}\"")),
            "fuzz/Cargo.toml has no [[bin]] `{p}`"
        );
    }
}
