//! The trainer and quantisation: `suggest` on an exported racing capture
//! reports every float field with its range, its changes and the bits per
//! value at each step; schemas the trainer rebuilds keep their quantisation.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use tickpack_trainer::suggest::suggest;

#[test]
fn suggest_reports_every_float_field() {
    let dir = std::env::temp_dir().join(format!("tickpack-suggest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("racing.tpcap");
    tickpack_trainer::export::export("racing", &path, false, 40, 3).unwrap();
    let text = suggest(&path, &[0.001, 0.1]).unwrap();
    // The command line gives the same text.
    let args: Vec<String> = ["suggest", path.to_str().unwrap(), "--steps", "0.001,0.1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut out = Vec::new();
    tickpack_trainer::run(&args, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), text);
    let bad: Vec<String> = ["suggest", "x", "--steps", "0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(tickpack_trainer::run(&bad, &mut Vec::new()).is_err());
    let _ = std::fs::remove_dir_all(&dir);
    for field in ["position", "rotation", "velocity", "steering", "throttle"] {
        assert!(text.contains(&format!("`car`.`{field}`")), "{text}");
    }
    assert!(
        !text.contains("`lap`"),
        "integers are not float fields: {text}"
    );
    assert!(text.contains("every value has unit norm"), "{text}");
    // One table row per step per field, coarser steps need fewer bits.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("0.001 ") || l.trim_start().starts_with("0.1 "))
        .collect();
    assert_eq!(rows.len(), 10, "{text}");
    for pair in rows.chunks(2) {
        let bits = |l: &str| -> f64 { l.split_whitespace().last().unwrap().parse().unwrap() };
        assert!(bits(pair[0]) > bits(pair[1]), "{pair:?}");
    }
}

#[test]
fn rebuilt_schemas_keep_their_quantisation() {
    use tickpack_trainer::captures::{ops_of, with_ops};
    let schema = tickpack_scenarios::racing_schema_quantized();
    let rebuilt = with_ops(&schema, &ops_of(&schema)).unwrap();
    assert_eq!(
        rebuilt.sections()[0].quantization(),
        schema.sections()[0].quantization()
    );
    assert_eq!(rebuilt.id(), schema.id());
}
