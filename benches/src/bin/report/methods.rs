//! Every codec the report compares, behind one interface: encode tick `i`
//! against tick `i - DISTANCE` (and `i - 2·DISTANCE` where a codec predicts),
//! decode it back into a [`Snapshot`].

use std::collections::HashMap;
use std::error::Error;
use std::path::Path;

use tickpack::{
    Baseline, Decoder, Dictionary, Encoder, History, Primitive, Schema, Section, Snapshot,
};
use tickpack_sets::dictset::DictionarySet;
use zstd::zstd_safe::{CCtx, CParameter, DCtx};

use tickpack_scenarios::raw;

use crate::q3::Q3;

pub(crate) type Res<T> = Result<T, Box<dyn Error>>;

/// Ticks between a packet and its baseline (the 2015 challenge's 100 ms).
pub(crate) const DISTANCE: usize = 6;
/// Size of every trained zstd dictionary for tickpack's blocks (as the trainer's largest).
const BLOCK_DICT_SIZE: usize = 16 * 1024;
/// Size of the dictionaries for zstd frames of whole snapshots (as `eval`).
const FRAME_DICT_SIZE: usize = 110 * 1024;
/// At most this many training samples per dictionary (evenly spaced).
const MAX_SAMPLES: usize = 400;

/// The data every codec sees: the ticks, their raw serialisations (what a
/// naive sender has at hand: per section a `u32` count, the ids, the
/// records), and which ticks are for training.
pub(crate) struct Data<'a> {
    pub(crate) schema: &'a Schema,
    pub(crate) ticks: &'a [Snapshot],
    pub(crate) raw: Vec<Vec<u8>>,
    /// Ticks `..train_end` train; packets of ticks `train_end..` are measured.
    pub(crate) train_end: usize,
}

impl<'a> Data<'a> {
    pub(crate) fn new(schema: &'a Schema, ticks: &'a [Snapshot], train_end: usize) -> Self {
        let raw = ticks
            .iter()
            .map(|t| {
                let mut v = Vec::new();
                raw::write(t, &mut v);
                v
            })
            .collect();
        Self {
            schema,
            ticks,
            raw,
            train_end,
        }
    }

    /// Training ticks that have a baseline, evenly thinned to `MAX_SAMPLES`.
    fn training(&self) -> Vec<usize> {
        let all: Vec<usize> = (DISTANCE..self.train_end).collect();
        let step = all.len().div_ceil(MAX_SAMPLES).max(1);
        all.into_iter().step_by(step).collect()
    }
}

/// One codec under test.
pub(crate) trait Method {
    /// Encodes the packet of tick `i` into `out`.
    fn encode(&mut self, d: &Data<'_>, i: usize, out: &mut Vec<u8>) -> Res<()>;
    /// Decodes the packet of tick `i`.
    fn decode(&mut self, d: &Data<'_>, i: usize, packet: &[u8]) -> Res<Snapshot>;
}

fn base<'a>(d: &Data<'a>, i: usize) -> Baseline<'a> {
    let b = i - DISTANCE;
    Baseline {
        sequence: (b & 0xffff) as u16,
        snapshot: &d.ticks[b],
    }
}

fn prior<'a>(d: &Data<'a>, i: usize) -> Option<Baseline<'a>> {
    let p = i.checked_sub(2 * DISTANCE)?;
    Some(Baseline {
        sequence: (p & 0xffff) as u16,
        snapshot: &d.ticks[p],
    })
}

/// tickpack, one encoder, no dictionary.
pub(crate) struct Tickpack {
    enc: Encoder,
    dec: Decoder,
}

impl Tickpack {
    pub(crate) fn plain(schema: &Schema) -> Self {
        Self {
            enc: Encoder::new(schema.clone()),
            dec: Decoder::new(schema.clone()),
        }
    }

    /// With a delta dictionary trained now on the training packets'
    /// payloads.
    pub(crate) fn trained_now(d: &Data<'_>) -> Res<Self> {
        let mut enc = Encoder::new(d.schema.clone());
        let mut samples = Vec::new();
        for i in d.training() {
            let mut p = Vec::new();
            let reference = tickpack::Reference::delta(base(d, i)).with_prior(prior(d, i));
            enc.payload(&d.ticks[i], (i & 0xffff) as u16, reference, &mut p)?;
            samples.push(p);
        }
        let bytes = zstd::dict::from_samples(&samples, BLOCK_DICT_SIZE)?;
        let dict = Dictionary::new(0x7e57_d1c7, bytes);
        enc.set_dictionary(Some(&dict))?;
        let mut dec = Decoder::new(d.schema.clone());
        dec.add_dictionary(&dict)?;
        Ok(Self { enc, dec })
    }
}

/// Schemas with `predict` fields (the quantised scenarios) are coded with
/// the prior `i - 2·DISTANCE`, like [`TickpackSet`].
impl Method for Tickpack {
    fn encode(&mut self, d: &Data<'_>, i: usize, out: &mut Vec<u8>) -> Res<()> {
        let reference = tickpack::Reference::delta(base(d, i)).with_prior(prior(d, i));
        self.enc
            .encode_to_vec(&d.ticks[i], (i & 0xffff) as u16, reference, out)?;
        Ok(())
    }

    fn decode(&mut self, d: &Data<'_>, i: usize, packet: &[u8]) -> Res<Snapshot> {
        let reference = tickpack::Reference::delta(base(d, i)).with_prior(prior(d, i));
        Ok(self.dec.decode(packet, reference)?.1)
    }
}

/// tickpack with a shipped dictionary set (operators, `predict` with the
/// prior `i - 2·DISTANCE`, dictionaries). When the set's model table reads
/// histories, each packet gets its baseline's (tick `i - DISTANCE` against
/// `i - 2·DISTANCE`), as a session's ends keep them.
pub(crate) struct TickpackSet {
    enc: Encoder,
    dec: Decoder,
    predicts: bool,
    /// Baseline tick → its history; `None`: the set reads none.
    histories: Option<HashMap<usize, Option<History>>>,
}

impl TickpackSet {
    pub(crate) fn load(dir: &Path, schema: &Schema) -> Res<Self> {
        let set = DictionarySet::load(dir)?;
        set.fits(schema)?;
        let reads_history = set.uses_history();
        Ok(Self {
            enc: set.encoder(tickpack::DEFAULT_LEVEL)?,
            dec: set.decoder()?,
            predicts: set.schema().predicts(),
            histories: reads_history.then(HashMap::new),
        })
    }
}

/// Packet `i`'s baseline history (`None` if the set reads none), computed
/// once per baseline: after the first timed pass it is looked up, as the
/// ends keep it as a by-product of coding the baseline.
fn baseline_history<'h>(
    histories: &'h mut Option<HashMap<usize, Option<History>>>,
    d: &Data<'_>,
    i: usize,
) -> Option<&'h History> {
    let b = i - DISTANCE;
    let bb = b.checked_sub(DISTANCE)?;
    histories
        .as_mut()?
        .entry(b)
        .or_insert_with(|| History::of(d.schema, &d.ticks[b], &d.ticks[bb]))
        .as_ref()
}

impl Method for TickpackSet {
    fn encode(&mut self, d: &Data<'_>, i: usize, out: &mut Vec<u8>) -> Res<()> {
        let seq = (i & 0xffff) as u16;
        let reference = tickpack::Reference::delta(base(d, i))
            .with_prior(prior(d, i).filter(|_| self.predicts))
            .with_history(baseline_history(&mut self.histories, d, i));
        self.enc.encode_to_vec(&d.ticks[i], seq, reference, out)?;
        Ok(())
    }

    fn decode(&mut self, d: &Data<'_>, i: usize, packet: &[u8]) -> Res<Snapshot> {
        let mut out = Snapshot::default();
        let reference = tickpack::Reference::delta(base(d, i))
            .with_prior(prior(d, i))
            .with_history(baseline_history(&mut self.histories, d, i));
        self.dec.decode_into(packet, reference, &mut out)?;
        Ok(out)
    }
}

/// A zstd frame of the raw snapshot, optionally with a dictionary trained
/// on the training ticks' raw snapshots (prepared once: `ZSTD_CDict`/`ZSTD_DDict`).
pub(crate) struct ZstdFrame {
    c: zstd::bulk::Compressor<'static>,
    d: zstd::bulk::Decompressor<'static>,
    buf: Vec<u8>,
}

impl ZstdFrame {
    pub(crate) fn new(level: i32, dict: Option<&[u8]>) -> Res<Self> {
        Ok(match dict {
            None => Self {
                c: zstd::bulk::Compressor::new(level)?,
                d: zstd::bulk::Decompressor::new()?,
                buf: Vec::new(),
            },
            // Prepared (digested) once, as a server would: leaked to live as
            // long as the process, a few hundred KiB per codec in the report.
            Some(dict) => Self {
                c: zstd::bulk::Compressor::with_prepared_dictionary(Box::leak(Box::new(
                    zstd::dict::EncoderDictionary::copy(dict, level),
                )))?,
                d: zstd::bulk::Decompressor::with_prepared_dictionary(Box::leak(Box::new(
                    zstd::dict::DecoderDictionary::copy(dict),
                )))?,
                buf: Vec::new(),
            },
        })
    }

    /// A dictionary for raw snapshots, from the training ticks.
    pub(crate) fn train(d: &Data<'_>) -> Res<Vec<u8>> {
        let samples: Vec<&[u8]> = d.training().iter().map(|&i| &d.raw[i][..]).collect();
        Ok(zstd::dict::from_samples(&samples, FRAME_DICT_SIZE)?)
    }
}

impl Method for ZstdFrame {
    fn encode(&mut self, d: &Data<'_>, i: usize, out: &mut Vec<u8>) -> Res<()> {
        raw::write(&d.ticks[i], &mut self.buf);
        out.clear();
        out.reserve(zstd::zstd_safe::compress_bound(self.buf.len()));
        self.c.compress_to_buffer(&self.buf, out)?;
        Ok(())
    }

    fn decode(&mut self, d: &Data<'_>, _i: usize, packet: &[u8]) -> Res<Snapshot> {
        let raw = self.d.decompress(packet, 1 << 24)?;
        Ok(raw::parse(d.schema, &raw)?)
    }
}

/// lz4_flex block of the raw snapshot, size prepended.
pub(crate) struct Lz4 {
    buf: Vec<u8>,
}

impl Lz4 {
    pub(crate) fn new() -> Self {
        Self { buf: Vec::new() }
    }
}

impl Method for Lz4 {
    fn encode(&mut self, d: &Data<'_>, i: usize, out: &mut Vec<u8>) -> Res<()> {
        raw::write(&d.ticks[i], &mut self.buf);
        *out = lz4_flex::compress_prepend_size(&self.buf);
        Ok(())
    }

    fn decode(&mut self, d: &Data<'_>, _i: usize, packet: &[u8]) -> Res<Snapshot> {
        let raw = lz4_flex::decompress_size_prepended(packet)?;
        Ok(raw::parse(d.schema, &raw)?)
    }
}

/// A zstd frame of the raw snapshot with the baseline's raw snapshot as a
/// prefix (`ZSTD_CCtx_refPrefix`): zstd's own delta mode.
pub(crate) struct RefPrefix<'a> {
    c: CCtx<'a>,
    d: DCtx<'a>,
    raws: &'a [Vec<u8>],
    buf: Vec<u8>,
}

impl<'a> RefPrefix<'a> {
    pub(crate) fn new(level: i32, raws: &'a [Vec<u8>]) -> Res<Self> {
        let mut c = CCtx::create();
        c.set_parameter(CParameter::CompressionLevel(level))
            .map_err(zstd_err)?;
        Ok(Self {
            c,
            d: DCtx::create(),
            raws,
            buf: Vec::new(),
        })
    }
}

fn zstd_err(code: usize) -> Box<dyn Error> {
    zstd::zstd_safe::get_error_name(code).into()
}

impl Method for RefPrefix<'_> {
    fn encode(&mut self, d: &Data<'_>, i: usize, out: &mut Vec<u8>) -> Res<()> {
        raw::write(&d.ticks[i], &mut self.buf);
        self.c
            .ref_prefix(&self.raws[i - DISTANCE])
            .map_err(zstd_err)?;
        out.clear();
        out.reserve(zstd::zstd_safe::compress_bound(self.buf.len()));
        self.c.compress2(out, &self.buf).map_err(zstd_err)?;
        Ok(())
    }

    fn decode(&mut self, d: &Data<'_>, i: usize, packet: &[u8]) -> Res<Snapshot> {
        self.d
            .ref_prefix(&self.raws[i - DISTANCE])
            .map_err(zstd_err)?;
        self.buf.clear();
        self.buf.reserve(self.raws[i].len().max(1 << 16));
        self.d.decompress(&mut self.buf, packet).map_err(zstd_err)?;
        Ok(raw::parse(d.schema, &self.buf)?)
    }
}

/// A snapshot as bitcode sees typed game structs: per section the ids and
/// one column per scalar field element (bitcode derives are struct-of-arrays).
#[derive(bitcode::Encode, bitcode::Decode, Default)]
struct BitSnapshot {
    sections: Vec<BitSection>,
}

#[derive(bitcode::Encode, bitcode::Decode, Default)]
struct BitSection {
    ids: Vec<u32>,
    columns: Vec<Column>,
}

#[derive(bitcode::Encode, bitcode::Decode)]
enum Column {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

fn column(p: Primitive, recs: &[u8], rs: usize, off: usize) -> Column {
    fn get<const N: usize>(
        recs: &[u8],
        rs: usize,
        off: usize,
    ) -> impl Iterator<Item = [u8; N]> + '_ {
        recs.chunks_exact(rs).map(move |r| {
            let mut a = [0u8; N];
            a.copy_from_slice(&r[off..off + N]);
            a
        })
    }
    match p {
        Primitive::U8 => Column::U8(get::<1>(recs, rs, off).map(u8::from_le_bytes).collect()),
        Primitive::I8 => Column::I8(get::<1>(recs, rs, off).map(i8::from_le_bytes).collect()),
        Primitive::U16 => Column::U16(get::<2>(recs, rs, off).map(u16::from_le_bytes).collect()),
        Primitive::I16 => Column::I16(get::<2>(recs, rs, off).map(i16::from_le_bytes).collect()),
        Primitive::U32 => Column::U32(get::<4>(recs, rs, off).map(u32::from_le_bytes).collect()),
        Primitive::I32 => Column::I32(get::<4>(recs, rs, off).map(i32::from_le_bytes).collect()),
        Primitive::U64 => Column::U64(get::<8>(recs, rs, off).map(u64::from_le_bytes).collect()),
        Primitive::I64 => Column::I64(get::<8>(recs, rs, off).map(i64::from_le_bytes).collect()),
        Primitive::F32 => Column::F32(get::<4>(recs, rs, off).map(f32::from_le_bytes).collect()),
        Primitive::F64 => Column::F64(get::<8>(recs, rs, off).map(f64::from_le_bytes).collect()),
    }
}

fn scatter(c: &Column, recs: &mut [u8], rs: usize, off: usize) -> Res<()> {
    fn put<const N: usize, T: Copy>(
        v: &[T],
        recs: &mut [u8],
        rs: usize,
        off: usize,
        le: fn(T) -> [u8; N],
    ) -> Res<()> {
        if v.len() * rs != recs.len() {
            return Err("bitcode: column length".into());
        }
        for (r, &x) in recs.chunks_exact_mut(rs).zip(v) {
            r[off..off + N].copy_from_slice(&le(x));
        }
        Ok(())
    }
    match c {
        Column::U8(v) => put(v, recs, rs, off, u8::to_le_bytes),
        Column::I8(v) => put(v, recs, rs, off, i8::to_le_bytes),
        Column::U16(v) => put(v, recs, rs, off, u16::to_le_bytes),
        Column::I16(v) => put(v, recs, rs, off, i16::to_le_bytes),
        Column::U32(v) => put(v, recs, rs, off, u32::to_le_bytes),
        Column::I32(v) => put(v, recs, rs, off, i32::to_le_bytes),
        Column::U64(v) => put(v, recs, rs, off, u64::to_le_bytes),
        Column::I64(v) => put(v, recs, rs, off, i64::to_le_bytes),
        Column::F32(v) => put(v, recs, rs, off, f32::to_le_bytes),
        Column::F64(v) => put(v, recs, rs, off, f64::to_le_bytes),
    }
}

/// bitcode of the typed records, then a zstd frame (level 3).
pub(crate) struct BitcodeZstd {
    c: zstd::bulk::Compressor<'static>,
    d: zstd::bulk::Decompressor<'static>,
    buf: bitcode::Buffer,
}

impl BitcodeZstd {
    pub(crate) fn new(level: i32) -> Res<Self> {
        Ok(Self {
            c: zstd::bulk::Compressor::new(level)?,
            d: zstd::bulk::Decompressor::new()?,
            buf: bitcode::Buffer::new(),
        })
    }
}

impl Method for BitcodeZstd {
    fn encode(&mut self, d: &Data<'_>, i: usize, out: &mut Vec<u8>) -> Res<()> {
        let snap = BitSnapshot {
            sections: d.ticks[i]
                .sections()
                .iter()
                .zip(d.schema.sections())
                .map(|(s, e)| BitSection {
                    ids: s.ids().to_vec(),
                    columns: e
                        .element_layout()
                        .map(|(off, p)| column(p, s.records(), e.record_size(), off))
                        .collect(),
                })
                .collect(),
        };
        let bytes = self.buf.encode(&snap);
        *out = self.c.compress(bytes)?;
        Ok(())
    }

    fn decode(&mut self, d: &Data<'_>, _i: usize, packet: &[u8]) -> Res<Snapshot> {
        let bytes = self.d.decompress(packet, 1 << 24)?;
        let snap: BitSnapshot = self.buf.decode(&bytes)?;
        let mut sections = Vec::new();
        for (s, e) in snap.sections.into_iter().zip(d.schema.sections()) {
            let rs = e.record_size();
            let mut recs = vec![0u8; s.ids.len() * rs];
            let mut cols = s.columns.iter();
            for (off, _) in e.element_layout() {
                scatter(
                    cols.next().ok_or("bitcode: column count")?,
                    &mut recs,
                    rs,
                    off,
                )?;
            }
            sections.push(Section::from_parts(s.ids, recs, rs)?);
        }
        Ok(Snapshot::from_sections(d.schema, sections)?)
    }
}

/// The Quake-3-style field delta with a trained static Huffman ([`Q3`]).
pub(crate) struct Quake3(Q3);

impl Quake3 {
    pub(crate) fn train(d: &Data<'_>) -> Self {
        let pairs: Vec<_> = d
            .training()
            .iter()
            .map(|&i| (&d.ticks[i - DISTANCE], &d.ticks[i]))
            .collect();
        Self(Q3::train(d.schema, &pairs))
    }
}

impl Method for Quake3 {
    fn encode(&mut self, d: &Data<'_>, i: usize, out: &mut Vec<u8>) -> Res<()> {
        self.0.encode(&d.ticks[i], &d.ticks[i - DISTANCE], out);
        Ok(())
    }

    fn decode(&mut self, d: &Data<'_>, i: usize, packet: &[u8]) -> Res<Snapshot> {
        self.0.decode(packet, &d.ticks[i - DISTANCE])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_scenarios as scenarios;

    #[test]
    fn every_method_round_trips_the_arena() {
        let sc = scenarios::arena_shooter(2, 60);
        let d = Data::new(&sc.schema, &sc.ticks, 40);
        let dict = ZstdFrame::train(&d).ok();
        let mut methods: Vec<Box<dyn Method + '_>> = vec![
            Box::new(Tickpack::plain(&sc.schema)),
            Box::new(ZstdFrame::new(3, None).unwrap()),
            Box::new(Lz4::new()),
            Box::new(RefPrefix::new(3, &d.raw).unwrap()),
            Box::new(BitcodeZstd::new(3).unwrap()),
            Box::new(Quake3::train(&d)),
        ];
        if let Some(dict) = &dict {
            methods.push(Box::new(ZstdFrame::new(3, Some(dict)).unwrap()));
        }
        let mut p = Vec::new();
        for m in &mut methods {
            for i in 40..60 {
                m.encode(&d, i, &mut p).unwrap();
                assert_eq!(m.decode(&d, i, &p).unwrap(), sc.ticks[i]);
            }
        }
    }
}
