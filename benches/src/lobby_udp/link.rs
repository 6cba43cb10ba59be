//! The lossy, delayed send side of one socket: each datagram is dropped
//! with the link's loss probability, otherwise sent after the latency ±
//! 10%.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use tickpack_scenarios::rng::SplitMix64;

/// A datagram waiting in a [`Link`]: release time, order, destination.
type Queued = Reverse<(Instant, u64, SocketAddr, Vec<u8>)>;

/// One socket's outgoing queue.
#[derive(Debug)]
pub(crate) struct Link {
    rng: SplitMix64,
    loss: f64,
    latency: Duration,
    jitter: Duration,
    order: u64,
    queue: BinaryHeap<Queued>,
    /// Datagrams and bytes handed to the link (what the sender uploads).
    pub(crate) offered: u64,
    pub(crate) offered_bytes: u64,
    pub(crate) lost: u64,
    /// Sends the OS refused (full buffer).
    pub(crate) refused: u64,
}

impl Link {
    pub(crate) fn new(seed: u64, loss: f64, latency: Duration) -> Self {
        Self {
            rng: SplitMix64::new(seed),
            loss,
            latency,
            jitter: latency / 10,
            order: 0,
            queue: BinaryHeap::new(),
            offered: 0,
            offered_bytes: 0,
            lost: 0,
            refused: 0,
        }
    }

    pub(crate) fn push(&mut self, now: Instant, to: SocketAddr, datagram: Vec<u8>) {
        self.offered += 1;
        self.offered_bytes += datagram.len() as u64;
        if self.rng.unit() < self.loss {
            self.lost += 1;
            return;
        }
        let at = now + self.latency - self.jitter + self.jitter.mul_f64(2.0 * self.rng.unit());
        self.order += 1;
        self.queue.push(Reverse((at, self.order, to, datagram)));
    }

    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.queue.peek().map(|Reverse(e)| e.0)
    }

    pub(crate) fn flush(&mut self, now: Instant, socket: &UdpSocket) -> std::io::Result<()> {
        while self.next_due().is_some_and(|at| at <= now) {
            let Some(Reverse((_, _, to, datagram))) = self.queue.pop() else {
                break;
            };
            match socket.send_to(&datagram, to) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.refused += 1,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
