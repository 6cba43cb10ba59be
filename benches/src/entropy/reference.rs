//! The shipped coder (`tickpack::model`, FORMAT.md "Model block") replayed
//! on recorded tokens: the bytes a model block holds (format 3 since the
//! codec moved raw bits to a side stream; format 2 before). Runs of
//! mask bits go token by token here (the codec codes some as runs, to the
//! same bytes).

#![forbid(unsafe_code)]

use tickpack::model::{ModelDecoder, ModelEncoder, ModelSink, ModelTable};

use super::{Coder, Kind, ProtoError, Token};

/// The shipped coder with a table.
#[derive(Debug)]
pub struct Reference<'t> {
    table: &'t ModelTable,
    buf: Vec<u8>,
}

impl<'t> Reference<'t> {
    /// The coder of `table`.
    pub fn new(table: &'t ModelTable) -> Self {
        Self {
            table,
            buf: Vec::new(),
        }
    }
}

impl Coder for Reference<'_> {
    fn encode(&mut self, tokens: &[Token], out: &mut Vec<u8>) {
        let mut enc = ModelEncoder::new(self.table, std::mem::take(&mut self.buf));
        for t in tokens {
            match t.kind {
                Kind::Bit => enc.bit(t.ctx, t.value != 0),
                Kind::Uint => enc.uint(t.ctx, t.value),
                Kind::Sint => enc.sint(t.ctx, t.value),
            }
        }
        out.clear();
        if let Ok(bytes) = enc.finish() {
            out.extend_from_slice(&bytes);
            self.buf = bytes;
        }
    }

    fn decode(
        &mut self,
        tokens: &[Token],
        block: &[u8],
        values: &mut Vec<u64>,
    ) -> Result<(), ProtoError> {
        values.clear();
        let mut dec = ModelDecoder::new(self.table, block).map_err(|_| ProtoError::Truncated)?;
        for t in tokens {
            let v = match t.kind {
                Kind::Bit => dec.bit(t.ctx).map(u64::from),
                Kind::Uint => dec.uint(t.ctx),
                Kind::Sint => dec.sint(t.ctx),
            }
            .map_err(|_| ProtoError::Context { ctx: t.ctx })?;
            values.push(v);
        }
        dec.finish().map_err(|_| ProtoError::Trailing {
            len: block.len(),
            used: 0,
        })
    }
}
