//! Entropy-coder prototypes for the model block's format 3 (issue 36),
//! measured on recorded token streams before one is chosen: table-driven
//! rANS ([`rans`]), an LZMA-style binary arithmetic coder over binarised
//! symbols ([`binary`]) and the shipped range coder ([`reference`](mod@reference)). Not
//! the codec's: the wire format does not change in this session.
//!
//! A token stream is what the block encoder hands its
//! [`ModelSink`]: decisions and values under dense contexts. Every design
//! codes a value the same way (the model's: a head symbol of leaf and
//! second bit, leaf 63's top decision, raw bits, a sign); they differ in
//! how the head and the decisions are coded and where raw bits go.

#![forbid(unsafe_code)]

pub mod binary;
#[cfg(test)]
mod coder_tests;
pub mod corpus;
pub mod heads;
pub mod rans;
pub mod raw;
pub mod reference;

use tickpack::model::{ModelSink, ModelTable, VALUE_SLOTS};

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A binary decision (`value` 0 or 1).
    Bit,
    /// An unsigned value.
    Uint,
    /// A signed value in zigzag form.
    Sint,
}

/// One token of a model block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// Decision or value.
    pub kind: Kind,
    /// Its dense context (bit and value contexts are separate spaces).
    pub ctx: u32,
    /// The decision (0/1) or the value.
    pub value: u64,
}

/// Records tokens in order.
#[derive(Debug, Default)]
pub struct Recorder(pub Vec<Token>);

impl ModelSink for Recorder {
    fn bit(&mut self, ctx: u32, bit: bool) {
        self.0.push(Token {
            kind: Kind::Bit,
            ctx,
            value: u64::from(bit),
        });
    }
    fn uint(&mut self, ctx: u32, v: u64) {
        self.0.push(Token {
            kind: Kind::Uint,
            ctx,
            value: v,
        });
    }
    fn sint(&mut self, ctx: u32, zigzag: u64) {
        self.0.push(Token {
            kind: Kind::Sint,
            ctx,
            value: zigzag,
        });
    }
}

/// Why a prototype stream does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtoError {
    /// A context outside the table.
    Context {
        /// The context.
        ctx: u32,
    },
    /// A rANS state read from the stream outside its interval.
    State {
        /// The state read.
        state: u32,
    },
    /// A stream read past its bytes.
    Truncated,
    /// The streams do not account for every byte, or the final state is
    /// not the initial one.
    Trailing {
        /// Block length.
        len: usize,
        /// Bytes the streams used.
        used: usize,
    },
}

impl core::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Context { ctx } => write!(f, "context {ctx} outside the table"),
            Self::State { state } => write!(f, "rans state {state:#x} outside its interval"),
            Self::Truncated => write!(f, "stream read past its end"),
            Self::Trailing { len, used } => {
                write!(
                    f,
                    "streams use {used} of {len} bytes or end in another state"
                )
            }
        }
    }
}

impl std::error::Error for ProtoError {}

/// A value split the model's way: head symbol (leaf and second bit, see
/// [`heads`]), leaf 63's top decision, raw bits and sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// Head symbol, `0..heads::SYMBOLS`.
    pub head: u8,
    /// For leaf 63: class 64 rather than 63.
    pub top: Option<bool>,
    /// Raw bit count (`class - 2`, at most 62) and the bits.
    pub raw: (u32, u64),
    /// For a signed non-zero value: negative.
    pub sign: Option<bool>,
}

impl Parts {
    /// The parts of `v` (zigzag when `signed`).
    #[inline(always)]
    pub fn of(v: u64, signed: bool) -> Self {
        let magnitude = if signed { (v >> 1) + (v & 1) } else { v };
        let class = 64 - magnitude.leading_zeros();
        let leaf = class.min(63);
        let head = if class < 2 {
            class
        } else {
            ((magnitude >> (class - 2)) & 1) as u32 + 2 * leaf - 2
        };
        let n = class.saturating_sub(2);
        Self {
            head: head as u8,
            top: (leaf == 63).then_some(class == 64),
            raw: (n, magnitude & ((1u64 << n) - 1)),
            sign: (signed && magnitude != 0).then_some(v & 1 == 1),
        }
    }
}

/// The magnitude of head symbol `head` whose leaf-63 decision is `top`
/// and raw bits `raw`, and its raw bit count: what a decoder rebuilds.
#[inline(always)]
pub fn raw_count(head: u8, top: bool) -> u32 {
    let class = class_of_head(head) + u32::from(top);
    class.saturating_sub(2)
}

/// The leaf of head symbol `head`.
#[inline(always)]
pub fn class_of_head(head: u8) -> u32 {
    let s = u32::from(head);
    if s < 2 {
        s
    } else {
        s / 2 + 1
    }
}

/// The value of head `head`, top decision `top`, raw bits `raw` and, for
/// a signed value, sign `negative` (zigzag form).
#[inline(always)]
pub fn assemble(head: u8, top: bool, raw: u64, signed: bool, negative: bool) -> u64 {
    let class = class_of_head(head) + u32::from(top);
    let magnitude = if class < 2 {
        u64::from(class)
    } else {
        let second = u64::from(head & 1 == 1 && head >= 2);
        ((2 | second) << (class - 2)) | raw
    };
    if !signed || magnitude == 0 {
        magnitude
    } else if negative {
        magnitude.wrapping_mul(2).wrapping_sub(1)
    } else {
        magnitude.wrapping_mul(2)
    }
}

/// The probabilities of one value context: its [`VALUE_SLOTS`] slots.
#[inline]
pub fn value_slots(table: &ModelTable, ctx: u32) -> Option<&[u16]> {
    let b = table.shape().bit_contexts as usize;
    let start = b + ctx as usize * VALUE_SLOTS;
    table.probabilities().get(start..start + VALUE_SLOTS)
}

/// Modelled decisions a token stream holds once binarised the model's
/// way (each bit, per value six class-tree decisions, leaf 63's top, the
/// second bit, the sign) and its raw bits: the common denominator of the
/// "decisions per µs" figures.
pub fn decisions(tokens: &[Token]) -> (u64, u64) {
    let (mut d, mut raw) = (0u64, 0u64);
    for t in tokens {
        match t.kind {
            Kind::Bit => d += 1,
            Kind::Uint | Kind::Sint => {
                let p = Parts::of(t.value, t.kind == Kind::Sint);
                d += 6 + u64::from(p.top.is_some()) + u64::from(p.head >= 2);
                d += u64::from(p.sign.is_some());
                raw += u64::from(p.raw.0);
            }
        }
    }
    (d, raw)
}

/// A coder under test: codes a packet's tokens into a block and decodes
/// the values back given the tokens' kinds and contexts (in the codec the
/// walk supplies those).
pub trait Coder {
    /// Codes `tokens` into `out` (cleared first).
    fn encode(&mut self, tokens: &[Token], out: &mut Vec<u8>);
    /// Decodes `block` into `values` (cleared first), one per token of
    /// `tokens` (whose values are not read).
    fn decode(
        &mut self,
        tokens: &[Token],
        block: &[u8],
        values: &mut Vec<u64>,
    ) -> Result<(), ProtoError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_assemble_back() {
        let mut vs: Vec<u64> = (0..300).collect();
        vs.extend((0..64).map(|k| 1u64 << k));
        vs.extend((0..64).map(|k| (1u64 << k) | ((1u64 << k) >> 1) | 1));
        vs.push(u64::MAX);
        for &v in &vs {
            for signed in [false, true] {
                let p = Parts::of(v, signed);
                assert_eq!(raw_count(p.head, p.top == Some(true)), p.raw.0);
                let back = assemble(
                    p.head,
                    p.top == Some(true),
                    p.raw.1,
                    signed,
                    p.sign == Some(true),
                );
                assert_eq!(back, v, "{v} {signed}");
            }
        }
    }
}
