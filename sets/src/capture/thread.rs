//! [`CaptureThread`]: a [`CaptureWriter`] on its own thread, so the tick
//! thread pays one `Arc` clone and a channel send per tick.

use std::io::Write;
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::{CaptureError, CaptureHeader, CaptureOptions, CaptureWriter, SentRecord};
use tickpack::Snapshot;

enum Msg {
    Tick(u64, Arc<Snapshot>),
    Sent(SentRecord),
}

/// A capture written by a background thread. [`CaptureThread::tick`] hands
/// the world over as an `Arc<Snapshot>` (the session
/// `Server` of tickpack-session already holds one per tick) and
/// returns at once; the encoding and I/O happen on the writer thread. When
/// the queue is full the tick is dropped (and counted) rather than stalling
/// the server: captures may skip ticks.
///
/// ```
/// use std::sync::Arc;
/// use tickpack_sets::capture::{Capture, CaptureHeader, CaptureLimits, CaptureThread};
/// use tickpack::{Primitive, Schema, Snapshot};
///
/// let schema = Schema::builder().entity("car").field("x", Primitive::F32, 1).build()?;
/// let header = CaptureHeader::new("racer", "1.4.2", 60, schema.clone());
/// let mut capture = CaptureThread::spawn(Vec::new(), &header, Default::default(), 256)?;
/// let world = Arc::new(Snapshot::new(&schema));
/// for tick in 0..10 {
///     capture.tick(tick, world.clone());
/// }
/// let bytes = capture.finish()?;
/// assert_eq!(Capture::read(&bytes[..], CaptureLimits::default())?.ticks.len(), 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CaptureThread<W: Write + Send + 'static> {
    tx: Option<SyncSender<Msg>>,
    handle: Option<JoinHandle<Result<W, CaptureError>>>,
    dropped: u64,
    skipping: bool,
}

impl<W: Write + Send + 'static> core::fmt::Debug for CaptureThread<W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CaptureThread")
            .field("dropped", &self.dropped)
            .finish()
    }
}

impl<W: Write + Send + 'static> CaptureThread<W> {
    /// Writes the header (on this thread, so header errors show here) and
    /// starts the writer thread with room for `queue` pending records.
    pub fn spawn(
        writer: W,
        header: &CaptureHeader,
        options: CaptureOptions,
        queue: usize,
    ) -> Result<Self, CaptureError> {
        let mut w = CaptureWriter::new(writer, header, options)?;
        let (tx, rx) = sync_channel::<Msg>(queue.max(1));
        let handle = std::thread::Builder::new()
            .name("tickpack-capture".into())
            .spawn(move || {
                for m in rx {
                    match m {
                        Msg::Tick(t, s) => w.tick(t, &s)?,
                        Msg::Sent(s) => w.sent(&s)?,
                    }
                }
                w.finish()
            })
            .map_err(|e| CaptureError::io(0, &e))?;
        Ok(Self {
            tx: Some(tx),
            handle: Some(handle),
            dropped: 0,
            skipping: false,
        })
    }

    fn send(&mut self, m: Msg) -> bool {
        let Some(tx) = &self.tx else {
            return false;
        };
        match tx.try_send(m) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => false,
            Err(TrySendError::Disconnected(_)) => {
                self.tx = None;
                false
            }
        }
    }

    /// Queues the world at `tick`; `false` if it was dropped (queue full,
    /// or the writer failed: [`CaptureThread::finish`] tells why).
    pub fn tick(&mut self, tick: u64, snapshot: Arc<Snapshot>) -> bool {
        let ok = self.send(Msg::Tick(tick, snapshot));
        self.skipping = !ok;
        self.dropped += u64::from(!ok);
        ok
    }

    /// Queues a sent record for the last tick queued (dropped with it).
    pub fn sent(&mut self, record: SentRecord) -> bool {
        !self.skipping && self.send(Msg::Sent(record))
    }

    /// Ticks dropped because the queue was full or the writer had failed.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Waits for the queue to drain, writes the end record and returns the
    /// writer, or the first error the writer thread met.
    pub fn finish(mut self) -> Result<W, CaptureError> {
        self.tx = None;
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            _ => Err(CaptureError::Io {
                offset: 0,
                kind: std::io::ErrorKind::Other,
                message: "capture thread panicked".into(),
            }),
        }
    }
}

impl<W: Write + Send + 'static> Drop for CaptureThread<W> {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
