//! `eval --by-field`: the labelled model tokens are the packet's own, the
//! attribution sums to the packets' bits, and the SVG is well formed.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use tickpack::internals::{model_tokens_labelled, LabelledSink, Token, TokenLabel, TokenRole};
use tickpack::model::{ModelEncoder, ModelSink};
use tickpack::{Baseline, PacketHeader, Reference};
use tickpack_scenarios::{cube_pile, racing_lobby, racing_lobby_quantized, Scenario};
use tickpack_sets::dictset::{DictKind, DictionarySet};
use tickpack_trainer::byfield::flush_tolerance_bits;
use tickpack_trainer::run;

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("tickpack-byfield-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn cmd(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let mut out = Vec::new();
    run(&args, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn set_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dictionaries")
        .join(name)
        .join("1")
}

#[derive(Default)]
struct Tokens(Vec<(TokenLabel, Token, Option<f64>)>);

impl LabelledSink for Tokens {
    fn token(&mut self, label: TokenLabel, token: Token, cost_bits: Option<f64>) {
        self.0.push((label, token, cost_bits));
    }
}

/// Every model-block packet of `s` (tick i against i - 6, prior i - 12)
/// under the shipped set `name`: its labelled tokens, coded again with the
/// set's table, are its model block's body; each is labelled with an
/// element of its section; their costs sum to the body's bits within the
/// flush tolerance. Returns how many packets were model blocks.
fn check_set(name: &str, s: &Scenario) -> usize {
    let set = DictionarySet::load(set_dir(name)).unwrap();
    let table = set
        .dictionary(DictKind::Delta)
        .and_then(|d| d.model())
        .expect("shipped set has a delta model")
        .clone();
    let mut enc = set.encoder(tickpack::DEFAULT_LEVEL).unwrap();
    let mut probe = set.encoder(tickpack::DEFAULT_LEVEL).unwrap();
    let mut models = 0;
    for (i, tick) in s.ticks.iter().enumerate() {
        let at = |b: usize| Baseline {
            sequence: b as u16,
            snapshot: &s.ticks[b],
        };
        let base = i.checked_sub(6).map(at);
        let reference = Reference::from(base).with_prior(base.and(i.checked_sub(12).map(at)));
        let mut packet = Vec::new();
        enc.encode_to_vec(tick, i as u16, reference, &mut packet)
            .unwrap();
        let (h, hlen) = PacketHeader::parse(&packet).unwrap();
        if h.baseline.is_none() || hlen == packet.len() {
            continue;
        }
        if !h.model {
            continue;
        }
        models += 1;
        let body = &packet[hlen..];
        let mut got = Tokens::default();
        model_tokens_labelled(&mut probe, tick, i as u16, reference, &mut got)
            .unwrap()
            .expect("a model packet has a table and a map")
            .unwrap();
        let mut again = ModelEncoder::new(&table, Vec::new());
        let mut cost = 0.0;
        for &(label, token, c) in &got.0 {
            assert_ne!(label.role, TokenRole::Unlabelled, "{name} tick {i}");
            let elements: usize = s.schema.sections()[label.section]
                .fields()
                .iter()
                .map(|f| f.len)
                .sum();
            if matches!(
                label.role,
                TokenRole::ElementBit | TokenRole::KindBit | TokenRole::Value
            ) {
                assert!(label.index < elements, "{name} tick {i}: {label:?}");
            }
            // Kinds of token match what they code.
            match (label.role, token) {
                (TokenRole::Value, Token::Sint { .. }) => {}
                (TokenRole::Value, t) => panic!("value coded as {t:?}"),
                (
                    TokenRole::ElementBit
                    | TokenRole::GroupBit
                    | TokenRole::KindBit
                    | TokenRole::SetBit,
                    Token::Bit { .. },
                ) => {}
                (TokenRole::ElementBit | TokenRole::GroupBit | TokenRole::KindBit, t) => {
                    panic!("mask or kind coded as {t:?}")
                }
                _ => {}
            }
            cost += c.expect("every token priced");
            match token {
                Token::Bit { ctx, bit } => again.bit(ctx, bit),
                Token::Uint { ctx, v } => again.uint(ctx, v),
                Token::Sint { ctx, zigzag } => again.sint(ctx, zigzag),
            }
        }
        assert_eq!(
            again.finish().unwrap(),
            body,
            "{name} tick {i}: the labelled tokens code to the block"
        );
        let bits = 8.0 * body.len() as f64;
        let flush = bits - cost;
        assert!(
            flush.abs() <= flush_tolerance_bits(body.len()),
            "{name} tick {i}: {bits} bits, tokens {cost:.1}"
        );
    }
    models
}

#[test]
fn labelled_model_tokens_are_the_packets_model_block() {
    let racing = check_set("racing-lobby", &racing_lobby(7, 60));
    let cubes = check_set("cube-pile", &cube_pile(7, 60));
    let quantized = check_set("racing-lobby-quantized", &racing_lobby_quantized(7, 60));
    // Most deltas of each scenario are model blocks: the checks ran.
    assert!(
        racing > 40 && cubes > 40 && quantized > 40,
        "{racing} {cubes} {quantized}"
    );
}

/// Checks tags balance and every attribute value is quoted: enough to say
/// an SVG viewer will parse it (the chart has no comments, CDATA or
/// entities beyond the five predefined ones).
fn well_formed(svg: &str) -> Result<(), String> {
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = svg;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        if text.contains('>') {
            return Err(format!("stray '>' in {text:?}"));
        }
        for (i, _) in text.match_indices('&') {
            let ent = &text[i..];
            if !["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                .iter()
                .any(|e| ent.starts_with(e))
            {
                return Err(format!("bad entity at {ent:.10}"));
            }
        }
        let close = rest[open..].find('>').ok_or("unclosed tag")? + open;
        let tag = &rest[open + 1..close];
        if !tag.matches('"').count().is_multiple_of(2) || tag.contains('<') {
            return Err(format!("bad tag {tag}"));
        }
        if let Some(name) = tag.strip_prefix('/') {
            let top = stack.pop().ok_or(format!("</{name}> closes nothing"))?;
            if top != name.trim() {
                return Err(format!("<{top}> closed by </{name}>"));
            }
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().ok_or("empty tag")?;
            stack.push(name);
        }
        rest = &rest[close + 1..];
    }
    if !rest.trim().is_empty() {
        return Err(format!("text after the root: {rest:?}"));
    }
    match stack.as_slice() {
        [] => Ok(()),
        s => Err(format!("unclosed {s:?}")),
    }
}

#[test]
fn the_checker_refuses_broken_svg() {
    assert!(well_formed("<svg><rect/><text>a &amp; b</text></svg>\n").is_ok());
    for bad in [
        "<svg><text>a</svg>",
        "<svg><text>a & b</text></svg>",
        "<svg><rect x=\"1/></svg>",
        "<svg></text></svg>",
        "<svg>",
    ] {
        assert!(well_formed(bad).is_err(), "{bad}");
    }
}

/// `eval --by-field --json --svg` on a bundled scenario's capture with its
/// shipped set: the rows sum to the packets' bits, model blocks were
/// attributed exactly with flushes in tolerance, and the SVG names every
/// field.
fn eval_scenario(scenario: &str, set: &str, fields: &[&str]) -> Vec<serde_json::Value> {
    let dir = tmp(scenario);
    let cap = dir.join("c.tpcap");
    cmd(&[&"export", &scenario, &cap, &"--ticks", &"120"]);
    let svg = dir.join("where.svg");
    let text = cmd(&[
        &"eval",
        &cap,
        &"--dictionaries",
        &set_dir(set),
        &"--by-field",
        &"--json",
        &"--svg",
        &svg,
    ]);
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let b = &report["by_field"];
    let packets = b["packets"].as_u64().unwrap();
    assert_eq!(packets, report["packets"].as_u64().unwrap());
    assert!(b["exact_packets"].as_u64().unwrap() > packets / 2, "{b}");
    let per_packet = b["bits_per_packet"].as_f64().unwrap();
    let bytes_mean = report["bytes_mean"].as_f64().unwrap();
    assert!(
        (per_packet - 8.0 * bytes_mean).abs() < 0.1,
        "{per_packet} {bytes_mean}"
    );
    let rows = b["rows"].as_array().unwrap();
    let sum: f64 = rows
        .iter()
        .map(|r| r["bits_per_packet"].as_f64().unwrap())
        .sum();
    // Each row is rounded to 0.001.
    assert!(
        (sum - per_packet).abs() < 0.001 * rows.len() as f64,
        "{sum} {per_packet}"
    );
    let share: f64 = rows.iter().map(|r| r["share"].as_f64().unwrap()).sum();
    assert!((share - 1.0).abs() < 0.0001 * rows.len() as f64, "{share}");
    // Sorted by bits.
    for w in rows.windows(2) {
        assert!(w[0]["bits_per_packet"].as_f64() >= w[1]["bits_per_packet"].as_f64());
    }
    let (lo, hi) = (
        b["flush_bits_range"][0].as_f64().unwrap(),
        b["flush_bits_range"][1].as_f64().unwrap(),
    );
    let max_body = report["bytes_max"].as_u64().unwrap() as usize;
    assert!(
        lo.abs() <= flush_tolerance_bits(max_body) && hi.abs() <= flush_tolerance_bits(max_body),
        "{lo} {hi}"
    );
    let has = |field: &str, kind: &str| {
        rows.iter()
            .any(|r| r["field"] == field && r["kind"] == kind)
    };
    for f in fields {
        assert!(has(f, "value") && has(f, "mask"), "{f}");
    }
    assert!(has("header", "header"));
    let chart = std::fs::read_to_string(&svg).unwrap();
    well_formed(&chart).unwrap();
    for f in fields {
        assert!(
            chart.contains(&format!(">{}.{f}<", rows[0]["type"].as_str().unwrap()))
                || chart.contains(&format!(".{f}<")),
            "{f}"
        );
    }
    // Without --force the chart is not replaced.
    let args: Vec<String> = [
        "eval",
        &cap.display().to_string(),
        "--by-field",
        "--svg",
        &svg.display().to_string(),
    ]
    .map(str::to_owned)
    .to_vec();
    assert!(run(&args, &mut Vec::new()).is_err());
    std::fs::remove_dir_all(dir).unwrap();
    rows.clone()
}

#[test]
fn racing_attribution_sums_to_the_packets() {
    eval_scenario(
        "racing",
        "racing-lobby",
        &["position", "rotation", "velocity", "steering", "throttle"],
    );
}

/// Spawned and recalled rows (cars leaving and coming back into view)
/// are attributed exactly too.
#[test]
fn recalled_rows_are_attributed() {
    let rows = eval_scenario(
        "racing-quantized-view",
        "racing-lobby-quantized",
        &["position", "velocity", "rotation"],
    );
    let exact = |kind: &str| {
        rows.iter()
            .any(|r| r["kind"] == kind && r["exact_bits_per_packet"].as_f64().unwrap() > 1.0)
    };
    assert!(exact("value/recalled") && exact("mask/recalled"));
}

#[test]
fn cube_pile_attribution_sums_to_the_packets() {
    eval_scenario(
        "cubes",
        "cube-pile",
        &["position_x", "position_y", "position_z", "orientation_a"],
    );
}

/// A field that never changes costs (about) no value bits: only the
/// keyframe codes it; a changing one costs many.
#[test]
fn a_field_without_changes_gets_no_value_bits() {
    let dir = tmp("still");
    let head = r#"{"game":"g","version":"1","schema":{"entities":[{"name":"e","fields":[{"name":"moving","type":"u32","len":2},{"name":"still","type":"u16"}]}]}}"#;
    let mut text = format!("{head}\n");
    for t in 0..200u32 {
        let ents: Vec<String> = (0..8u32)
            .map(|id| {
                format!(
                    r#"{{"id":{id},"moving":[{},{}],"still":9}}"#,
                    t * 17 + id * 1000,
                    (t * t + id) % 5000
                )
            })
            .collect();
        text += &format!(
            "{{\"tick\":{t},\"sections\":{{\"e\":[{}]}}}}\n",
            ents.join(",")
        );
    }
    let input = dir.join("s.jsonl");
    std::fs::write(&input, text).unwrap();
    let cap = dir.join("s.tpcap");
    cmd(&[&"import", &"jsonl", &input, &cap]);
    let out = cmd(&[
        &"eval",
        &cap,
        &"--by-field",
        &"--json",
        &"--baseline-distance",
        &"2",
    ]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = report["by_field"]["rows"].as_array().unwrap();
    let bits = |field: &str, kind: &str| -> f64 {
        rows.iter()
            .filter(|r| r["field"] == field && r["kind"].as_str().unwrap().starts_with(kind))
            .map(|r| r["bits_per_packet"].as_f64().unwrap())
            .sum()
    };
    assert!(bits("still", "value") < 0.5, "{}", bits("still", "value"));
    assert!(
        bits("moving", "value") > 50.0,
        "{}",
        bits("moving", "value")
    );
    assert_eq!(report["by_field"]["exact_packets"], 0);
    // Without --by-field the report has no such key (the stable keys).
    let plain: serde_json::Value = serde_json::from_str(&cmd(&[
        &"eval",
        &cap,
        &"--json",
        &"--baseline-distance",
        &"2",
    ]))
    .unwrap();
    assert!(plain.get("by_field").is_none());
    // The table names the rows and says how they were attributed.
    let table = cmd(&[&"eval", &cap, &"--by-field", &"--baseline-distance", &"2"]);
    assert!(
        table.contains("where the bits go") && table.contains("moving"),
        "{table}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
