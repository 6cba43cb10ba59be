//! Writing the payload and finishing the packet: blocks (zstd, raw,
//! RLE) or the dictionary's context-model stream, whichever the
//! entropy setting allows and is smaller.

use super::{active, Encoder, Entropy, ModelStream};
use crate::block::{self, Coders};
use crate::error::EncodeError;
use crate::model;
use crate::packet::FLAG_MODEL;
use crate::pipeline::layout::LenSink;
use crate::pipeline::tokens;

impl Encoder {
    /// Appends the payload's blocks (zstd, raw or RLE per block) to `out`.
    pub(super) fn append_blocks(&mut self, out: &mut Vec<u8>) {
        let prepared = active(&self.dict, &self.keyframe_dict, self.keyframe);
        let coders = Coders {
            zstd: true,
            dict: prepared.map(|p| &p.cdict),
            small_dict: prepared.map(|p| &p.small_cdict),
        };
        block::encode_blocks(
            &mut self.blocks,
            coders,
            &self.payload,
            &mut self.block_scratch,
            out,
        );
    }

    /// Writes the sections' sets and rows, each section in its row mode,
    /// as the payload.
    pub(super) fn write_payload(&mut self) {
        let was_written = core::mem::replace(&mut self.payload_written, true);
        self.sink.clear();
        for (i, s) in self.scratch.iter().enumerate() {
            tokens::write_meta(&mut self.sink, i, &s.tokens, s.tokens.planes);
        }
        for (i, s) in self.scratch.iter().enumerate() {
            if s.tokens.planes {
                self.sink.raw(&s.planes);
            } else {
                tokens::write_rows(&mut self.sink, i, self.elements[i].len(), &s.tokens);
            }
        }
        self.sink.finish_into(&mut self.payload);
        // A payload sized by `size_payload` is written with that length.
        debug_assert!(was_written || self.payload.len() == self.payload_len);
        self.payload_len = self.payload.len();
    }

    /// Writes the payload, or with `defer` only counts its length (the
    /// same as [`Encoder::write_payload`] would write).
    pub(super) fn size_payload(&mut self, defer: bool) {
        if !defer {
            self.payload_written = true;
            self.write_payload();
            return;
        }
        let mut len = LenSink::new();
        if self.size_with_model(&mut len) {
            self.payload.clear();
            self.payload_len = len.len();
            self.payload_written = false;
            return;
        }
        for (i, s) in self.scratch.iter().enumerate() {
            tokens::write_meta(&mut len, i, &s.tokens, s.tokens.planes);
        }
        for (i, s) in self.scratch.iter().enumerate() {
            if s.tokens.planes {
                len.raw(s.planes.len());
            } else {
                tokens::write_rows(&mut len, i, self.elements[i].len(), &s.tokens);
            }
        }
        self.payload.clear();
        self.payload_len = len.len();
        self.payload_written = false;
    }

    /// Counts the payload's length into `len` while coding the model
    /// stream, in one walk, when the packet's stream is due and the walks
    /// are the same (no section as byte planes); returns whether it did.
    fn size_with_model(&mut self, len: &mut LenSink) -> bool {
        let table =
            active(&self.dict, &self.keyframe_dict, self.keyframe).and_then(|p| p.model.as_deref());
        let Some((table, map)) = table.and_then(|t| Some((t, self.context_maps.for_table(t)?)))
        else {
            return false;
        };
        if !matches!(self.model_stream, ModelStream::Due)
            || self.entropy == Entropy::Zstd
            || self.scratch.iter().any(|s| s.tokens.planes)
        {
            return false;
        }
        let buf = core::mem::take(&mut self.model_out);
        self.model_stream = match model::encode_sections_sized(
            map,
            table,
            &self.scratch,
            &self.elements,
            &self.kept_history,
            &self.row_history,
            buf,
            len,
        ) {
            Ok(stream) => ModelStream::Coded(stream),
            Err(_) => ModelStream::Failed,
        };
        true
    }

    /// Writes the payload if only its length was counted.
    pub(super) fn ensure_payload(&mut self) {
        if !self.payload_written {
            self.write_payload();
        }
    }

    /// Replaces `out` with header and blocks.
    pub(super) fn finish_vec(&mut self, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(self.bound());
        out.extend_from_slice(&self.header);
        let prepared = active(&self.dict, &self.keyframe_dict, self.keyframe);
        if self.payload_len == 0 {
            return;
        }
        // The model stream first: `Entropy::Model` keeps it without trying
        // the blocks; `Best` keeps it when it is smaller than they are.
        let table = prepared.and_then(|p| p.model.as_deref());
        let mut model = None;
        let coded = core::mem::replace(&mut self.model_stream, ModelStream::Idle);
        let map = table.and_then(|t| self.context_maps.for_table(t));
        if let (Some(table), Some(map), false) = (table, map, self.entropy == Entropy::Zstd) {
            let stream = match coded {
                ModelStream::Coded(stream) => Ok(stream),
                ModelStream::Failed => Err(()),
                ModelStream::Idle | ModelStream::Due => {
                    let buf = core::mem::take(&mut self.model_out);
                    model::encode_sections(
                        map,
                        table,
                        &self.scratch,
                        &self.elements,
                        &self.kept_history,
                        &self.row_history,
                        buf,
                    )
                    .map_err(|_| ())
                }
            };
            if let Ok(stream) = stream {
                if (1..=block::MAX_BLOCK_CONTENT).contains(&stream.len()) {
                    model = Some(stream);
                } else {
                    self.model_out = stream;
                }
            }
        }
        if let Some(stream) = model {
            if self.tries_blocks(stream.len()) {
                self.finish_blocks(out);
            }
            let blocks = out.len() - self.header.len();
            // The stream wins ties: it spares the block header.
            if blocks == 0 || stream.len() <= blocks {
                out.truncate(self.header.len());
                if let Some(b0) = out.first_mut() {
                    *b0 |= FLAG_MODEL;
                }
                out.extend_from_slice(&stream);
            }
            self.model_out = stream;
            return;
        }
        self.finish_blocks(out);
    }

    /// Whether [`Encoder::finish_vec`] will send the coded model stream
    /// without building the blocks.
    pub(super) fn model_takes_packet(&self) -> bool {
        match &self.model_stream {
            ModelStream::Coded(stream) => {
                (1..=block::MAX_BLOCK_CONTENT).contains(&stream.len())
                    && !self.tries_blocks(stream.len())
            }
            _ => false,
        }
    }

    /// Whether the blocks are built against a model stream of `model`
    /// bytes, to keep the smaller.
    fn tries_blocks(&self, model: usize) -> bool {
        self.entropy != Entropy::Model && self.blocks_may_win(model)
    }

    /// Whether `Entropy::Best` tries the blocks against a model stream of
    /// `model` bytes, the payload sized as by `build_coded` (with the
    /// byte-plane choice deferred, every row as masks and values, unless
    /// that length is over the payload limit):
    /// - when a section spawns an entity that is not recalled (whole
    ///   records against the default record, where a dictionary's long
    ///   matches can beat the model) and the model saved less than a third
    ///   of the payload;
    /// - when the model saved less than an eighth of the payload.
    ///
    /// Elsewhere the blocks win rarely and by little. Measured on the
    /// Quake 3 demos (`q3_replay`, each trained on the other four): trying
    /// the blocks for every packet saves 0.044% of the bytes over trying
    /// them on spawns and over seven eighths; of those tries the blocks won
    /// 31, and every one with a spawn had a model stream of at least 0.67
    /// of the payload, so the two-thirds limit loses 1 byte over the five
    /// demos while the blocks are built for 0.25-1.1% of the packets
    /// instead of 0.9-2.8% (a limit of 11/16 would lose 537 bytes on one
    /// demo).
    /// On the racing lobby and the cube pile with their shipped sets the
    /// model streams are 0.81-0.83 and 0.64-0.72 of the payload and always
    /// smaller than the blocks.
    fn blocks_may_win(&self, model: usize) -> bool {
        let spawns = self
            .scratch
            .iter()
            .any(|s| s.tokens.recalled.iter().any(|&r| !r));
        (spawns && model.saturating_mul(3) > self.payload_len.saturating_mul(2))
            || model.saturating_mul(8) > self.payload_len.saturating_mul(7)
    }

    /// Appends the payload's blocks to `out`: the row-mode trial's when it
    /// built them for this packet, else freshly encoded.
    fn finish_blocks(&mut self, out: &mut Vec<u8>) {
        self.settle_planes(true);
        self.run_trial();
        match self.trial_winner {
            Some(w) => out.extend_from_slice(&self.trial[w]),
            None => {
                self.ensure_payload();
                self.append_blocks(out);
            }
        }
    }

    /// Writes header and blocks into `out`, returning the length.
    pub(super) fn finish(&mut self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let mut packet = core::mem::take(&mut self.packet);
        self.finish_vec(&mut packet);
        let n = packet.len();
        let r = match out.get_mut(..n) {
            Some(dst) => {
                dst.copy_from_slice(&packet);
                Ok(n)
            }
            None => Err(EncodeError::OutputTooSmall {
                needed: n,
                available: out.len(),
            }),
        };
        self.packet = packet;
        r
    }
}
