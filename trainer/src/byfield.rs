//! `eval --by-field`: where each packet's bits go, by entity type, field,
//! element and kind (header, block headers, section flags, entity sets,
//! row group bits, element mask bits, kind bits, value bits, coder flush).
//!
//! A packet sent as a model block is attributed exactly: every model token
//! costs `−log2 p` of its decisions under the table's static probabilities
//! plus its raw bits (`tickpack::internals::model_tokens_labelled`), and
//! what the range coder spends beyond the sum of the tokens is the flush
//! row. A packet sent as zstd, raw or RLE blocks is attributed
//! proportionally: its block bodies are shared among the walk's decisions
//! by their byte-layout size (one bit per bit, a varint's bytes per
//! integer), since a compressed byte has no single owner.

#![forbid(unsafe_code)]

use std::collections::HashMap;

use serde::Serialize;
use tickpack::internals::{
    model_tokens_labelled, walk_tokens, BlockHeader, BlockType, LabelledSink, Token, TokenLabel,
    TokenRole,
};
use tickpack::{Encoder, PacketHeader, Schema};

use crate::measure::Job;
use crate::TrainerError;

/// How far a model block's bits may be from the sum of its tokens' ideal
/// costs (the flush row), for a body of `body_bytes`: the range coder's
/// final bytes (at most about two), and the head symbols' frequencies,
/// which follow the table's decisions only to within their quantisation
/// (a small fraction of a bit per value). The flushes of the bundled
/// scenarios and of 3,000 Quake 3 snapshots stay within −12..+11 bits
/// (trainer/tests/byfield.rs; docs/guide.md, "Where the bytes go").
pub fn flush_tolerance_bits(body_bytes: usize) -> f64 {
    16.0 + 0.001 * 8.0 * body_bytes as f64
}

/// What a row of the attribution counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Slot {
    /// The packet header (3.1).
    Header,
    /// Block headers (3.2).
    BlockHeaders,
    /// What the range coder spends beyond its tokens' ideal costs (its
    /// final bytes, and the head frequencies' rounding).
    Flush,
    /// Block bytes of a payload whose walk gave no decisions to share them.
    Unattributed,
    /// A walk token, by section, row kind, role and index (sets folded to
    /// their section).
    Token(usize, u32, TokenRole, usize),
}

/// Bits of one row, summed over packets.
#[derive(Debug, Clone, Copy, Default)]
struct Bits {
    exact: f64,
    proportional: f64,
}

/// The attribution being summed, packet by packet.
pub struct ByFieldAcc {
    schema: Schema,
    encoder: Encoder,
    rows: HashMap<Slot, Bits>,
    packets: u64,
    exact_packets: u64,
    proportional_packets: u64,
    empty_packets: u64,
    packet_bits: u64,
    flush_min: f64,
    flush_max: f64,
    scratch: Vec<(Slot, f64, Option<f64>)>,
}

/// One row of the attribution: a decision kind of one element (or a
/// packet-level part).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ByFieldRow {
    /// Entity type (section name), or `packet` for header, blocks and flush.
    #[serde(rename = "type")]
    pub ty: String,
    /// Field name, or what the row is (`(flags)`, `(entities)`, `(groups)`,
    /// `header`, `block headers`, `flush`, `unattributed`).
    pub field: String,
    /// Element of the field (mask group for `(groups)`), if the row has one.
    pub element: Option<usize>,
    /// `header`, `block`, `flush`, `flags`, `sets`, `group`, `mask`,
    /// `kind`, `value`; row kinds other than changed rows add `/spawned`
    /// or `/recalled`.
    pub kind: String,
    /// Mean bits per packet.
    pub bits_per_packet: f64,
    /// Share of all the packets' bits.
    pub share: f64,
    /// Of `bits_per_packet`, bits attributed exactly (model blocks).
    pub exact_bits_per_packet: f64,
}

/// `by_field` in `eval --json`: where the bits of the measured packets go.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ByField {
    /// Packets attributed.
    pub packets: u64,
    /// Packets sent as one model block: attributed exactly.
    pub exact_packets: u64,
    /// Packets sent as other blocks: block bodies shared proportionally.
    pub proportional_packets: u64,
    /// Packets with an empty payload (header only).
    pub empty_packets: u64,
    /// Mean packet bits (the rows sum to it).
    pub bits_per_packet: f64,
    /// The smallest and largest flush of a model-block packet, bits (the
    /// block's bits less its tokens' ideal costs).
    pub flush_bits_range: Option<(f64, f64)>,
    /// Every row, most bits first.
    pub rows: Vec<ByFieldRow>,
}

/// Hands tokens to the packet's scratch list with their slots.
struct Collect<'a>(&'a mut Vec<(Slot, f64, Option<f64>)>);

fn slot_of(label: TokenLabel) -> Slot {
    use TokenRole::*;
    match label.role {
        SetHead | SetGap | SetBit => Slot::Token(label.section, 0, SetHead, label.index),
        SpawnCount | SpawnGap => Slot::Token(label.section, 0, SpawnCount, 0),
        SectionFlags => Slot::Token(label.section, 0, SectionFlags, 0),
        r => Slot::Token(label.section, label.row, r, label.index),
    }
}

/// Bytes of `v` as a payload varint (LEB128).
fn varint_len(v: u64) -> u32 {
    (64 - v.leading_zeros()).div_ceil(7).max(1)
}

impl LabelledSink for Collect<'_> {
    fn token(&mut self, label: TokenLabel, token: Token, cost_bits: Option<f64>) {
        // The byte layout's size of the decision: the weight of a
        // proportional share.
        let weight = match token {
            Token::Bit { .. } => 1.0,
            Token::Uint { v, .. } | Token::Sint { zigzag: v, .. } => f64::from(8 * varint_len(v)),
        };
        self.0.push((slot_of(label), weight, cost_bits));
    }
}

impl ByFieldAcc {
    /// An empty attribution; `encoder` must be set up as the encoder that
    /// codes the packets (same schema, dictionary and level): it rebuilds
    /// each packet's walk.
    pub fn new(schema: Schema, encoder: Encoder) -> Self {
        Self {
            schema,
            encoder,
            rows: HashMap::new(),
            packets: 0,
            exact_packets: 0,
            proportional_packets: 0,
            empty_packets: 0,
            packet_bits: 0,
            flush_min: f64::INFINITY,
            flush_max: f64::NEG_INFINITY,
            scratch: Vec::new(),
        }
    }

    fn add(&mut self, slot: Slot, bits: f64, exact: bool) {
        let b = self.rows.entry(slot).or_default();
        if exact {
            b.exact += bits;
        } else {
            b.proportional += bits;
        }
    }

    /// Attributes `packet`, the encoding of `job`.
    pub fn packet(&mut self, job: &Job<'_>, packet: &[u8]) -> Result<(), TrainerError> {
        let bad = |e: String| TrainerError::Empty(format!("by-field: {e}"));
        let (head, hlen) = PacketHeader::parse(packet).map_err(|e| bad(e.to_string()))?;
        self.packets += 1;
        self.packet_bits += 8 * packet.len() as u64;
        self.add(Slot::Header, 8.0 * hlen as f64, true);
        // The blocks: header bytes, and body bytes to share; a model block
        // has no block header.
        let model = head.model;
        let (mut at, mut body) = (hlen, 0usize);
        if model {
            (at, body) = (packet.len(), packet.len() - hlen);
        }
        while at < packet.len() {
            let (h, n) = BlockHeader::parse(&packet[at..]).map_err(|e| bad(e.to_string()))?;
            self.add(Slot::BlockHeaders, 8.0 * n as f64, true);
            let len = match (h.last, h.block_type) {
                (false, _) => h.size,
                (true, BlockType::Rle) => 1,
                (true, _) => (packet.len() - at).saturating_sub(n),
            };
            body += len;
            at += n + len;
        }
        if body == 0 {
            self.empty_packets += 1;
            return Ok(());
        }
        let body_bits = 8.0 * body as f64;
        self.scratch.clear();
        if model {
            let done = model_tokens_labelled(
                &mut self.encoder,
                job.snapshot,
                job.sequence,
                job.reference(),
                &mut Collect(&mut self.scratch),
            )?;
            let priced = matches!(done, Some(Ok(())))
                && self.scratch.iter().all(|t| {
                    t.2.is_some() && !matches!(t.0, Slot::Token(_, _, TokenRole::Unlabelled, _))
                });
            if priced {
                self.exact_packets += 1;
                let mut sum = 0.0;
                for i in 0..self.scratch.len() {
                    let (slot, _, cost) = self.scratch[i];
                    let c = cost.unwrap_or(0.0);
                    sum += c;
                    self.add(slot, c, true);
                }
                let flush = body_bits - sum;
                self.flush_min = self.flush_min.min(flush);
                self.flush_max = self.flush_max.max(flush);
                self.add(Slot::Flush, flush, true);
                return Ok(());
            }
            self.scratch.clear();
        }
        self.proportional_packets += 1;
        walk_tokens(
            &mut self.encoder,
            job.snapshot,
            job.sequence,
            job.reference(),
            &mut Collect(&mut self.scratch),
        )?;
        let total: f64 = self.scratch.iter().map(|t| t.1).sum();
        if total <= 0.0 {
            self.add(Slot::Unattributed, body_bits, false);
            return Ok(());
        }
        for i in 0..self.scratch.len() {
            let (slot, w, _) = self.scratch[i];
            self.add(slot, body_bits * w / total, false);
        }
        Ok(())
    }

    /// The attribution so far.
    pub fn finish(&self) -> ByField {
        let n = self.packets.max(1) as f64;
        let total = self.packet_bits.max(1) as f64;
        let mut rows: Vec<ByFieldRow> = self
            .rows
            .iter()
            .map(|(&slot, b)| {
                let (ty, field, element, kind) = self.describe(slot);
                let bits = b.exact + b.proportional;
                ByFieldRow {
                    ty,
                    field,
                    element,
                    kind,
                    bits_per_packet: round3(bits / n),
                    share: round4(bits / total),
                    exact_bits_per_packet: round3(b.exact / n),
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.bits_per_packet
                .total_cmp(&a.bits_per_packet)
                .then_with(|| {
                    (&a.ty, &a.field, a.element, &a.kind)
                        .cmp(&(&b.ty, &b.field, b.element, &b.kind))
                })
        });
        ByField {
            packets: self.packets,
            exact_packets: self.exact_packets,
            proportional_packets: self.proportional_packets,
            empty_packets: self.empty_packets,
            bits_per_packet: round3(self.packet_bits as f64 / n),
            flush_bits_range: (self.exact_packets > 0)
                .then(|| (round3(self.flush_min), round3(self.flush_max))),
            rows,
        }
    }

    /// Type, field, element and kind of a row.
    fn describe(&self, slot: Slot) -> (String, String, Option<usize>, String) {
        let packet = |f: &str, k: &str| ("packet".to_owned(), f.to_owned(), None, k.to_owned());
        let Slot::Token(section, row, role, index) = slot else {
            return match slot {
                Slot::Header => packet("header", "header"),
                Slot::BlockHeaders => packet("block headers", "block"),
                Slot::Flush => packet("flush", "flush"),
                _ => packet("unattributed", "block"),
            };
        };
        let ty = self.schema.sections().get(section);
        let ty_name = ty.map_or_else(|| format!("section {section}"), |t| t.name().to_owned());
        let suffix = match row {
            0 => "",
            1 => "/spawned",
            2 => "/recalled",
            _ => "/other",
        };
        let (field, element, kind) = match role {
            TokenRole::SectionFlags => ("(flags)".to_owned(), None, "flags"),
            TokenRole::SetHead => (
                if index == 0 { "(removed)" } else { "(changed)" }.to_owned(),
                None,
                "sets",
            ),
            TokenRole::SpawnCount => ("(spawned)".to_owned(), None, "sets"),
            TokenRole::GroupBit => ("(groups)".to_owned(), Some(index), "group"),
            TokenRole::ElementBit | TokenRole::KindBit | TokenRole::Value => {
                let (f, e) = ty.map_or((None, index), |t| field_of(t.fields(), index));
                let kind = match role {
                    TokenRole::ElementBit => "mask",
                    TokenRole::KindBit => "kind",
                    _ => "value",
                };
                (
                    f.unwrap_or_else(|| format!("element {index}")),
                    Some(e),
                    kind,
                )
            }
            _ => ("(unlabelled)".to_owned(), None, "other"),
        };
        // Row kinds only tell rows' tokens apart.
        let kind = if element.is_some() {
            format!("{kind}{suffix}")
        } else {
            kind.to_owned()
        };
        (ty_name, field, element, kind)
    }
}

/// The field holding element `index` of a row (fields' elements in order),
/// and the element's index within it.
fn field_of(fields: &[tickpack::Field], index: usize) -> (Option<String>, usize) {
    let mut first = 0;
    for f in fields {
        if index < first + f.len {
            return (Some(f.name.clone()), index - first);
        }
        first += f.len;
    }
    (None, index)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn round4(x: f64) -> f64 {
    (x * 10000.0).round() / 10000.0
}

/// The readable table: rows by bits, those under 0.1% of the bits folded
/// into one line.
pub fn table(b: &ByField) -> String {
    let mut s = format!(
        "where the bits go: {} packets, {:.1} bits/packet ({} model block: exact; {} other blocks: \
         block bytes shared by decision size; {} empty)\n",
        b.packets, b.bits_per_packet, b.exact_packets, b.proportional_packets, b.empty_packets
    );
    if let Some((lo, hi)) = b.flush_bits_range {
        s += &format!("model-block flush per packet: {lo:.1} to {hi:.1} bits\n");
    }
    s += "\n";
    let mut rows = vec![vec![
        "type".to_owned(),
        "field".into(),
        "element".into(),
        "kind".into(),
        "bits/packet".into(),
        "share".into(),
        "exact".into(),
    ]];
    let (mut folded, mut folded_bits) = (0usize, 0.0);
    for r in &b.rows {
        if r.share.abs() < 0.001 {
            folded += 1;
            folded_bits += r.bits_per_packet;
            continue;
        }
        rows.push(vec![
            r.ty.clone(),
            r.field.clone(),
            r.element.map_or_else(String::new, |e| e.to_string()),
            r.kind.clone(),
            format!("{:.2}", r.bits_per_packet),
            format!("{:.1}%", 100.0 * r.share),
            if r.exact_bits_per_packet == r.bits_per_packet {
                "yes".into()
            } else if r.exact_bits_per_packet == 0.0 {
                "no".into()
            } else {
                "part".into()
            },
        ]);
    }
    s += &crate::table::render(&rows);
    if folded > 0 {
        s += &format!(
            "... and {folded} rows under 0.1% each, {folded_bits:.2} bits/packet together (--json lists them)\n"
        );
    }
    s
}
