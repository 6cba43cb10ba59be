//! [`CaptureWriter`]: records ticks as packets against the previous tick.

use std::io::Write;

use super::error::CaptureError;
use super::format::{
    checksum, put_varint, KIND_END, KIND_SENT, KIND_TICK, SENT_BASELINE, SENT_PRIOR,
};
use super::{header, CaptureHeader, SentRecord};
use tickpack::Baseline;
use tickpack::Encoder;
use tickpack::Snapshot;
use tickpack::MAX_BASELINE_DISTANCE;

/// How a [`CaptureWriter`] stores ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureOptions {
    /// zstd level of the tick packets. Default 1: capture is on the
    /// server's hot path, and level 1 costs about a third less time than
    /// the codec's default 3 for a few percent more disk (CAPTURE.md,
    /// "Cost").
    pub level: i32,
    /// A tick is stored whole (a keyframe) every this many ticks, so a
    /// damaged capture can be resynchronised by tools that scan for
    /// keyframes; 0 stores only the first tick whole. Default 600 (10 s at
    /// 60 Hz).
    pub keyframe_interval: u32,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        Self {
            level: 1,
            keyframe_interval: 600,
        }
    }
}

/// Writes a capture to `W` (a file, a socket, a `Vec<u8>`; wrap files in a
/// [`std::io::BufWriter`]). Each tick costs one tickpack encode of the world
/// against the previous tick, at [`CaptureOptions::level`], and one copy of
/// the snapshot. Call [`CaptureWriter::finish`] to write the end record; a
/// capture without one reads back as truncated after its last tick. After
/// an I/O error (which may leave a record torn) every later call that writes
/// fails with that error.
pub struct CaptureWriter<W: Write> {
    inner: W,
    options: CaptureOptions,
    encoder: Encoder,
    prev: Option<(u64, Snapshot)>,
    since_key: u32,
    ticks: u64,
    written: u64,
    record: Vec<u8>,
    packet: Vec<u8>,
    /// The first I/O error: a record may have been torn, so every later
    /// write fails with it rather than append records after torn bytes.
    failed: Option<CaptureError>,
    /// Whether the last [`CaptureWriter::tick`] was recorded: sends after
    /// one that failed would be read as the previous tick's.
    current: bool,
}

impl<W: Write> core::fmt::Debug for CaptureWriter<W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CaptureWriter")
            .field("options", &self.options)
            .field("ticks", &self.ticks)
            .field("written", &self.written)
            .finish()
    }
}

impl<W: Write> CaptureWriter<W> {
    /// Writes the file header and returns the writer.
    pub fn new(
        mut inner: W,
        header: &CaptureHeader,
        options: CaptureOptions,
    ) -> Result<Self, CaptureError> {
        let h = header::encode(header)?;
        inner.write_all(&h).map_err(|e| CaptureError::io(0, &e))?;
        Ok(Self {
            inner,
            options,
            encoder: Encoder::with_level(header.schema.clone(), options.level),
            prev: None,
            since_key: 0,
            ticks: 0,
            written: h.len() as u64,
            record: Vec::new(),
            packet: Vec::new(),
            failed: None,
            current: false,
        })
    }

    /// Records the world at `tick` (strictly above the previous tick).
    pub fn tick(&mut self, tick: u64, snapshot: &Snapshot) -> Result<(), CaptureError> {
        self.current = false;
        let (gap, baseline) = match &self.prev {
            None => (tick, None),
            Some((p, _)) if tick <= *p => {
                return Err(CaptureError::TickOrder { previous: *p, tick })
            }
            Some((p, snap)) => {
                let gap = tick - p;
                let key = self.options.keyframe_interval > 0
                    && self.since_key + 1 >= self.options.keyframe_interval;
                let near = gap <= u64::from(MAX_BASELINE_DISTANCE);
                let base = (!key && near).then_some(Baseline {
                    sequence: *p as u16,
                    snapshot: snap,
                });
                (gap, base)
            }
        };
        self.encoder
            .encode_to_vec(snapshot, tick as u16, baseline, &mut self.packet)
            .map_err(CaptureError::Encode)?;
        self.since_key = if baseline.is_some() {
            self.since_key + 1
        } else {
            0
        };
        let mut body = Vec::new();
        core::mem::swap(&mut body, &mut self.record);
        body.clear();
        put_varint(&mut body, gap);
        body.extend_from_slice(&self.packet);
        let r = self.write_record(KIND_TICK, &body);
        self.record = body;
        r?;
        match &mut self.prev {
            Some((t, s)) => {
                *t = tick;
                s.clone_from(snapshot);
            }
            None => self.prev = Some((tick, snapshot.clone())),
        }
        self.ticks += 1;
        self.current = true;
        Ok(())
    }

    /// Records a packet sent in the current tick. A prior without a
    /// baseline is not recorded (the codec never sends one). Before any
    /// tick, or after a tick that failed, this is [`CaptureError::NoTick`].
    pub fn sent(&mut self, record: &SentRecord) -> Result<(), CaptureError> {
        if !self.current {
            return Err(CaptureError::NoTick);
        }
        let mut body = Vec::with_capacity(16);
        put_varint(&mut body, u64::from(record.client));
        body.extend_from_slice(&record.sequence.to_le_bytes());
        let prior = record.prior.filter(|_| record.baseline.is_some());
        body.push(
            if record.baseline.is_some() {
                SENT_BASELINE
            } else {
                0
            } | if prior.is_some() { SENT_PRIOR } else { 0 },
        );
        for v in [record.baseline, prior].into_iter().flatten() {
            body.extend_from_slice(&v.to_le_bytes());
        }
        put_varint(&mut body, u64::from(record.bytes));
        self.write_record(KIND_SENT, &body)
    }

    /// Ticks recorded so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Flushes the underlying writer (the capture stays open).
    pub fn flush(&mut self) -> Result<(), CaptureError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self
            .inner
            .flush()
            .map_err(|e| CaptureError::io(self.written, &e));
        if let Err(e) = &r {
            self.failed = Some(e.clone());
        }
        r
    }

    /// Writes the end record, flushes, and returns the underlying writer.
    pub fn finish(mut self) -> Result<W, CaptureError> {
        let mut body = Vec::with_capacity(10);
        put_varint(&mut body, self.ticks);
        self.write_record(KIND_END, &body)?;
        self.flush()?;
        Ok(self.inner)
    }

    fn write_record(&mut self, kind: u8, body: &[u8]) -> Result<(), CaptureError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut head = Vec::with_capacity(11);
        head.push(kind);
        put_varint(&mut head, body.len() as u64);
        let sum = checksum(&[&head, body]).to_le_bytes();
        let at = self.written;
        for part in [&head[..], body, &sum[..]] {
            if let Err(e) = self.inner.write_all(part) {
                let e = CaptureError::io(at, &e);
                self.failed = Some(e.clone());
                return Err(e);
            }
        }
        self.written += (head.len() + body.len() + sum.len()) as u64;
        Ok(())
    }
}
