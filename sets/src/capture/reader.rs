//! [`CaptureReader`]: streams a capture back, record by record.

use std::io::{BufReader, Read};

use super::error::CaptureError;
use super::format::{
    checksum, get_varint, VarintError, CAPTURE_VERSION_OLD_HEADERS, KIND_END, KIND_EXTENSION,
    KIND_SENT, KIND_TICK, PREAMBLE_LEN, SENT_BASELINE, SENT_PRIOR,
};
use super::{header, CaptureHeader, CaptureLimits, CapturedTick, SentRecord};
use tickpack::Baseline;
use tickpack::Decoder;
use tickpack::Snapshot;
use tickpack::{Checksum, PacketHeader, PacketIds, MAX_BASELINE_DISTANCE, MAX_HEADER_LEN};

/// One record of a capture, as [`CaptureReader::next_record`] returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// The world at a tick.
    Tick {
        /// The server's tick number.
        tick: u64,
        /// The world, borrowed from the reader until the next call.
        snapshot: &'a Snapshot,
    },
    /// A packet sent in the last tick returned.
    Sent(SentRecord),
}

/// Reads a capture from any [`Read`] (buffered internally). See the
/// [module docs](super) for an example.
///
/// Every length in the file is checked against [`CaptureLimits`] before
/// anything is allocated for it, and every record's checksum is verified
/// before its contents are used. After an error the reader stays failed:
/// further calls return `Ok(None)`.
pub struct CaptureReader<R: Read> {
    input: BufReader<R>,
    limits: CaptureLimits,
    header: CaptureHeader,
    decoder: Decoder,
    offset: u64,
    prev: Option<u64>,
    latest: Snapshot,
    scratch: Snapshot,
    ticks: u64,
    body: Vec<u8>,
    /// A version-1 capture: packets in the header layout before format 3's
    /// (CAPTURE.md, 3.1), rewritten as they are read.
    old_headers: bool,
    done: bool,
}

impl<R: Read> core::fmt::Debug for CaptureReader<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CaptureReader")
            .field("header", &self.header)
            .field("offset", &self.offset)
            .field("ticks", &self.ticks)
            .finish()
    }
}

impl<R: Read> CaptureReader<R> {
    /// Opens a capture with default limits, reading and checking its header.
    pub fn new(inner: R) -> Result<Self, CaptureError> {
        Self::with_limits(inner, CaptureLimits::default())
    }

    /// Opens a capture under `limits`.
    pub fn with_limits(inner: R, limits: CaptureLimits) -> Result<Self, CaptureError> {
        let mut input = BufReader::new(inner);
        let mut pre = [0u8; PREAMBLE_LEN];
        let got = read_full(&mut input, &mut pre, 0)?;
        let m = got.min(super::MAGIC.len());
        if pre[..m] != super::MAGIC[..m] {
            return Err(CaptureError::BadMagic);
        }
        if got < PREAMBLE_LEN {
            return Err(CaptureError::Truncated {
                offset: 0,
                available: got as u64,
            });
        }
        let (len, version) = header::parse_preamble(&pre, limits.max_header_bytes)?;
        let mut body = Vec::new();
        let got_body = (&mut input)
            .take(len as u64 + 4)
            .read_to_end(&mut body)
            .map_err(|e| CaptureError::io(PREAMBLE_LEN as u64, &e))?;
        if got_body < len + 4 {
            return Err(CaptureError::Truncated {
                offset: 0,
                available: (PREAMBLE_LEN + got_body) as u64,
            });
        }
        let stored = u32::from_le_bytes([body[len], body[len + 1], body[len + 2], body[len + 3]]);
        let actual = checksum(&[&pre, &body[..len]]);
        if stored != actual {
            return Err(CaptureError::ChecksumMismatch {
                offset: 0,
                expected: stored,
                actual,
            });
        }
        let header = header::parse_body(&body[..len])?;
        let mut decoder = Decoder::new(header.schema.clone());
        decoder.set_limits(limits.decoder);
        Ok(Self {
            input,
            limits,
            latest: Snapshot::new(&header.schema),
            scratch: Snapshot::new(&header.schema),
            header,
            decoder,
            offset: (PREAMBLE_LEN + len + 4) as u64,
            prev: None,
            ticks: 0,
            body,
            old_headers: version == CAPTURE_VERSION_OLD_HEADERS,
            done: false,
        })
    }

    /// The capture's header.
    pub fn header(&self) -> &CaptureHeader {
        &self.header
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Tick records read so far.
    pub fn ticks_read(&self) -> u64 {
        self.ticks
    }

    /// The next tick or sent record; `Ok(None)` after the end record (or
    /// after an error).
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, CaptureError> {
        if self.done {
            return Ok(None);
        }
        match self.step() {
            Ok(Step::Tick(tick)) => Ok(Some(Record::Tick {
                tick,
                snapshot: &self.latest,
            })),
            Ok(Step::Sent(s)) => Ok(Some(Record::Sent(s))),
            Ok(Step::End) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
        }
    }

    /// The ticks as an iterator of owned [`CapturedTick`]s, each with the
    /// sent records that follow it. On damage it yields every intact tick,
    /// then the error, then ends.
    pub fn ticks(self) -> Ticks<R> {
        Ticks {
            reader: self,
            pending: None,
            error: None,
        }
    }

    fn step(&mut self) -> Result<Step, CaptureError> {
        loop {
            let at = self.offset;
            let Some(kind) = self.read_record()? else {
                return Err(CaptureError::Truncated {
                    offset: at,
                    available: 0,
                });
            };
            match kind {
                KIND_TICK => return self.tick_record(at).map(Step::Tick),
                KIND_SENT => return self.sent_record(at).map(Step::Sent),
                KIND_END => {
                    let mut pos = 0;
                    let count = get_varint(&self.body, &mut pos, u64::MAX)
                        .ok()
                        .filter(|_| pos == self.body.len())
                        .ok_or(CaptureError::BadRecord {
                            offset: at,
                            reason: "end record is not one varint",
                        })?;
                    if count != self.ticks {
                        return Err(CaptureError::TickCount {
                            offset: at,
                            expected: count,
                            actual: self.ticks,
                        });
                    }
                    let mut one = [0u8; 1];
                    if read_full(&mut self.input, &mut one, self.offset)? != 0 {
                        return Err(CaptureError::TrailingBytes {
                            offset: self.offset,
                        });
                    }
                    return Ok(Step::End);
                }
                k if k >= KIND_EXTENSION => continue,
                k => {
                    return Err(CaptureError::UnknownRecord {
                        offset: at,
                        kind: k,
                    })
                }
            }
        }
    }

    /// Reads one record into `self.body`, checking length and checksum.
    /// `None` at a clean end of input (no byte of a record).
    fn read_record(&mut self) -> Result<Option<u8>, CaptureError> {
        let at = self.offset;
        // kind + up to 5 length bytes, read one at a time (a varint is minimal).
        let mut head = [0u8; 6];
        if read_full(&mut self.input, &mut head[..1], at)? == 0 {
            return Ok(None);
        }
        let mut n = 1;
        let limit = self.limits.max_record_bytes;
        let len = loop {
            if n == head.len() {
                return Err(CaptureError::RecordTooLarge {
                    offset: at,
                    len: 0,
                    limit,
                });
            }
            if read_full(&mut self.input, &mut head[n..n + 1], at + n as u64)? == 0 {
                return Err(CaptureError::Truncated {
                    offset: at,
                    available: n as u64,
                });
            }
            n += 1;
            if head[n - 1] & 0x80 == 0 {
                let mut pos = 1;
                match get_varint(&head[..n], &mut pos, u64::from(u32::MAX)) {
                    Ok(v) => break v,
                    Err(VarintError::Truncated | VarintError::Malformed) => {
                        return Err(CaptureError::RecordTooLarge {
                            offset: at,
                            len: 0,
                            limit,
                        })
                    }
                }
            }
        };
        if len > limit as u64 {
            return Err(CaptureError::RecordTooLarge {
                offset: at,
                len,
                limit,
            });
        }
        self.body.clear();
        // `take` grows the buffer only as bytes actually arrive.
        let got = (&mut self.input)
            .take(len)
            .read_to_end(&mut self.body)
            .map_err(|e| CaptureError::io(at, &e))?;
        let mut sum = [0u8; 4];
        let got_sum = if got as u64 == len {
            read_full(&mut self.input, &mut sum, at)?
        } else {
            0
        };
        if (got as u64) < len || got_sum < 4 {
            return Err(CaptureError::Truncated {
                offset: at,
                available: (n + got + got_sum) as u64,
            });
        }
        let expected = u32::from_le_bytes(sum);
        let actual = checksum(&[&head[..n], &self.body]);
        if expected != actual {
            return Err(CaptureError::ChecksumMismatch {
                offset: at,
                expected,
                actual,
            });
        }
        self.offset = at + (n + got + 4) as u64;
        Ok(Some(head[0]))
    }

    fn tick_record(&mut self, at: u64) -> Result<u64, CaptureError> {
        let bad = |reason| CaptureError::BadRecord { offset: at, reason };
        let mut pos = 0;
        let gap =
            get_varint(&self.body, &mut pos, u64::MAX).map_err(|_| bad("malformed tick number"))?;
        let tick = match self.prev {
            None => gap,
            Some(_) if gap == 0 => return Err(bad("tick number does not increase")),
            Some(p) => p.checked_add(gap).ok_or(bad("tick number overflows"))?,
        };
        if self.old_headers {
            upgrade_header(&mut self.body, pos).map_err(bad)?;
        }
        let packet = &self.body[pos..];
        let (h, _) = PacketHeader::parse(packet)
            .map_err(|error| CaptureError::Packet { offset: at, error })?;
        if h.sequence != tick as u16 {
            return Err(bad("packet sequence is not the tick number"));
        }
        let baseline = match (h.baseline, self.prev) {
            (None, _) => None,
            (Some(_), None) => return Err(bad("delta tick without a previous tick")),
            (Some(b), Some(p)) if b != p as u16 => {
                return Err(bad("packet baseline is not the previous tick"))
            }
            (Some(b), Some(_)) => Some(Baseline {
                sequence: b,
                snapshot: &self.latest,
            }),
        };
        self.decoder
            .decode_into(packet, baseline, &mut self.scratch)
            .map_err(|error| CaptureError::Packet { offset: at, error })?;
        core::mem::swap(&mut self.latest, &mut self.scratch);
        self.prev = Some(tick);
        self.ticks += 1;
        Ok(tick)
    }

    fn sent_record(&mut self, at: u64) -> Result<SentRecord, CaptureError> {
        let bad = |reason| CaptureError::BadRecord { offset: at, reason };
        if self.prev.is_none() {
            return Err(bad("sent record before any tick"));
        }
        let b = &self.body;
        let mut pos = 0;
        let client = get_varint(b, &mut pos, u64::from(u32::MAX))
            .map_err(|_| bad("malformed client id"))? as u32;
        let seq = b.get(pos..pos + 3).ok_or(bad("sent record too short"))?;
        let (sequence, flags) = (u16::from_le_bytes([seq[0], seq[1]]), seq[2]);
        pos += 3;
        if flags & !(SENT_BASELINE | SENT_PRIOR) != 0 || flags == SENT_PRIOR {
            return Err(bad(
                "reserved sent flags set, or a prior without a baseline",
            ));
        }
        let mut seq16 = |on: bool| -> Result<Option<u16>, CaptureError> {
            if !on {
                return Ok(None);
            }
            let s = b.get(pos..pos + 2).ok_or(bad("sent record too short"))?;
            pos += 2;
            Ok(Some(u16::from_le_bytes([s[0], s[1]])))
        };
        let baseline = seq16(flags & SENT_BASELINE != 0)?;
        let prior = seq16(flags & SENT_PRIOR != 0)?;
        let bytes = get_varint(b, &mut pos, u64::from(u32::MAX))
            .map_err(|_| bad("malformed packet size"))? as u32;
        if pos != b.len() {
            return Err(bad("bytes after the sent record's fields"));
        }
        Ok(SentRecord {
            client,
            sequence,
            baseline,
            prior,
            bytes,
        })
    }
}

enum Step {
    Tick(u64),
    Sent(SentRecord),
    End,
}

/// Reads until `buf` is full or the input ends; returns bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8], offset: u64) -> Result<usize, CaptureError> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(CaptureError::io(offset + n as u64, &e)),
        }
    }
    Ok(n)
}

/// Iterator over the ticks of a capture; see [`CaptureReader::ticks`].
#[derive(Debug)]
pub struct Ticks<R: Read> {
    reader: CaptureReader<R>,
    pending: Option<CapturedTick>,
    error: Option<CaptureError>,
}

impl<R: Read> Ticks<R> {
    /// The capture's header.
    pub fn header(&self) -> &CaptureHeader {
        self.reader.header()
    }
}

impl<R: Read> Iterator for Ticks<R> {
    type Item = Result<CapturedTick, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.error.take() {
            return Some(Err(e));
        }
        loop {
            match self.reader.next_record() {
                Ok(Some(Record::Tick { tick, snapshot })) => {
                    let next = CapturedTick {
                        tick,
                        snapshot: snapshot.clone(),
                        sent: Vec::new(),
                    };
                    if let Some(done) = self.pending.replace(next) {
                        return Some(Ok(done));
                    }
                }
                Ok(Some(Record::Sent(s))) => {
                    if let Some(p) = &mut self.pending {
                        p.sent.push(s);
                    }
                }
                Ok(None) => return self.pending.take().map(Ok),
                Err(e) => {
                    return match self.pending.take() {
                        Some(t) => {
                            self.error = Some(e);
                            Some(Ok(t))
                        }
                        None => Some(Err(e)),
                    }
                }
            }
        }
    }
}

/// Rewrites the header of the packet at `pos` of a version-1 capture into
/// today's layout (CAPTURE.md, 3.1). Such packets carry version 2 or 3 in
/// the low bits of their first byte, with bit 6 `IDS` (the ids after the
/// sequence and extension byte, on every keyframe and allowed on deltas),
/// the baseline and prior distances as varints, and extension bits 3-7
/// zero; the rest of the packet is the same in both layouts, since a
/// capture's packets use no dictionary, so never a model block. Other
/// packets are left to the decoder to refuse.
fn upgrade_header(body: &mut Vec<u8>, pos: usize) -> Result<(), &'static str> {
    const BASELINE: u8 = 0x10;
    const DICTIONARY: u8 = 0x20;
    const IDS: u8 = 0x40;
    const EXTENDED: u8 = 0x80;
    let bad = "malformed packet header of a version-1 capture";
    let p = body.get(pos..).unwrap_or(&[]);
    let Some(&b0) = p.first() else {
        return Ok(());
    };
    if !matches!(b0 & 0x0f, 2 | 3) {
        return Ok(());
    }
    let byte = |at: usize| p.get(at).copied().ok_or(bad);
    let u32_at = |at: usize| -> Result<u32, &'static str> {
        let b = p.get(at..at + 4).ok_or(bad)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let sequence = u16::from_le_bytes([byte(1)?, byte(2)?]);
    let mut at = 3;
    let ext = if b0 & EXTENDED != 0 {
        at += 1;
        byte(3)?
    } else {
        0
    };
    let dictionary = b0 & DICTIONARY != 0;
    let mut ids = None;
    if b0 & IDS != 0 {
        let schema_id = u32_at(at)?;
        at += 4;
        let dictionary_id = if dictionary {
            at += 4;
            Some(u32_at(at - 4)?)
        } else {
            None
        };
        ids = Some(PacketIds {
            schema_id,
            dictionary_id,
        });
    }
    let mut varint = || -> Result<u16, &'static str> {
        let v = get_varint(p, &mut at, u64::from(MAX_BASELINE_DISTANCE)).map_err(|_| bad)?;
        if v == 0 {
            return Err(bad);
        }
        Ok(v as u16)
    };
    let baseline = match b0 & BASELINE {
        0 => None,
        _ => Some(sequence.wrapping_sub(varint()?)),
    };
    let prior = match baseline {
        Some(b) if ext & 0x04 != 0 => Some(b.wrapping_sub(varint()?)),
        _ => None,
    };
    let checksum = match ext & 0x03 {
        0 => Checksum::None,
        1 => Checksum::U8(byte(at)?),
        _ => Checksum::U16(u16::from_le_bytes([byte(at)?, byte(at + 1)?])),
    };
    at += checksum.width();
    let header = PacketHeader {
        sequence,
        baseline,
        prior,
        dictionary,
        model: false,
        ids: ids.filter(|_| baseline.is_none()),
        checksum,
    };
    let mut new = Vec::with_capacity(MAX_HEADER_LEN);
    header.write(&mut new);
    body.splice(pos..pos + at, new);
    Ok(())
}
