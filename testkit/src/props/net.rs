//! `tickpack-net`'s endpoints under hostile datagrams.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arbitrary::{Result as AResult, Unstructured};
use tickpack::{Primitive, Schema, Snapshot};
use tickpack_net::{Client, ClientConfig, EveryEntity, Handled, Server, ServerConfig, ServerEvent};
use tickpack_transport::conn::{ConnectToken, Key};

const PROTOCOL: u64 = 0x006e_6574;
const NOW: Duration = Duration::from_secs(1_800_000_000);

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A server, an honest client and their clock.
struct Net {
    schema: Schema,
    server: Server<EveryEntity>,
    client: Client,
    now: Duration,
    tick: u32,
    /// Server datagrams to the client and client datagrams, in flight.
    down: Vec<Vec<u8>>,
    up: Vec<Vec<u8>>,
    /// Honest datagrams either way, to replay and mutate.
    seen: Vec<Vec<u8>>,
}

impl Net {
    fn new() -> Option<Self> {
        let schema = Schema::builder()
            .entity("car")
            .field("x", Primitive::F32, 2)
            .build()
            .ok()?;
        let key = Key::from_bytes([7; 32]);
        let server = Server::new(
            schema.clone(),
            ServerConfig::new(PROTOCOL, key.clone()),
            EveryEntity,
        )
        .ok()?;
        let (life, timeout) = (Duration::from_secs(600), Duration::from_secs(600));
        let token = ConnectToken::issue(&key, PROTOCOL, 1, NOW, life, timeout).ok()?;
        let client =
            Client::new(NOW, addr(1), token, schema.clone(), ClientConfig::default()).ok()?;
        Some(Self {
            schema,
            server,
            client,
            now: NOW,
            tick: 0,
            down: Vec::new(),
            up: Vec::new(),
            seen: Vec::new(),
        })
    }

    /// A tick of the server, and every datagram in flight delivered.
    fn step(&mut self, cars: u8) -> Option<()> {
        self.now += Duration::from_millis(16);
        let mut world = Snapshot::new(&self.schema);
        let s = world.section_mut(0)?;
        for id in 0..u32::from(cars % 32) {
            let x = (self.tick + id) as f32;
            s.insert(id, &[x, -x].map(f32::to_le_bytes).concat()).ok()?;
        }
        self.tick += 1;
        self.server.tick(self.now, Arc::new(world)).ok()?;
        self.server.handle_timeout(self.now);
        let mut buf = Vec::new();
        while let Some(to) = self.server.poll_transmit(self.now, &mut buf) {
            if to == addr(2) {
                self.keep(&buf);
                self.down.push(std::mem::take(&mut buf));
            }
        }
        for mut d in std::mem::take(&mut self.down) {
            self.client.handle(self.now, addr(1), &mut d);
        }
        self.client.handle_timeout(self.now);
        while self.client.poll_transmit(self.now, &mut buf).is_some() {
            self.keep(&buf);
            self.up.push(std::mem::take(&mut buf));
        }
        for mut d in std::mem::take(&mut self.up) {
            self.server.handle(self.now, addr(2), &mut d);
        }
        Some(())
    }

    fn keep(&mut self, d: &[u8]) {
        if self.seen.len() < 64 {
            self.seen.push(d.to_vec());
        }
    }

    /// The honest client's newest applied snapshot is what the server
    /// sent it.
    fn check(&self) {
        let Some((seq, applied)) = self.client.latest() else {
            return;
        };
        let mut sent = Snapshot::default();
        if self.server.session().sent_state(0, seq, &mut sent) {
            assert_eq!(applied, &sent, "sequence {seq}");
        }
    }
}

pub(super) fn net_endpoint_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let Some(mut net) = Net::new() else {
        return Ok(());
    };
    for _ in 0..u.int_in_range(1..=64)? {
        match u.int_in_range(0..=4)? {
            0 => {
                let mut d: Vec<u8> = u.arbitrary()?;
                let from = if u.arbitrary()? {
                    addr(2)
                } else {
                    addr(u.arbitrary()?)
                };
                let h = net.server.handle(net.now, from, &mut d);
                if from != addr(2) {
                    assert!(
                        matches!(h, Handled::Rejected(_) | Handled::Control),
                        "{h:?}"
                    );
                }
            }
            1 => {
                let mut d: Vec<u8> = u.arbitrary()?;
                let _ = net.client.handle(net.now, addr(1), &mut d);
            }
            2 if !net.seen.is_empty() => {
                // A replayed or mutated honest datagram, either way.
                let i = u.choose_index(net.seen.len())?;
                let mut d = net.seen[i].clone();
                if u.arbitrary()? && !d.is_empty() {
                    let at = u.choose_index(d.len())?;
                    d[at] ^= u.int_in_range(1..=255)?;
                }
                if u.arbitrary()? {
                    net.server.handle(net.now, addr(2), &mut d);
                } else {
                    net.client.handle(net.now, addr(1), &mut d);
                }
            }
            _ => {
                let cars = u.arbitrary()?;
                if net.step(cars).is_none() {
                    return Ok(());
                }
            }
        }
        net.check();
    }
    while let Some(e) = net.server.poll_event() {
        // Nothing but the client's own traffic can end its connection.
        if let ServerEvent::ClientDisconnected { reason, .. } = e {
            panic!("the honest client was disconnected: {reason}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::rng::SplitMix64;

    #[test]
    fn random_inputs_keep_the_honest_client_in_sync() {
        let mut rng = SplitMix64::new(0x6e65);
        for len in (0..4000).step_by(40) {
            let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            super::super::net_endpoint(&data);
        }
    }
}
