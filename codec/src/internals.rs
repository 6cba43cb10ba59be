//! Pipeline stages exposed for the bench and fuzz crates (feature
//! `internals`). Not a stable API: use [`Encoder`](crate::Encoder) and
//! [`Decoder`](crate::Decoder).

use core::cell::RefCell;
use std::collections::VecDeque;

use crate::block;
pub use crate::block::{BlockHeader, BlockType, BLOCK_HEADER_LEN};
use crate::error::DecodeError;
use crate::model::{ModelError, ModelSink};
use crate::pipeline::layout::{ByteSink, ByteSource};
use crate::pipeline::tokens;
use crate::wire::Reader;
use crate::{Decoder, EncodeError, Encoder, Reference, Snapshot};

/// The payload stage backwards: rebuilds `out` from `payload` (what
/// [`Encoder::payload`](crate::Encoder::payload) gives, before blocks)
/// against `baseline` and `prior`.
pub fn payload_decode(
    decoder: &mut Decoder,
    payload: &[u8],
    baseline: Option<&Snapshot>,
    prior: Option<&Snapshot>,
    out: &mut Snapshot,
) -> Result<(), DecodeError> {
    decoder.decode_payload_into(payload, baseline, prior, out)
}

/// Hands to `sink`, in coding order, the model tokens (decisions and
/// values under their dense contexts) of the packet `encoder` would build
/// against `reference`: what a model block codes, for coder prototypes.
/// The inner result is the first token outside the context map.
pub fn model_tokens<'r>(
    encoder: &mut Encoder,
    snapshot: &Snapshot,
    sequence: u16,
    reference: impl Into<Reference<'r>>,
    sink: &mut dyn ModelSink,
) -> Result<Result<(), ModelError>, EncodeError> {
    encoder.record_model_tokens(snapshot, sequence, reference.into(), sink)
}

/// Entity-set coding of a non-empty `members` (ascending, `< universe`),
/// as the payload bytes of one set (FORMAT.md, "Entity sets").
pub fn set_encode(universe: usize, members: &[u32], out: &mut Vec<u8>) {
    let mut sink = ByteSink::default();
    sink.clear();
    tokens::write_set(&mut sink, 0, 0, universe, members);
    out.extend_from_slice(sink.bytes());
}

/// Reads a non-empty subset of `0..universe` from the start of `data` into
/// `out`; returns the bytes used, or `None` if malformed.
pub fn set_decode(data: &[u8], universe: usize, out: &mut Vec<u32>) -> Option<usize> {
    let mut src = ByteSource::new(data);
    tokens::read_set(&mut src, 0, 0, universe, out).ok()?.ok()?;
    src.consumed().ok()
}

/// A block coder without dictionary, at zstd `level`.
pub struct Blocks(block::ZstdBlocks, Vec<u8>);

impl Blocks {
    /// New coder.
    pub fn new(level: i32) -> Self {
        Self(block::ZstdBlocks::new(level), Vec::new())
    }

    /// Encodes `payload` (non-empty) as blocks, returning the bytes.
    pub fn encode(&mut self, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(payload, &mut out);
        out
    }

    /// Replaces `out` with `payload` encoded as blocks, reusing its
    /// capacity and this coder's scratch.
    pub fn encode_into(&mut self, payload: &[u8], out: &mut Vec<u8>) {
        out.clear();
        block::encode_blocks(
            &mut self.0,
            block::Coders {
                zstd: true,
                ..Default::default()
            },
            payload,
            &mut self.1,
            out,
        );
    }

    /// Decodes blocks into `out`, regenerating at most `max` bytes.
    pub fn decode(
        &mut self,
        data: &[u8],
        max: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DecodeError> {
        block::decode_blocks(&mut self.0, None, &mut Reader::new(data), max, out)
    }
}

/// What one token of a packet's walk codes (FORMAT.md, 4.1-4.3): the
/// walk context class, with [`TokenLabel::index`] saying which one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TokenRole {
    /// A section's flags.
    SectionFlags,
    /// A set's head (index 0: the removed set, 1: the changed set).
    SetHead,
    /// A gap of a list-mode set (index as [`TokenRole::SetHead`]).
    SetGap,
    /// A membership bit of a bitmap-mode set (index as [`TokenRole::SetHead`]).
    SetBit,
    /// The spawn count.
    SpawnCount,
    /// A spawned id's gap.
    SpawnGap,
    /// A row's group bit (index: the group).
    GroupBit,
    /// A row's element bit (index: the element).
    ElementBit,
    /// A float element's kind bit (index: the element).
    KindBit,
    /// An element's value (index: the element).
    Value,
    /// A token the walk did not announce: never expected (the labelling
    /// tests check so), reported rather than guessed.
    Unlabelled,
}

/// Which section, row kind and element (or set) one token codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenLabel {
    /// The schema section (entity type).
    pub section: usize,
    /// The row kind of mask, kind and value tokens: 0 changed, 1 spawned
    /// against the default record, 2 recalled; 0 for other tokens.
    pub row: u32,
    /// What the token is.
    pub role: TokenRole,
    /// The element, group or set the role names (0 where it names none).
    pub index: usize,
}

impl TokenLabel {
    /// The label of walk context number `ctx`.
    pub fn of_walk_context(ctx: u32) -> Self {
        use tokens::ctx;
        let role = match ctx::class(ctx) {
            ctx::SECTION => TokenRole::SectionFlags,
            ctx::SET_HEAD => TokenRole::SetHead,
            ctx::SET_GAP => TokenRole::SetGap,
            ctx::SET_BIT => TokenRole::SetBit,
            ctx::SPAWN_COUNT => TokenRole::SpawnCount,
            ctx::SPAWN_GAP => TokenRole::SpawnGap,
            ctx::MASK_GROUP => TokenRole::GroupBit,
            ctx::MASK_ELEMENT => TokenRole::ElementBit,
            ctx::KIND => TokenRole::KindBit,
            ctx::VALUE => TokenRole::Value,
            _ => TokenRole::Unlabelled,
        };
        Self {
            section: ((ctx >> 16) & 0x3f) as usize,
            row: ctx::row(ctx),
            role,
            index: ctx::index(ctx) as usize,
        }
    }

    fn at(section: usize, row: u32, role: TokenRole, index: usize) -> Self {
        Self {
            section,
            row,
            role,
            index,
        }
    }
}

/// One token: under its walk context ([`walk_tokens`]) or its dense
/// model context ([`model_tokens_labelled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// A binary decision.
    Bit {
        /// Its context.
        ctx: u32,
        /// The bit.
        bit: bool,
    },
    /// An unsigned integer (a walk integer, or a value under a walk context).
    Uint {
        /// Its context.
        ctx: u32,
        /// The integer.
        v: u64,
    },
    /// A signed value in zigzag form (model element values).
    Sint {
        /// Its context.
        ctx: u32,
        /// The zigzag form.
        zigzag: u64,
    },
}

/// Receives labelled tokens in coding order.
pub trait LabelledSink {
    /// One token, what it codes, and (model tokens only) its ideal cost
    /// in bits under the packet's model table: `−log2 p` of its modelled
    /// decisions plus its raw bits, priced as
    /// [`ModelStats::cost_bits`](crate::model::ModelStats::cost_bits) prices them.
    fn token(&mut self, label: TokenLabel, token: Token, cost_bits: Option<f64>);
}

/// Hands to `sink` the walk tokens (FORMAT.md, 4.1-4.3: every row as
/// masks and values) of the packet `encoder` would build against
/// `reference`, each under its walk context, without pricing. The byte
/// layout lays out these decisions (byte planes aside).
pub fn walk_tokens<'r>(
    encoder: &mut Encoder,
    snapshot: &Snapshot,
    sequence: u16,
    reference: impl Into<Reference<'r>>,
    sink: &mut dyn LabelledSink,
) -> Result<(), EncodeError> {
    /// Walk tokens, each labelled by its own context.
    struct Plain<'a>(&'a mut dyn LabelledSink);
    impl tokens::TokenSink for Plain<'_> {
        fn bit(&mut self, ctx: u32, bit: bool) {
            self.0.token(
                TokenLabel::of_walk_context(ctx),
                Token::Bit { ctx, bit },
                None,
            );
        }
        fn uint(&mut self, ctx: u32, v: u64) {
            self.0.token(
                TokenLabel::of_walk_context(ctx),
                Token::Uint { ctx, v },
                None,
            );
        }
    }
    encoder.with_walk(snapshot, sequence, reference.into(), |w| {
        crate::model::walk_sections(&mut Plain(sink), w.scratch, w.elements)
    })?;
    Ok(())
}

/// Hands to `sink`, in coding order, the model tokens of the packet
/// `encoder` would build against `reference`, each with what it codes and
/// its cost under the packet's model table (its dictionary's). `None`
/// when the packet has no model table, the schema no context map, or the
/// payload is empty; the inner error is the first token outside the map.
pub fn model_tokens_labelled<'r>(
    encoder: &mut Encoder,
    snapshot: &Snapshot,
    sequence: u16,
    reference: impl Into<Reference<'r>>,
    sink: &mut dyn LabelledSink,
) -> Result<Option<Result<(), ModelError>>, EncodeError> {
    let done = encoder.with_walk(snapshot, sequence, reference.into(), |w| {
        let (map, table) = (w.map?, w.table?);
        let queue = RefCell::new(VecDeque::new());
        let fwd = Forward {
            queue: &queue,
            table,
            sink,
        };
        let mut labels = Labels {
            walk: crate::model::WalkSink::new(map, fwd)
                .with_kept(w.kept)
                .with_rows(w.rows),
            queue: &queue,
        };
        crate::model::walk_sections(&mut labels, w.scratch, w.elements);
        Some(labels.walk.finish().map(drop))
    })?;
    Ok(done.flatten())
}

/// The ideal cost in bits of `token` (under a dense model context) with
/// `table`; `None` for a context outside it.
pub fn token_cost_bits(table: &crate::model::ModelTable, token: Token) -> Option<f64> {
    use crate::model::{put_sint, put_uint, Decisions, VALUE_SLOTS};
    let shape = table.shape();
    let mut price = Price {
        probs: table.probabilities(),
        bits: 0.0,
        outside: false,
    };
    let base = |ctx: u32| {
        (ctx < shape.value_contexts)
            .then(|| shape.bit_contexts as usize + ctx as usize * VALUE_SLOTS)
    };
    match token {
        Token::Bit { ctx, bit } => {
            if ctx >= shape.bit_contexts {
                return None;
            }
            price.decision(ctx as usize, bit);
        }
        Token::Uint { ctx, v } => put_uint(&mut price, base(ctx)?, v),
        Token::Sint { ctx, zigzag } => put_sint(&mut price, base(ctx)?, zigzag),
    }
    (!price.outside).then_some(price.bits)
}

/// Hands to `decision`, in coding order, the modelled decisions of
/// `token` (under a dense model context) with `table`: each as its
/// probability slot (bit context `c` is slot `c`, value context `c` owns
/// the [`VALUE_SLOTS`](crate::model::VALUE_SLOTS) slots from
/// `bit_contexts + c * VALUE_SLOTS`) and its bit. Returns the token's raw
/// bits, or `None` for a context outside the table. What
/// [`token_cost_bits`] prices, for coder prototypes (adaptive estimates).
pub fn token_decisions(
    table: &crate::model::ModelTable,
    token: Token,
    decision: &mut dyn FnMut(usize, bool),
) -> Option<u32> {
    /// Forwards decisions, counts raw bits.
    struct Each<'f> {
        decision: &'f mut dyn FnMut(usize, bool),
        raw: u32,
    }
    impl crate::model::Decisions for Each<'_> {
        fn decision(&mut self, slot: usize, bit: bool) {
            (self.decision)(slot, bit);
        }
        fn raw(&mut self, _v: u64, n: u32) {
            self.raw += n;
        }
    }
    use crate::model::{put_sint, put_uint, VALUE_SLOTS};
    let shape = table.shape();
    let base = |ctx: u32| {
        (ctx < shape.value_contexts)
            .then(|| shape.bit_contexts as usize + ctx as usize * VALUE_SLOTS)
    };
    let mut each = Each { decision, raw: 0 };
    match token {
        Token::Bit { ctx, bit } => {
            if ctx >= shape.bit_contexts {
                return None;
            }
            (each.decision)(ctx as usize, bit);
        }
        Token::Uint { ctx, v } => put_uint(&mut each, base(ctx)?, v),
        Token::Sint { ctx, zigzag } => put_sint(&mut each, base(ctx)?, zigzag),
    }
    Some(each.raw)
}

/// Sums `−log2 p` of decisions and raw bits.
struct Price<'t> {
    probs: &'t [u16],
    bits: f64,
    outside: bool,
}

impl crate::model::Decisions for Price<'_> {
    fn decision(&mut self, slot: usize, bit: bool) {
        let Some(&p) = self.probs.get(slot) else {
            self.outside = true;
            return;
        };
        let p0 = f64::from(p) / f64::from(crate::model::PROB_ONE);
        self.bits -= if bit { (1.0 - p0).log2() } else { p0.log2() };
    }
    fn raw(&mut self, _v: u64, n: u32) {
        self.bits += f64::from(n);
    }
}

/// The model sink under the walk: pairs each model token with the label
/// the walk announced for it, prices it and hands both on.
struct Forward<'a, 't> {
    queue: &'a RefCell<VecDeque<TokenLabel>>,
    table: &'t crate::model::ModelTable,
    sink: &'a mut dyn LabelledSink,
}

impl Forward<'_, '_> {
    fn hand(&mut self, token: Token) {
        let label = self.queue.borrow_mut().pop_front().unwrap_or(TokenLabel {
            section: 0,
            row: 0,
            role: TokenRole::Unlabelled,
            index: 0,
        });
        let cost = token_cost_bits(self.table, token);
        self.sink.token(label, token, cost);
    }
}

impl ModelSink for Forward<'_, '_> {
    fn bit(&mut self, ctx: u32, bit: bool) {
        self.hand(Token::Bit { ctx, bit });
    }
    fn uint(&mut self, ctx: u32, v: u64) {
        self.hand(Token::Uint { ctx, v });
    }
    fn sint(&mut self, ctx: u32, zigzag: u64) {
        self.hand(Token::Sint { ctx, zigzag });
    }
}

impl crate::model::RunSink for Forward<'_, '_> {}

/// The walk as the encoder drives it (fused mask and element calls
/// included, so the model tokens are the packet's own), announcing
/// before each call the labels of the model tokens it gives.
struct Labels<'m, 'a, 't> {
    walk: crate::model::WalkSink<'m, Forward<'a, 't>>,
    queue: &'a RefCell<VecDeque<TokenLabel>>,
}

impl Labels<'_, '_, '_> {
    fn announce(&self, labels: impl Iterator<Item = TokenLabel>) {
        self.queue.borrow_mut().extend(labels);
    }
}

impl tokens::TokenSink for Labels<'_, '_, '_> {
    fn bit(&mut self, ctx: u32, bit: bool) {
        self.announce(core::iter::once(TokenLabel::of_walk_context(ctx)));
        self.walk.bit(ctx, bit);
    }
    fn uint(&mut self, ctx: u32, v: u64) {
        self.announce(core::iter::once(TokenLabel::of_walk_context(ctx)));
        self.walk.uint(ctx, v);
    }
    fn groups(&mut self, section: usize, row: u32, first: usize, n: usize, bits: u64) {
        self.announce(
            (first..first + n).map(|g| TokenLabel::at(section, row, TokenRole::GroupBit, g)),
        );
        self.walk.groups(section, row, first, n, bits);
    }
    fn set_bits(&mut self, section: usize, which: usize, n: usize, bits: u64) {
        self.announce((0..n).map(|_| TokenLabel::at(section, 0, TokenRole::SetBit, which)));
        self.walk.set_bits(section, which, n, bits);
    }
    fn group(&mut self, section: usize, row: u32, first: usize, n: usize, bits: u8) {
        self.announce(
            (first..first + n).map(|e| TokenLabel::at(section, row, TokenRole::ElementBit, e)),
        );
        self.walk.group(section, row, first, n, bits);
    }
    fn row_mask(&mut self, section: usize, row: u32, elements: usize, bits: u64) {
        let groups = elements.div_ceil(tokens::GROUP);
        self.announce((0..groups).map(|g| TokenLabel::at(section, row, TokenRole::GroupBit, g)));
        let mut marked = tokens::marked_groups(bits);
        while marked != 0 {
            let first = marked.trailing_zeros() as usize * tokens::GROUP;
            marked &= marked - 1;
            let n = (elements - first).min(tokens::GROUP);
            self.announce(
                (first..first + n).map(|e| TokenLabel::at(section, row, TokenRole::ElementBit, e)),
            );
        }
        self.walk.row_mask(section, row, elements, bits);
    }
    fn changed_set(&mut self, section: usize, kept: usize, removed: &[u32], members: &[u32]) {
        if !self.walk.changed_flags() {
            // As tokens through this sink, so each is labelled.
            tokens::write_set(self, section, 1, kept, members);
            return;
        }
        // A flag per kept entity (none when only one is kept).
        let flags = if kept > 1 { kept } else { 0 };
        self.announce((0..flags).map(|_| TokenLabel::at(section, 0, TokenRole::SetBit, 1)));
        self.walk.changed_set(section, kept, removed, members);
    }
    fn element(&mut self, section: usize, row: u32, element: usize, kind: Option<bool>, v: u64) {
        if kind.is_some() {
            self.announce(core::iter::once(TokenLabel::at(
                section,
                row,
                TokenRole::KindBit,
                element,
            )));
        }
        self.announce(core::iter::once(TokenLabel::at(
            section,
            row,
            TokenRole::Value,
            element,
        )));
        self.walk.element(section, row, element, kind, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelShape, ModelStats, ModelTable};

    #[test]
    fn walk_contexts_label_what_they_code() {
        use tokens::ctx;
        let cases = [
            (ctx::SECTION, 0, 0, TokenRole::SectionFlags),
            (ctx::SET_HEAD, 0, 1, TokenRole::SetHead),
            (ctx::SET_GAP, 0, 0, TokenRole::SetGap),
            (ctx::SET_BIT, 0, 1, TokenRole::SetBit),
            (ctx::SPAWN_COUNT, 0, 0, TokenRole::SpawnCount),
            (ctx::SPAWN_GAP, 0, 0, TokenRole::SpawnGap),
            (ctx::MASK_GROUP, 1, 3, TokenRole::GroupBit),
            (ctx::MASK_ELEMENT, 2, 17, TokenRole::ElementBit),
            (ctx::KIND, 0, 40, TokenRole::KindBit),
            (ctx::VALUE, 1, 63, TokenRole::Value),
        ];
        for (class, row, index, role) in cases {
            let l = TokenLabel::of_walk_context(ctx::make(class, 5, row, index));
            assert_eq!(l, TokenLabel::at(5, row, role, index));
        }
        assert_eq!(
            TokenLabel::of_walk_context(15 << 28).role,
            TokenRole::Unlabelled
        );
    }

    /// Token by token, the costs sum to what the training statistics
    /// price the same tokens at; contexts outside the table are `None`.
    #[test]
    fn token_costs_sum_to_the_statistics_cost() {
        let shape = ModelShape {
            bit_contexts: 3,
            value_contexts: 2,
        };
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let probs = (0..shape.slots())
            .map(|_| 1 + (next() % 4095) as u16)
            .collect();
        let table = ModelTable::from_probabilities(shape, probs).unwrap();
        let mut stats = ModelStats::new(shape).unwrap();
        let mut sum = 0.0;
        for _ in 0..500 {
            let r = next();
            let ctx = (r % 3) as u32;
            let v = next() >> (next() % 64);
            let token = match r % 3 {
                0 => Token::Bit {
                    ctx,
                    bit: v & 1 == 1,
                },
                1 => Token::Uint { ctx: ctx % 2, v },
                _ => Token::Sint {
                    ctx: ctx % 2,
                    zigzag: v,
                },
            };
            match token {
                Token::Bit { ctx, bit } => stats.bit(ctx, bit),
                Token::Uint { ctx, v } => stats.uint(ctx, v),
                Token::Sint { ctx, zigzag } => stats.sint(ctx, zigzag),
            }
            let cost = token_cost_bits(&table, token).unwrap();
            let probs = table.probabilities();
            let mut again = 0.0;
            let raw = token_decisions(&table, token, &mut |slot, bit| {
                let p0 = f64::from(probs[slot]) / 4096.0;
                again -= if bit { (1.0 - p0).log2() } else { p0.log2() };
            })
            .unwrap();
            assert!(
                (again + f64::from(raw) - cost).abs() < 1e-9,
                "{again} {raw} {cost}"
            );
            sum += cost;
        }
        let want = stats.cost_bits(&table).unwrap();
        assert!((sum - want).abs() < 1e-6 * want, "{sum} {want}");
        assert_eq!(
            token_cost_bits(&table, Token::Bit { ctx: 3, bit: true }),
            None
        );
        assert_eq!(token_cost_bits(&table, Token::Uint { ctx: 2, v: 1 }), None);
        assert_eq!(
            token_decisions(&table, Token::Uint { ctx: 2, v: 1 }, &mut |_, _| {}),
            None
        );
    }
}
