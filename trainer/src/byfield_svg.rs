//! The `eval --by-field --svg` chart: one horizontal bar per field (and per
//! packet-level part), stacked by kind of decision, most bits first. Plain
//! SVG written by hand (rectangles and text), like the report's chart but
//! without a plotting dependency.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::byfield::ByField;

/// Most bars drawn; the rest are one "other fields" bar.
pub const MAX_BARS: usize = 48;

const WIDTH: f64 = 1100.0;
const LABEL: f64 = 300.0;
const BAR: f64 = 16.0;
const GAP: f64 = 6.0;
const TOP: f64 = 70.0;

/// The kinds stacked in a bar, in drawing order, with their colours.
const KINDS: [(&str, &str); 9] = [
    ("value", "#d62728"),
    ("kind", "#ff9896"),
    ("mask", "#1f77b4"),
    ("group", "#aec7e8"),
    ("sets", "#2ca02c"),
    ("flags", "#98df8a"),
    ("header", "#7f7f7f"),
    ("block", "#c7c7c7"),
    ("flush", "#9467bd"),
];

/// Text safe inside an SVG element or attribute.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The kind a row's stack segment belongs to (`value/spawned` → `value`).
fn base_kind(kind: &str) -> &str {
    kind.split('/').next().unwrap_or(kind)
}

/// The chart of `b` as an SVG document; `title` names what was replayed.
pub fn svg(b: &ByField, title: &str) -> String {
    // Bits per bar ("type.field") and per kind within it.
    let mut bars: Vec<(String, HashMap<&str, f64>, f64)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for r in &b.rows {
        let name = format!("{}.{}", r.ty, r.field);
        let i = *index.entry(name.clone()).or_insert_with(|| {
            bars.push((name, HashMap::new(), 0.0));
            bars.len() - 1
        });
        let kind = KINDS
            .iter()
            .map(|k| k.0)
            .find(|k| *k == base_kind(&r.kind))
            .unwrap_or("flush");
        *bars[i].1.entry(kind).or_insert(0.0) += r.bits_per_packet.max(0.0);
        bars[i].2 += r.bits_per_packet.max(0.0);
    }
    bars.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    if bars.len() > MAX_BARS {
        let rest = bars.split_off(MAX_BARS - 1);
        let mut other = (format!("{} other fields", rest.len()), HashMap::new(), 0.0);
        for (_, kinds, total) in rest {
            for (k, v) in kinds {
                *other.1.entry(k).or_insert(0.0) += v;
            }
            other.2 += total;
        }
        bars.push(other);
    }
    let max = bars.iter().map(|b| b.2).fold(0.0f64, f64::max).max(1e-9);
    let plot = WIDTH - LABEL - 90.0;
    let height = TOP + bars.len() as f64 * (BAR + GAP) + 50.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="{WIDTH}" height="{height}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="10" y="22" font-size="15">Where the bits go: {:.1} bits/packet over {} packets ({} exact, {} proportional)</text>"#,
        b.bits_per_packet, b.packets, b.exact_packets, b.proportional_packets
    );
    let _ = writeln!(s, r#"<text x="10" y="40">{}</text>"#, esc(title));
    // Legend.
    let mut x = 10.0;
    for (k, colour) in KINDS {
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="50" width="10" height="10" fill="{colour}"/><text x="{}" y="59">{k}</text>"#,
            x + 14.0
        );
        x += 20.0 + 8.0 * k.len() as f64;
    }
    for (i, (name, kinds, total)) in bars.iter().enumerate() {
        let y = TOP + i as f64 * (BAR + GAP);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            LABEL - 8.0,
            y + BAR - 4.0,
            esc(name)
        );
        let mut at = LABEL;
        for (k, colour) in KINDS {
            let Some(&v) = kinds.get(k) else { continue };
            let w = plot * v / max;
            if w <= 0.0 {
                continue;
            }
            let _ = writeln!(
                s,
                r#"<rect x="{at:.2}" y="{y:.2}" width="{w:.2}" height="{BAR}" fill="{colour}"><title>{}: {k} {v:.2} bits/packet</title></rect>"#,
                esc(name)
            );
            at += w;
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.2}" y="{}">{total:.2}</text>"#,
            at + 4.0,
            y + BAR - 4.0
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{LABEL}" y="{}" fill="#555">bits per packet; hover a segment for its value</text>"##,
        height - 16.0
    );
    s.push_str("</svg>\n");
    s
}
