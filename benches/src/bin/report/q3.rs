//! A Quake-3-style field delta with a trained static Huffman code, after
//! ioquake3's `msg.c` (`MSG_WriteDeltaEntity`, `MSG_WriteBits`).
//!
//! Per section, a 16-bit count of entries, then per entry (ascending ids,
//! only entities that were added, removed or changed against the baseline):
//! the id gap (2-bit class: 0, 4, 8 or 32 bits), a remove bit, then for
//! kept entities `lc`, the number of elements up to the last changed one in
//! frequency order, and for each of those a changed bit and, if set, the
//! delta of the value against the baseline's (new entities: against the
//! section's default record): wrapping integer difference of the bit
//! patterns, zigzagged, written in 1-8 bytes behind a length class.
//! Elements (each scalar, as Quake 3's `netField_t`) are ordered by how
//! often they changed on the training ticks. As in `MSG_WriteBits`, the
//! `n % 8` low bits of a value go raw and its whole bytes through a static
//! Huffman code built from the byte counts of the training packets.

use std::error::Error;

use tickpack::{Primitive, Schema, Section, Snapshot};

type Res<T> = Result<T, Box<dyn Error>>;

/// Longest Huffman code allowed (counts are flattened until it fits).
const MAX_CODE_LEN: u32 = 24;
/// Codes up to this long decode with one table look-up; longer ones bit by bit.
const TABLE_BITS: u32 = 11;

/// A canonical Huffman code over bytes.
#[derive(Debug, Clone)]
pub(crate) struct Huffman {
    /// Per symbol: code bits reversed (so they go LSB-first), and length.
    codes: [(u32, u32); 256],
    /// Per length: first canonical code, index of its first symbol, count.
    first: Vec<(u32, u32, u32)>,
    sorted: Vec<u8>,
    /// Indexed by the next `TABLE_BITS` stream bits: symbol and code length
    /// (0: a longer code).
    table: Vec<(u8, u8)>,
}

impl Huffman {
    /// Builds a code from byte counts (every byte gets a code).
    pub(crate) fn from_counts(counts: &[u64; 256]) -> Self {
        let mut w: Vec<u64> = counts.iter().map(|&c| c + 1).collect();
        let lens = loop {
            let lens = code_lengths(&w);
            if lens.iter().all(|&l| l <= MAX_CODE_LEN) {
                break lens;
            }
            for x in &mut w {
                *x = (*x >> 1).max(1);
            }
        };
        let mut order: Vec<u8> = (0..=255u8).collect();
        order.sort_by_key(|&s| (lens[usize::from(s)], s));
        let mut codes = [(0u32, 0u32); 256];
        let mut first = vec![(0u32, 0u32, 0u32); MAX_CODE_LEN as usize + 1];
        let (mut code, mut prev) = (0u32, 0u32);
        for (k, &s) in order.iter().enumerate() {
            let len = lens[usize::from(s)];
            code <<= len - prev;
            prev = len;
            let slot = &mut first[len as usize];
            if slot.2 == 0 {
                *slot = (code, k as u32, 0);
            }
            slot.2 += 1;
            codes[usize::from(s)] = (code.reverse_bits() >> (32 - len), len);
            code += 1;
        }
        let mut table = vec![(0u8, 0u8); 1 << TABLE_BITS];
        for (s, &(rev, len)) in codes.iter().enumerate() {
            if len <= TABLE_BITS {
                for k in 0..1u32 << (TABLE_BITS - len) {
                    table[(rev | (k << len)) as usize] = (s as u8, len as u8);
                }
            }
        }
        Self {
            codes,
            first,
            sorted: order,
            table,
        }
    }
}

/// Huffman code lengths of `w` (all positive), by the usual two-queue merge.
fn code_lengths(w: &[u64]) -> Vec<u32> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    // Nodes: leaves 0..n, then internal nodes; parent links give depths.
    let n = w.len();
    let mut parent = vec![usize::MAX; 2 * n];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = w
        .iter()
        .enumerate()
        .map(|(i, &x)| Reverse((x, i)))
        .collect();
    let mut next = n;
    while heap.len() > 1 {
        let (Some(Reverse((a, i))), Some(Reverse((b, j)))) = (heap.pop(), heap.pop()) else {
            break;
        };
        parent[i] = next;
        parent[j] = next;
        heap.push(Reverse((a + b, next)));
        next += 1;
    }
    (0..n)
        .map(|i| {
            let (mut d, mut k) = (0, i);
            while parent[k] != usize::MAX {
                k = parent[k];
                d += 1;
            }
            d.max(1)
        })
        .collect()
}

/// Where whole bytes go: counted (training) or Huffman-coded.
enum Bytes<'a> {
    Count(&'a mut [u64; 256]),
    Code(&'a Huffman),
}

struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    n: u32,
    bytes: Bytes<'a>,
}

impl BitWriter<'_> {
    fn raw(&mut self, v: u64, bits: u32) {
        debug_assert!(bits <= 32);
        if bits == 0 {
            return;
        }
        self.acc |= (v & ((1u64 << bits) - 1)) << self.n;
        self.n += bits;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    fn byte(&mut self, b: u8) {
        match &mut self.bytes {
            Bytes::Count(c) => {
                c[usize::from(b)] += 1;
                self.raw(u64::from(b), 8);
            }
            Bytes::Code(h) => {
                let (code, len) = h.codes[usize::from(b)];
                self.raw(u64::from(code), len);
            }
        }
    }

    /// `MSG_WriteBits`: the `bits % 8` low bits raw, then whole bytes coded.
    fn bits(&mut self, v: u64, bits: u32) {
        let r = bits % 8;
        self.raw(v, r);
        let mut v = if r == 0 { v } else { v >> r };
        for _ in 0..bits / 8 {
            self.byte(v as u8);
            v >>= 8;
        }
    }

    fn finish(mut self) {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.acc = 0;
        self.n = 0;
    }
}

struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
    huff: &'a Huffman,
}

impl BitReader<'_> {
    fn bit(&mut self) -> Res<u32> {
        let b = self.data.get(self.pos / 8).ok_or("q3: packet truncated")?;
        let v = (b >> (self.pos % 8)) & 1;
        self.pos += 1;
        Ok(u32::from(v))
    }

    /// The next 32 stream bits (zeros past the end), without consuming them.
    fn peek(&self) -> u32 {
        let (i, sh) = (self.pos / 8, self.pos % 8);
        let mut w = [0u8; 8];
        let avail = self.data.get(i..).unwrap_or(&[]);
        let n = avail.len().min(8);
        w[..n].copy_from_slice(&avail[..n]);
        (u64::from_le_bytes(w) >> sh) as u32
    }

    fn raw(&mut self, bits: u32) -> Res<u64> {
        if bits == 0 {
            return Ok(0);
        }
        if self.pos + bits as usize > 8 * self.data.len() {
            return Err("q3: packet truncated".into());
        }
        let v = u64::from(self.peek()) & ((1u64 << bits) - 1);
        self.pos += bits as usize;
        Ok(v)
    }

    fn byte(&mut self) -> Res<u8> {
        let (sym, len) = self.huff.table[(self.peek() & ((1 << TABLE_BITS) - 1)) as usize];
        if len > 0 {
            if self.pos + usize::from(len) > 8 * self.data.len() {
                return Err("q3: packet truncated".into());
            }
            self.pos += usize::from(len);
            return Ok(sym);
        }
        let mut code = 0u32;
        for len in 1..=MAX_CODE_LEN as usize {
            code = (code << 1) | self.bit()?;
            let (first, index, count) = self.huff.first[len];
            if count > 0 && code >= first && code - first < count {
                return Ok(self.huff.sorted[(index + code - first) as usize]);
            }
        }
        Err("q3: bad Huffman code".into())
    }

    fn bits(&mut self, bits: u32) -> Res<u64> {
        let r = bits % 8;
        let mut v = self.raw(r)?;
        for k in 0..bits / 8 {
            v |= u64::from(self.byte()?) << (r + 8 * k);
        }
        Ok(v)
    }
}

/// One section's layout: elements (offset, byte width) in coding order.
#[derive(Debug, Clone)]
struct Layout {
    elems: Vec<(usize, usize)>,
    lc_bits: u32,
    default: Vec<u8>,
    record_size: usize,
}

/// The trained codec: element order per section and the Huffman code.
#[derive(Debug, Clone)]
pub(crate) struct Q3 {
    layouts: Vec<Layout>,
    huff: Huffman,
    schema: Schema,
}

enum Entry<'s> {
    Removed(u32),
    Kept {
        id: u32,
        base: &'s [u8],
        cur: &'s [u8],
    },
}

fn read_uint(b: &[u8]) -> u64 {
    b.iter()
        .rev()
        .fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

fn write_uint(v: u64, out: &mut [u8]) {
    for (k, o) in out.iter_mut().enumerate() {
        *o = (v >> (8 * k)) as u8;
    }
}

fn width_bits(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

impl Q3 {
    /// Trains on `(baseline, snapshot)` pairs: element change frequencies,
    /// then the byte counts of the packets they make.
    pub(crate) fn train(schema: &Schema, pairs: &[(&Snapshot, &Snapshot)]) -> Self {
        let mut layouts: Vec<Layout> = schema
            .sections()
            .iter()
            .map(|e| {
                let elems: Vec<(usize, usize)> = e
                    .element_layout()
                    .map(|(off, p): (usize, Primitive)| (off, p.size()))
                    .collect();
                Layout {
                    lc_bits: width_bits(elems.len()),
                    elems,
                    default: e.default_record().to_vec(),
                    record_size: e.record_size(),
                }
            })
            .collect();
        for (s, lay) in layouts.iter_mut().enumerate() {
            let mut freq = vec![0u64; lay.elems.len()];
            for (base, cur) in pairs {
                let (Some(b), Some(c)) = (base.sections().get(s), cur.sections().get(s)) else {
                    continue;
                };
                for (id, rec) in c.iter() {
                    let old = b.get(id).unwrap_or(&lay.default);
                    for (k, &(off, w)) in lay.elems.iter().enumerate() {
                        if rec[off..off + w] != old[off..off + w] {
                            freq[k] += 1;
                        }
                    }
                }
            }
            let mut order: Vec<usize> = (0..lay.elems.len()).collect();
            order.sort_by_key(|&k| (std::cmp::Reverse(freq[k]), k));
            lay.elems = order.iter().map(|&k| lay.elems[k]).collect();
        }
        let mut q = Self {
            layouts,
            huff: Huffman::from_counts(&[0; 256]),
            schema: schema.clone(),
        };
        let mut counts = [0u64; 256];
        let mut scratch = Vec::new();
        for (base, cur) in pairs {
            q.write(cur, base, &mut scratch, Bytes::Count(&mut counts));
        }
        q.huff = Huffman::from_counts(&counts);
        q
    }

    /// Encodes `cur` against `base` into `out` (replacing its contents).
    pub(crate) fn encode(&self, cur: &Snapshot, base: &Snapshot, out: &mut Vec<u8>) {
        self.write(cur, base, out, Bytes::Code(&self.huff));
    }

    fn write(&self, cur: &Snapshot, base: &Snapshot, out: &mut Vec<u8>, bytes: Bytes<'_>) {
        out.clear();
        let mut w = BitWriter {
            out,
            acc: 0,
            n: 0,
            bytes,
        };
        let mut entries = Vec::new();
        for ((lay, c), b) in self.layouts.iter().zip(cur.sections()).zip(base.sections()) {
            entries.clear();
            diff(b, c, &lay.default, &mut entries);
            w.bits(entries.len() as u64, 16);
            let mut next = 0u32;
            for e in &entries {
                let id = match e {
                    Entry::Removed(id) | Entry::Kept { id, .. } => *id,
                };
                let gap = u64::from(id.wrapping_sub(next));
                next = id.wrapping_add(1);
                match gap {
                    0 => w.raw(0, 2),
                    1..16 => {
                        w.raw(1, 2);
                        w.raw(gap, 4);
                    }
                    16..256 => {
                        w.raw(2, 2);
                        w.bits(gap, 8);
                    }
                    _ => {
                        w.raw(3, 2);
                        w.bits(gap, 32);
                    }
                }
                let Entry::Kept { base, cur, .. } = e else {
                    w.raw(1, 1);
                    continue;
                };
                w.raw(0, 1);
                let lc = lay
                    .elems
                    .iter()
                    .rposition(|&(off, wd)| cur[off..off + wd] != base[off..off + wd])
                    .map_or(0, |k| k + 1);
                w.raw(lc as u64, lay.lc_bits);
                for &(off, wd) in &lay.elems[..lc] {
                    let (c, b) = (&cur[off..off + wd], &base[off..off + wd]);
                    if c == b {
                        w.raw(0, 1);
                        continue;
                    }
                    w.raw(1, 1);
                    let bits = 8 * wd as u32;
                    let d = read_uint(c).wrapping_sub(read_uint(b));
                    if wd == 1 {
                        w.bits(d, 8);
                        continue;
                    }
                    // Sign-extend the width's difference, zigzag it.
                    let sd = ((d << (64 - bits)) as i64) >> (64 - bits);
                    let z = ((sd << 1) ^ (sd >> 63)) as u64;
                    let nb = (64 - z.leading_zeros()).div_ceil(8).max(1);
                    w.raw(u64::from(nb - 1), width_bits(wd - 1));
                    w.bits(z, 8 * nb);
                }
            }
        }
        w.finish();
    }

    /// Decodes a packet made by [`Q3::encode`] against `base`.
    pub(crate) fn decode(&self, packet: &[u8], base: &Snapshot) -> Res<Snapshot> {
        let mut r = BitReader {
            data: packet,
            pos: 0,
            huff: &self.huff,
        };
        let mut sections = Vec::with_capacity(self.layouts.len());
        for (lay, b) in self.layouts.iter().zip(base.sections()) {
            let count = r.bits(16)? as usize;
            let (mut ids, mut recs) = (Vec::new(), Vec::new());
            let mut bi = 0; // next baseline entity to copy
            let bids = b.ids();
            let mut next = 0u32;
            let mut rec = vec![0u8; lay.record_size];
            for _ in 0..count {
                let gap = match r.raw(2)? {
                    0 => 0,
                    1 => r.raw(4)?,
                    2 => r.bits(8)?,
                    _ => r.bits(32)?,
                };
                let id = next.wrapping_add(gap as u32);
                next = id.wrapping_add(1);
                while bi < bids.len() && bids[bi] < id {
                    ids.push(bids[bi]);
                    recs.extend_from_slice(&b.records()[bi * lay.record_size..][..lay.record_size]);
                    bi += 1;
                }
                let old = if bi < bids.len() && bids[bi] == id {
                    bi += 1;
                    &b.records()[(bi - 1) * lay.record_size..][..lay.record_size]
                } else {
                    &lay.default[..]
                };
                if r.raw(1)? == 1 {
                    continue;
                }
                rec.copy_from_slice(old);
                let lc = r.raw(lay.lc_bits)? as usize;
                for &(off, wd) in lay.elems.get(..lc).ok_or("q3: bad lc")? {
                    if r.raw(1)? == 0 {
                        continue;
                    }
                    let bits = 8 * wd as u32;
                    let d = if wd == 1 {
                        r.bits(8)?
                    } else {
                        let nb = r.raw(width_bits(wd - 1))? as u32 + 1;
                        let z = r.bits(8 * nb)?;
                        ((z >> 1) as i64 ^ -((z & 1) as i64)) as u64
                    };
                    let v = read_uint(&old[off..off + wd]).wrapping_add(d);
                    let v = if bits == 64 {
                        v
                    } else {
                        v & ((1u64 << bits) - 1)
                    };
                    write_uint(v, &mut rec[off..off + wd]);
                }
                ids.push(id);
                recs.extend_from_slice(&rec);
            }
            while bi < bids.len() {
                ids.push(bids[bi]);
                recs.extend_from_slice(&b.records()[bi * lay.record_size..][..lay.record_size]);
                bi += 1;
            }
            sections.push(Section::from_parts(ids, recs, lay.record_size)?);
        }
        Ok(Snapshot::from_sections(&self.schema, sections)?)
    }
}

/// The entries of one section: ids added, removed or changed, ascending.
fn diff<'s>(b: &'s Section, c: &'s Section, default: &'s [u8], out: &mut Vec<Entry<'s>>) {
    let rs = c.record_size();
    let (bids, cids) = (b.ids(), c.ids());
    let rec = |s: &'s Section, i: usize| &s.records()[i * rs..(i + 1) * rs];
    let (mut i, mut j) = (0, 0);
    while i < bids.len() || j < cids.len() {
        let (bi, cj) = (bids.get(i), cids.get(j));
        match (bi, cj) {
            (Some(&x), Some(&y)) if x == y => {
                let (old, new) = (rec(b, i), rec(c, j));
                if old != new {
                    out.push(Entry::Kept {
                        id: y,
                        base: old,
                        cur: new,
                    });
                }
                i += 1;
                j += 1;
            }
            (Some(&x), Some(&y)) if x < y => {
                out.push(Entry::Removed(x));
                i += 1;
            }
            (Some(&x), None) => {
                out.push(Entry::Removed(x));
                i += 1;
            }
            (_, Some(&y)) => {
                out.push(Entry::Kept {
                    id: y,
                    base: default,
                    cur: rec(c, j),
                });
                j += 1;
            }
            (None, None) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_scenarios as scenarios;

    #[test]
    fn huffman_round_trips_every_byte() {
        let mut counts = [0u64; 256];
        counts[0] = 1_000_000;
        counts[7] = 3;
        let h = Huffman::from_counts(&counts);
        let mut out = Vec::new();
        let mut w = BitWriter {
            out: &mut out,
            acc: 0,
            n: 0,
            bytes: Bytes::Code(&h),
        };
        for b in 0..=255u8 {
            w.bits(u64::from(b), 8);
            w.raw(5, 3);
        }
        w.finish();
        let mut r = BitReader {
            data: &out,
            pos: 0,
            huff: &h,
        };
        for b in 0..=255u8 {
            assert_eq!(r.bits(8).unwrap(), u64::from(b));
            assert_eq!(r.raw(3).unwrap(), 5);
        }
    }

    #[test]
    fn round_trips_the_arena_and_cubes() {
        for sc in [scenarios::arena_shooter(1, 40), scenarios::cube_pile(1, 40)] {
            let pairs: Vec<_> = (6..20).map(|i| (&sc.ticks[i - 6], &sc.ticks[i])).collect();
            let q = Q3::train(&sc.schema, &pairs);
            let mut p = Vec::new();
            for i in 6..40 {
                q.encode(&sc.ticks[i], &sc.ticks[i - 6], &mut p);
                assert_eq!(q.decode(&p, &sc.ticks[i - 6]).unwrap(), sc.ticks[i]);
            }
            // Against an empty baseline: everything is new.
            let empty = Snapshot::new(&sc.schema);
            q.encode(&sc.ticks[0], &empty, &mut p);
            assert_eq!(q.decode(&p, &empty).unwrap(), sc.ticks[0]);
        }
    }
}
