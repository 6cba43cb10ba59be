//! [`CaptureThread`]: a [`CaptureWriter`] on its own thread, so the tick
//! thread pays one `Arc` clone and a channel send per tick.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::{CaptureError, CaptureHeader, CaptureOptions, CaptureWriter, SentRecord};
use tickpack::Snapshot;

/// One tick and every packet sent in it: written or dropped together.
struct Batch {
    tick: u64,
    snapshot: Arc<Snapshot>,
    sent: Vec<SentRecord>,
}

/// A capture written by a background thread. [`CaptureThread::tick`] hands
/// the world over as an `Arc<Snapshot>` (the session
/// `Server` of tickpack-session already holds one per tick) and
/// returns at once; the encoding and I/O happen on the writer thread. When
/// the queue is full the tick is dropped (and counted) rather than stalling
/// the server: captures may skip ticks.
///
/// A tick and its sends are recorded all or nothing: the sends are kept
/// with their tick and queued with it when the next tick starts (or at
/// [`CaptureThread::finish`]), in a place reserved when the tick was taken.
///
/// Dropping a `CaptureThread` without [`finish`](CaptureThread::finish)
/// never blocks, even on a stalled writer: the writer thread is detached,
/// writes what is queued and the end record, and exits; an error it meets
/// then is lost with the writer, and a process that exits first leaves the
/// capture without its end record (it reads as truncated after its last
/// whole tick). Call `finish` to wait for the writer and see its errors.
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
    tx: Option<Sender<Batch>>,
    handle: Option<JoinHandle<Result<W, CaptureError>>>,
    /// The tick being filled with its sends, its place in the queue taken.
    pending: Option<Batch>,
    /// Ticks queued or pending, not yet written: at most `queue`.
    queued: Arc<AtomicUsize>,
    queue: usize,
    dropped: u64,
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
    /// starts the writer thread with room for `queue` pending ticks (each
    /// with its sends).
    pub fn spawn(
        writer: W,
        header: &CaptureHeader,
        options: CaptureOptions,
        queue: usize,
    ) -> Result<Self, CaptureError> {
        let mut w = CaptureWriter::new(writer, header, options)?;
        // Unbounded: `queued` bounds it, counting a tick from the moment
        // it is taken, so that queueing a tick with its sends never fails.
        let (tx, rx) = channel::<Batch>();
        let queued = Arc::new(AtomicUsize::new(0));
        let done = Arc::clone(&queued);
        let handle = std::thread::Builder::new()
            .name("tickpack-capture".into())
            .spawn(move || {
                for b in rx {
                    let r = write_batch(&mut w, &b);
                    done.fetch_sub(1, Ordering::AcqRel);
                    r?;
                }
                w.finish()
            })
            .map_err(|e| CaptureError::io(0, &e))?;
        Ok(Self {
            tx: Some(tx),
            handle: Some(handle),
            pending: None,
            queued,
            queue: queue.max(1),
            dropped: 0,
        })
    }

    /// Queues the pending tick, if any, with its sends.
    fn flush(&mut self) {
        let Some(batch) = self.pending.take() else {
            return;
        };
        let Some(tx) = &self.tx else {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            self.dropped += 1;
            return;
        };
        if tx.send(batch).is_err() {
            // The writer failed and exited; `finish` tells why.
            self.tx = None;
            self.queued.fetch_sub(1, Ordering::AcqRel);
            self.dropped += 1;
        }
    }

    /// Takes the world at `tick`, to be queued with the sends that follow
    /// it when the next tick starts; `false` if it was dropped (queue full,
    /// or the writer failed: [`CaptureThread::finish`] tells why).
    pub fn tick(&mut self, tick: u64, snapshot: Arc<Snapshot>) -> bool {
        self.flush();
        let room = self.tx.is_some()
            && self
                .queued
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < self.queue).then_some(n + 1)
                })
                .is_ok();
        if room {
            self.pending = Some(Batch {
                tick,
                snapshot,
                sent: Vec::new(),
            });
        } else {
            self.dropped += 1;
        }
        room
    }

    /// Adds a sent record to the last tick taken; `false` (and not
    /// recorded) when that tick was dropped.
    pub fn sent(&mut self, record: SentRecord) -> bool {
        match &mut self.pending {
            Some(b) => {
                b.sent.push(record);
                true
            }
            None => false,
        }
    }

    /// Ticks dropped because the queue was full or the writer had failed.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Queues the last tick, waits for the queue to drain, writes the end
    /// record and returns the writer, or the first error the writer thread
    /// met.
    pub fn finish(mut self) -> Result<W, CaptureError> {
        self.flush();
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

/// Writes one tick and its sends.
fn write_batch<W: Write>(w: &mut CaptureWriter<W>, b: &Batch) -> Result<(), CaptureError> {
    w.tick(b.tick, &b.snapshot)?;
    for s in &b.sent {
        w.sent(s)?;
    }
    Ok(())
}

impl<W: Write + Send + 'static> Drop for CaptureThread<W> {
    fn drop(&mut self) {
        // Detach rather than join: a writer stuck on a stalled sink must
        // not block the thread dropping this (the type's docs say what
        // becomes of the capture).
        self.flush();
        self.tx = None;
        drop(self.handle.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{Capture, CaptureLimits};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;
    use tickpack::{Primitive, Schema};

    /// A sink that, once armed, blocks every write until released.
    #[derive(Clone, Default)]
    struct Gate {
        out: Arc<Mutex<Vec<u8>>>,
        armed: Arc<AtomicBool>,
        open: Arc<(Mutex<bool>, Condvar)>,
    }

    impl Gate {
        fn release(&self) {
            let (open, cv) = &*self.open;
            *open.lock().unwrap() = true;
            cv.notify_all();
        }
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.armed.load(Ordering::Acquire) {
                let (open, cv) = &*self.open;
                let mut o = open.lock().unwrap();
                while !*o {
                    o = cv.wait(o).unwrap();
                }
            }
            self.out.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn header() -> (CaptureHeader, Arc<Snapshot>) {
        let schema = Schema::builder()
            .entity("car")
            .field("x", Primitive::U8, 1)
            .build()
            .unwrap();
        let world = Arc::new(Snapshot::new(&schema));
        (CaptureHeader::new("racer", "1", 60, schema), world)
    }

    fn sent(client: u32, tick: u64) -> SentRecord {
        SentRecord {
            client,
            sequence: tick as u16,
            baseline: None,
            prior: None,
            bytes: 10,
        }
    }

    /// With the writer stalled and a queue of one tick, ticks are dropped,
    /// each whole: every tick in the capture has all its sends (before, a
    /// full queue dropped some of a recorded tick's sends).
    #[test]
    fn a_tick_is_recorded_with_all_its_sends_or_not_at_all() {
        let (h, world) = header();
        let gate = Gate::default();
        let mut t = CaptureThread::spawn(gate.clone(), &h, CaptureOptions::default(), 1).unwrap();
        gate.armed.store(true, Ordering::Release);
        let mut kept = 0u64;
        for tick in 0..20u64 {
            kept += u64::from(t.tick(tick, world.clone()));
            for c in 0..3 {
                t.sent(sent(c, tick));
            }
        }
        assert!(t.dropped() > 0, "the stalled writer made the queue fill");
        gate.release();
        let dropped = t.dropped();
        t.finish().unwrap();
        let bytes = gate.out.lock().unwrap().clone();
        let c = Capture::read(&bytes[..], CaptureLimits::default()).unwrap();
        assert_eq!(c.ticks.len() as u64, kept);
        assert_eq!(kept + dropped, 20);
        for tick in &c.ticks {
            assert_eq!(
                tick.sent.len(),
                3,
                "tick {} kept part of its sends",
                tick.tick
            );
        }
    }

    /// Dropping a capture whose writer is stuck on a stalled sink returns
    /// (it used to join the writer, blocking until the sink moved).
    #[test]
    fn drop_does_not_wait_for_a_stalled_writer() {
        let (h, world) = header();
        let gate = Gate::default();
        let mut t = CaptureThread::spawn(gate.clone(), &h, CaptureOptions::default(), 4).unwrap();
        gate.armed.store(true, Ordering::Release);
        for tick in 0..3 {
            t.tick(tick, world.clone());
        }
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(t);
            let _ = done_tx.send(());
        });
        // A generous deadline, not a measurement: a blocked drop never
        // reports, a detaching one at once.
        let r = done_rx.recv_timeout(Duration::from_secs(60));
        gate.release();
        assert!(r.is_ok(), "drop blocked on the stalled writer");
    }
}
