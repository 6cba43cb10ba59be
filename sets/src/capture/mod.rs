//! Capture files (`*.tpcap`): a self-describing recording of server ticks.
//!
//! A capture holds a header (game, version, tick rate and the schema, so a
//! capture describes itself) and then, per tick, the server's whole
//! snapshot, optionally followed by records of what was actually sent to
//! each client (client, sequence, baseline sequence). Ticks are stored as
//! tickpack packets against the previous tick, so a capture costs about as
//! much disk as one client's stream. The byte layout, limits and rejection
//! rules are in [`CAPTURE.md`](crate::capture::spec).
//!
//! A running server switches recording on by creating a [`CaptureWriter`]
//! and calling [`CaptureWriter::tick`] once per tick (and
//! [`CaptureWriter::sent`] per packet, if it wants acks to survive), or a
//! [`CaptureThread`] that does the same work off the tick thread;
//! [`CaptureReader`] streams it back. Reading never panics and never
//! allocates past [`CaptureLimits`]: a truncated or corrupt capture gives a
//! [`CaptureError`] naming the byte offset of the damage, after every tick
//! before it has been returned.
//!
//! ```
//! use tickpack_sets::capture::{CaptureHeader, CaptureReader, CaptureWriter, Record, SentRecord};
//! use tickpack::{Primitive, Schema, Snapshot};
//!
//! let schema = Schema::builder().entity("car").field("x", Primitive::F32, 1).build()?;
//! let header = CaptureHeader::new("racer", "1.4.2", 60, schema.clone());
//! let mut w = CaptureWriter::new(Vec::new(), &header, Default::default())?;
//! let mut world = Snapshot::new(&schema);
//! for tick in 100..110u64 {
//!     world.section_mut(0).unwrap().insert(7, &(tick as f32).to_le_bytes())?;
//!     w.tick(tick, &world)?;
//!     let sent = SentRecord { client: 1, sequence: tick as u16, baseline: Some(tick as u16 - 1), prior: None, bytes: 9 };
//!     w.sent(&sent)?; // client 1 got a delta against the previous tick
//! }
//! let bytes = w.finish()?;
//!
//! let mut r = CaptureReader::new(&bytes[..])?;
//! assert_eq!(r.header().game, "racer");
//! let mut ticks = 0;
//! while let Some(record) = r.next_record()? {
//!     if let Record::Tick { tick, snapshot } = record {
//!         assert_eq!(snapshot.sections()[0].get(7), Some(&(tick as f32).to_le_bytes()[..]));
//!         ticks += 1;
//!     }
//! }
//! assert_eq!(ticks, 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod format;
mod header;
mod reader;
mod thread;
mod writer;

pub use error::CaptureError;
pub use format::{CAPTURE_VERSION, MAGIC};
pub use reader::{CaptureReader, Record, Ticks};
pub use thread::CaptureThread;
pub use writer::{CaptureOptions, CaptureWriter};

use tickpack::Limits;
use tickpack::Schema;
use tickpack::Snapshot;

/// The capture format specification (`sets/CAPTURE.md`).
pub mod spec {
    #![doc = include_str!("../../CAPTURE.md")]
}

/// What a capture says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureHeader {
    /// Game name (1..=255 bytes of UTF-8).
    pub game: String,
    /// Game version (1..=255 bytes of UTF-8).
    pub version: String,
    /// Ticks per second, 0 if unknown.
    pub tick_rate: u32,
    /// The schema every tick follows, default records included.
    pub schema: Schema,
}

impl CaptureHeader {
    /// A header for `game` at `version`, recorded at `tick_rate` Hz.
    pub fn new(game: &str, version: &str, tick_rate: u32, schema: Schema) -> Self {
        Self {
            game: game.to_owned(),
            version: version.to_owned(),
            tick_rate,
            schema,
        }
    }
}

/// Caps on what reading a capture may allocate. Lengths read from the file
/// are checked against these before anything is allocated for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureLimits {
    /// Largest header body (mostly the schema text). Default 1 MiB.
    pub max_header_bytes: usize,
    /// Largest record body. Default 2 MiB: a keyframe of a full payload
    /// stored raw, plus headers, with decoder limits raised up to 1 MiB of
    /// payload (the default `max_decoded_bytes` is 256 KiB).
    pub max_record_bytes: usize,
    /// The limits of the packet decoder that rebuilds each tick.
    pub decoder: Limits,
}

impl Default for CaptureLimits {
    fn default() -> Self {
        Self {
            max_header_bytes: 1 << 20,
            max_record_bytes: 2 << 20,
            decoder: Limits::default(),
        }
    }
}

/// A record of one packet the server sent: who got it, its sequence, the
/// baseline sequence it was a delta against (`None`: a full snapshot) and
/// the prior baseline it named for predicted fields, if any. It belongs to
/// the tick recorded before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SentRecord {
    /// The client's id.
    pub client: u32,
    /// The packet's sequence.
    pub sequence: u16,
    /// The baseline sequence, if the packet was a delta.
    pub baseline: Option<u16>,
    /// The prior baseline sequence, if the packet named one (only with a
    /// baseline: see [`Reference::predicted`](tickpack::Reference::predicted)).
    pub prior: Option<u16>,
    /// The packet's size in bytes (0 if not recorded).
    pub bytes: u32,
}

/// One tick of a capture, owned: what [`Ticks`] yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedTick {
    /// The server's tick number.
    pub tick: u64,
    /// The whole world at that tick.
    pub snapshot: Snapshot,
    /// Packets sent in that tick, in recorded order.
    pub sent: Vec<SentRecord>,
}

/// A whole capture in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// The header.
    pub header: CaptureHeader,
    /// Every tick, in order.
    pub ticks: Vec<CapturedTick>,
}

impl Capture {
    /// Reads a whole capture; any damage is an error. To keep the ticks
    /// before the damage, iterate [`CaptureReader::ticks`] instead.
    pub fn read<R: std::io::Read>(reader: R, limits: CaptureLimits) -> Result<Self, CaptureError> {
        let r = CaptureReader::with_limits(reader, limits)?;
        let header = r.header().clone();
        let ticks = r.ticks().collect::<Result<Vec<_>, _>>()?;
        Ok(Self { header, ticks })
    }

    /// Writes the capture (ticks and their sent records) to `writer`.
    pub fn write<W: std::io::Write>(
        &self,
        writer: W,
        options: CaptureOptions,
    ) -> Result<W, CaptureError> {
        let mut w = CaptureWriter::new(writer, &self.header, options)?;
        for t in &self.ticks {
            w.tick(t.tick, &t.snapshot)?;
            for s in &t.sent {
                w.sent(s)?;
            }
        }
        w.finish()
    }
}
