//! The connection layer against the outside review's attacks (issue 38 §3):
//! a faster copy of every client packet, connect tokens used twice, an old
//! denial replayed, and a request replayed from many addresses.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use tickpack_transport::conn::{
    Client, ClientState, ConnError, ConnectToken, Key, Server, ServerConfig, ServerEvent,
};

const PROTOCOL: u64 = 0x7469_636b;
const T0: Duration = Duration::from_secs(1_800_000_000);
const STEP: Duration = Duration::from_millis(10);
const SERVER: u16 = 4000;
const CLIENT: u16 = 5000;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn token(key: &Key, client_id: u64) -> ConnectToken {
    ConnectToken::issue(
        key,
        PROTOCOL,
        client_id,
        T0,
        Duration::from_secs(30),
        Duration::from_secs(5),
    )
    .unwrap()
}

fn server(key: &Key, max_clients: u16) -> Server {
    let mut config = ServerConfig::new(PROTOCOL, key.clone());
    config.max_clients = max_clients;
    Server::new(config).unwrap()
}

/// Runs the handshake of `client` from `from`, delivering everything.
fn connect(server: &mut Server, client: &mut Client, from: SocketAddr, now: &mut Duration) {
    for _ in 0..20 {
        *now += Duration::from_millis(100);
        if let Some(mut d) = client.poll_transmit(*now) {
            let _ = server.handle_datagram(*now, from, &mut d);
        }
        while let Some(mut t) = server.poll_transmit() {
            if t.to == from {
                let _ = client.handle_datagram(*now, addr(SERVER), &mut t.datagram);
            }
        }
        if client.is_connected() {
            return;
        }
    }
    panic!("not connected: {:?}", client.state());
}

/// Client and server over a simulated link where `copier`, if set, copies
/// every client datagram and delivers the copy from its own address before
/// the original, and where the server's datagrams reach the client only
/// when addressed to `client_at`.
struct Sim {
    server: Server,
    client: Client,
    now: Duration,
    client_at: SocketAddr,
    copier: Option<SocketAddr>,
    delivered: usize,
    /// Server datagrams to addresses other than the client's.
    elsewhere: usize,
}

impl Sim {
    fn new() -> Self {
        let key = Key::generate().unwrap();
        let mut server = server(&key, 4);
        let mut client = Client::new(T0, addr(SERVER), token(&key, 42), 1200);
        let mut now = T0;
        connect(&mut server, &mut client, addr(CLIENT), &mut now);
        Self {
            server,
            client,
            now,
            client_at: addr(CLIENT),
            copier: None,
            delivered: 0,
            elsewhere: 0,
        }
    }

    fn deliver_up(&mut self, d: Vec<u8>) {
        if let Some(copier) = self.copier {
            let mut copy = d.clone();
            let _ = self.server.handle_datagram(self.now, copier, &mut copy);
        }
        let mut d = d;
        let _ = self
            .server
            .handle_datagram(self.now, self.client_at, &mut d);
    }

    fn deliver_down(&mut self, to: SocketAddr, mut d: Vec<u8>) {
        if to != self.client_at {
            self.elsewhere += 1;
        }
        if to == self.client_at {
            if let Ok(Some(_)) = self.client.handle_datagram(self.now, addr(SERVER), &mut d) {
                self.delivered += 1;
            }
        }
    }

    /// One tick: the client sends an input, the server a snapshot.
    fn tick(&mut self) {
        self.now += STEP;
        let mut out = Vec::new();
        if self.client.send(self.now, b"input", &mut out).is_ok() {
            self.deliver_up(out);
        }
        while let Some(d) = self.client.poll_transmit(self.now) {
            self.deliver_up(d);
        }
        let mut out = Vec::new();
        if let Ok(to) = self.server.send(self.now, 0, b"snapshot", &mut out) {
            self.deliver_down(to, out);
        }
        self.server.handle_timeout(self.now);
        while let Some(t) = self.server.poll_transmit() {
            self.deliver_down(t.to, t.datagram);
        }
    }
}

#[test]
fn a_faster_copy_of_every_client_packet_does_not_cut_the_client_off() {
    let mut sim = Sim::new();
    sim.copier = Some(addr(6666));
    for _ in 0..600 {
        sim.tick();
    }
    assert!(sim.client.is_connected());
    assert_eq!(sim.server.address(0), Some(addr(CLIENT)));
    assert!(
        sim.delivered == 600,
        "{} of 600 snapshots reached the client",
        sim.delivered
    );
}

#[test]
fn a_genuine_nat_rebind_still_moves_the_connection() {
    let mut sim = Sim::new();
    for _ in 0..10 {
        sim.tick();
    }
    // The client's NAT rebinds: the old address is gone.
    sim.client_at = addr(5001);
    let before = sim.delivered;
    for _ in 0..100 {
        sim.tick();
    }
    assert_eq!(sim.server.address(0), Some(addr(5001)));
    assert!(
        sim.delivered - before >= 90,
        "{} of 100 snapshots after the rebind",
        sim.delivered - before
    );
    let moved = std::iter::from_fn(|| sim.server.poll_event())
        .any(|e| matches!(e, ServerEvent::Migrated { to, .. } if to == addr(5001)));
    assert!(moved);
}

#[test]
fn a_token_reused_after_many_connections_cannot_replay_the_first() {
    let key = Key::generate().unwrap();
    let mut server = server(&key, 1);
    let mut now = T0;
    let first_token = token(&key, 42);
    let mut client = Client::new(now, addr(SERVER), first_token.clone(), 1200);
    connect(&mut server, &mut client, addr(CLIENT), &mut now);
    let mut recorded = Vec::new();
    client.send(now, b"fire", &mut recorded).unwrap();
    let mut d = recorded.clone();
    assert!(server.handle_datagram(now, addr(CLIENT), &mut d).is_ok());
    for mut d in client.disconnect(now) {
        let _ = server.handle_datagram(now, addr(CLIENT), &mut d);
    }
    // Eight other players connect and leave through the only slot.
    for id in 0..8u64 {
        let mut other = Client::new(now, addr(SERVER), token(&key, 100 + id), 1200);
        connect(&mut server, &mut other, addr(CLIENT + 1), &mut now);
        for mut d in other.disconnect(now) {
            let _ = server.handle_datagram(now, addr(CLIENT + 1), &mut d);
        }
    }
    assert_eq!(server.connected().count(), 0);
    // The first token, still unexpired, again.
    let mut again = Client::new(now, addr(SERVER), first_token, 1200);
    for _ in 0..20 {
        now += Duration::from_millis(100);
        if let Some(mut d) = again.poll_transmit(now) {
            let _ = server.handle_datagram(now, addr(CLIENT), &mut d);
        }
        while let Some(mut t) = server.poll_transmit() {
            let _ = again.handle_datagram(now, addr(SERVER), &mut t.datagram);
        }
        if again.is_connected() {
            break;
        }
    }
    let mut d = recorded;
    let r = server.handle_datagram(now, addr(CLIENT), &mut d);
    assert!(
        !matches!(r, Ok(Some(_))),
        "a packet of the first connection was delivered again: {r:?}"
    );
}

#[test]
fn one_token_on_two_servers_shares_no_keys() {
    let key = Key::generate().unwrap();
    let mut a = server(&key, 4);
    let mut b = server(&key, 4);
    let t = token(&key, 42);
    let mut now = T0;
    let mut to_a = Client::new(now, addr(SERVER), t.clone(), 1200);
    let mut to_b = Client::new(now, addr(SERVER), t, 1200);
    connect(&mut a, &mut to_a, addr(CLIENT), &mut now);
    connect(&mut b, &mut to_b, addr(CLIENT), &mut now);
    // The first packet of each connection: same sequence, so the same
    // nonce; under the same key they would be interchangeable.
    let mut p = Vec::new();
    to_a.send(now, b"to a", &mut p).unwrap();
    let mut q = Vec::new();
    to_b.send(now, b"to b", &mut q).unwrap();
    let r = b.handle_datagram(now, addr(CLIENT), &mut p);
    assert!(
        !matches!(r, Ok(Some(_))),
        "server A's packet accepted by server B: {r:?}"
    );
    let mut s = Vec::new();
    let _ = a.send(now, 0, b"from a", &mut s);
    assert!(to_b.handle_datagram(now, addr(SERVER), &mut s).is_err());
}

#[test]
fn an_old_denial_does_not_stop_a_retry() {
    let key = Key::generate().unwrap();
    let mut server = server(&key, 1);
    let mut now = T0;
    let mut first = Client::new(now, addr(SERVER), token(&key, 1), 1200);
    connect(&mut server, &mut first, addr(CLIENT), &mut now);
    while server.poll_transmit().is_some() {}
    let t = token(&key, 2);
    let mut denied = Client::new(now, addr(SERVER), t.clone(), 1200);
    let mut d = denied.poll_transmit(now).unwrap();
    assert!(server.handle_datagram(now, addr(6000), &mut d).is_err());
    let denial = server.poll_transmit().unwrap().datagram;
    // The player retries later with the same token; the old denial is
    // replayed at it.
    let mut retry = Client::new(now, addr(SERVER), t, 1200);
    let _ = retry.poll_transmit(now).unwrap();
    let mut d = denial;
    assert!(retry.handle_datagram(now, addr(SERVER), &mut d).is_err());
    assert_eq!(retry.state(), ClientState::Requesting);
}

#[test]
fn a_request_replayed_from_many_addresses_leaves_room_for_a_new_client() {
    let key = Key::generate().unwrap();
    let mut server = server(&key, 4);
    let now = T0;
    let mut attacker = Client::new(now, addr(SERVER), token(&key, 7), 1200);
    let request = attacker.poll_transmit(now).unwrap();
    for k in 0..2000u16 {
        let mut d = request.clone();
        let from = SocketAddr::from(([10, 0, (k >> 8) as u8, k as u8], 6000));
        let _ = server.handle_datagram(now, from, &mut d);
    }
    let mut newcomer = Client::new(now, addr(SERVER), token(&key, 8), 1200);
    let mut d = newcomer.poll_transmit(now).unwrap();
    assert_eq!(server.handle_datagram(now, addr(6500), &mut d), Ok(None));
    let mut challenged = false;
    let mut copies = 0;
    while let Some(t) = server.poll_transmit() {
        challenged |= t.to == addr(6500);
        copies += usize::from(t.to != addr(6500));
    }
    assert!(challenged, "the new client's challenge was dropped");
    assert!(copies <= 4, "{copies} challenges queued for one token");
}

#[test]
fn copies_of_a_request_do_not_starve_its_owner() {
    // An attacker replays a client's captured request from another
    // address every step (as the lobby's attack does each tick); the
    // server drains its queue every step.
    let key = Key::generate().unwrap();
    let mut server = server(&key, 4);
    let t = token(&key, 42);
    let mut probe = Client::new(T0, addr(SERVER), t.clone(), 1200);
    let captured = probe.poll_transmit(T0).unwrap();
    let mut client = Client::new(T0, addr(SERVER), t, 1200);
    let victim = SocketAddr::from(([10, 0, 0, 1], 9));
    let mut now = T0;
    // Request, challenge, response, welcome: a few resends at most.
    for _ in 0..20 {
        now += Duration::from_millis(16);
        for _ in 0..2 {
            let mut d = captured.clone();
            let _ = server.handle_datagram(now, victim, &mut d);
        }
        if let Some(mut d) = client.poll_transmit(now) {
            let _ = server.handle_datagram(now, addr(CLIENT), &mut d);
        }
        while let Some(mut t) = server.poll_transmit() {
            if t.to == addr(CLIENT) {
                let _ = client.handle_datagram(now, addr(SERVER), &mut t.datagram);
            }
        }
        if client.is_connected() {
            return;
        }
    }
    panic!("the client never connected: {:?}", client.state());
}

#[test]
fn one_address_sending_many_tokens_leaves_room_for_others() {
    let key = Key::generate().unwrap();
    let mut server = server(&key, 4);
    let now = T0;
    let flooder = SocketAddr::from(([10, 1, 1, 1], 6001));
    for id in 0..600u64 {
        let mut c = Client::new(now, addr(SERVER), token(&key, 1000 + id), 1200);
        let mut d = c.poll_transmit(now).unwrap();
        let _ = server.handle_datagram(now, flooder, &mut d);
    }
    let mut newcomer = Client::new(now, addr(SERVER), token(&key, 8), 1200);
    let mut d = newcomer.poll_transmit(now).unwrap();
    let _ = server.handle_datagram(now, addr(6500), &mut d);
    let mut challenged = false;
    while let Some(t) = server.poll_transmit() {
        challenged |= t.to == addr(6500);
    }
    assert!(challenged, "the new client's challenge was dropped");
}

#[test]
fn a_token_bound_to_one_server_does_not_connect_to_another() {
    let key = Key::generate().unwrap();
    let (a_addr, b_addr) = (addr(4001), addr(4002));
    let mut config = ServerConfig::new(PROTOCOL, key.clone());
    config.public_addresses = vec![b_addr];
    let mut b = Server::new(config).unwrap();
    let for_a = ConnectToken::issue_for(
        &key,
        PROTOCOL,
        42,
        &[a_addr],
        T0,
        Duration::from_secs(30),
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(
        ConnectToken::from_bytes(&for_a.to_bytes()),
        Ok(for_a.clone())
    );
    let mut c = Client::new(T0, b_addr, for_a, 1200);
    let mut d = c.poll_transmit(T0).unwrap();
    assert_eq!(
        b.handle_datagram(T0, addr(CLIENT), &mut d),
        Err(ConnError::WrongServer)
    );
    assert_eq!(b.poll_transmit(), None);
    // Unbound tokens are refused too by a server that knows its address;
    // a token naming it connects.
    let mut c = Client::new(T0, b_addr, token(&key, 43), 1200);
    let mut d = c.poll_transmit(T0).unwrap();
    assert_eq!(
        b.handle_datagram(T0, addr(CLIENT), &mut d),
        Err(ConnError::WrongServer)
    );
    let for_b = ConnectToken::issue_for(
        &key,
        PROTOCOL,
        44,
        &[a_addr, b_addr],
        T0,
        Duration::from_secs(30),
        Duration::from_secs(5),
    )
    .unwrap();
    let mut c = Client::new(T0, b_addr, for_b, 1200);
    let mut now = T0;
    for _ in 0..20 {
        now += Duration::from_millis(100);
        if let Some(mut d) = c.poll_transmit(now) {
            let _ = b.handle_datagram(now, addr(CLIENT), &mut d);
        }
        while let Some(mut t) = b.poll_transmit() {
            let _ = c.handle_datagram(now, b_addr, &mut t.datagram);
        }
    }
    assert!(c.is_connected());
    let five = [addr(1), addr(2), addr(3), addr(4), addr(5)];
    assert_eq!(
        ConnectToken::issue_for(&key, PROTOCOL, 1, &five, T0, T0, T0),
        Err(ConnError::TooManyAddresses { count: 5, max: 4 })
    );
}

#[test]
fn a_copier_is_probed_at_most_once_per_migration_interval() {
    let mut sim = Sim::new();
    let copier = addr(6666);
    sim.copier = Some(copier);
    let mut probes = 0;
    for _ in 0..300 {
        sim.now += STEP;
        let mut out = Vec::new();
        sim.client.send(sim.now, b"input", &mut out).unwrap();
        sim.deliver_up(out);
        sim.server.handle_timeout(sim.now);
        while let Some(t) = sim.server.poll_transmit() {
            if t.to == copier {
                probes += 1;
            }
        }
    }
    // 3 s of copies: at most 3 probes, each sending its token at most
    // every `PATH_RESEND` for its second.
    let per_probe = (tickpack_transport::conn::PATH_PROBE_TIMEOUT.as_millis()
        / tickpack_transport::conn::PATH_RESEND.as_millis()) as usize
        + 1;
    assert!(
        (1..=3 * per_probe).contains(&probes),
        "{probes} path packets"
    );
}

#[test]
fn a_probe_ends_when_the_validated_address_sends_newer_packets() {
    let mut sim = Sim::new();
    while sim.server.poll_transmit().is_some() {}
    // One copied packet, delivered first from the copier's address, starts
    // a probe there.
    let copier = addr(6666);
    let mut out = Vec::new();
    sim.client.send(sim.now, b"input", &mut out).unwrap();
    let mut copy = out.clone();
    sim.server
        .handle_datagram(sim.now, copier, &mut copy)
        .unwrap();
    assert!(std::iter::from_fn(|| sim.server.poll_transmit()).any(|t| t.to == copier));
    // The client's next, newer packet from its validated address ends the
    // probe: the copier is sent no path token again.
    for _ in 0..50 {
        sim.tick();
    }
    assert_eq!(sim.elsewhere, 0, "the probe went on");
    assert_eq!(sim.server.address(0), Some(addr(CLIENT)));
}

#[test]
fn a_recorded_response_cannot_restart_a_connection_under_its_keys() {
    let key = Key::generate().unwrap();
    let mut server = server(&key, 1);
    let mut now = T0;
    let ip = |k: u16| SocketAddr::from(([10, 9, (k >> 8) as u8, k as u8], 5000));
    // Connects `client` from `from` in 10 ms steps, returning the last
    // response it sent.
    let run = |server: &mut Server, client: &mut Client, from, now: &mut Duration| {
        let mut response = None;
        for _ in 0..50 {
            *now += Duration::from_millis(10);
            while let Some(mut d) = client.poll_transmit(*now) {
                if !client.is_connected() && d.len() < 200 {
                    response = Some(d.clone());
                }
                let _ = server.handle_datagram(*now, from, &mut d);
            }
            while let Some(mut t) = server.poll_transmit() {
                if t.to == from {
                    let _ = client.handle_datagram(*now, addr(SERVER), &mut t.datagram);
                }
            }
            if client.is_connected() {
                break;
            }
        }
        response
    };
    // The first token expires first, so it is the one a memory that
    // forgets by expiry alone would drop.
    let first_token = ConnectToken::issue(
        &key,
        PROTOCOL,
        1,
        T0,
        Duration::from_secs(20),
        Duration::from_secs(5),
    )
    .unwrap();
    let mut first = Client::new(now, addr(SERVER), first_token, 1200);
    let response = run(&mut server, &mut first, ip(0), &mut now).unwrap();
    assert!(first.is_connected());
    let mut recorded = Vec::new();
    first.send(now, b"fire", &mut recorded).unwrap();
    let mut d = recorded.clone();
    assert!(server.handle_datagram(now, ip(0), &mut d).is_ok());
    for mut d in first.disconnect(now) {
        let _ = server.handle_datagram(now, ip(0), &mut d);
    }
    // 64 more players pass through the slot within the first challenge's
    // lifetime (5 s): the used-token memory (64 per slot) fills.
    let mut refused = 0;
    for k in 1..=64u16 {
        let mut c = Client::new(now, addr(SERVER), token(&key, 100 + u64::from(k)), 1200);
        run(&mut server, &mut c, ip(k), &mut now);
        if !c.is_connected() {
            refused += 1;
            continue;
        }
        for mut d in c.disconnect(now) {
            let _ = server.handle_datagram(now, ip(k), &mut d);
        }
    }
    assert!(now < T0 + Duration::from_secs(5), "{now:?}");
    assert!(
        refused >= 1,
        "the 65th connection within 5 s was not held back"
    );
    // The first client's recorded response, replayed from its address,
    // must not bring back a connection under the first connection's keys.
    let mut d = response;
    let _ = server.handle_datagram(now, ip(0), &mut d);
    let mut d = recorded;
    let r = server.handle_datagram(now, ip(0), &mut d);
    assert!(
        !matches!(r, Ok(Some(_))),
        "recorded packet delivered: {r:?}"
    );
}

/// Failed before the server authenticated duplicates from a new address:
/// with every client packet copied ahead from the copier's address, the
/// genuine packets from the client's new address all arrived second and
/// were dropped as replays, so the server probed only the copier and never
/// followed the rebind.
#[test]
fn a_nat_rebind_under_copy_ahead_still_moves_the_connection() {
    let mut sim = Sim::new();
    sim.copier = Some(addr(6666));
    for _ in 0..10 {
        sim.tick();
    }
    sim.client_at = addr(5001);
    let before = sim.delivered;
    for _ in 0..200 {
        sim.tick();
    }
    assert_eq!(sim.server.address(0), Some(addr(5001)));
    // A probe of the copier may be pending when the client moves; the new
    // address gets its own at once and validates within a round trip.
    assert!(
        sim.delivered - before >= 180,
        "{} of 200 snapshots after the rebind",
        sim.delivered - before
    );
}

/// Duplicates now start probes, so their number is bounded: one client
/// packet replayed from a hundred addresses gets path tokens sent to at
/// most `MAX_PATH_PROBES` of them per migration interval.
#[test]
fn a_packet_replayed_from_many_addresses_probes_at_most_two() {
    let mut sim = Sim::new();
    while sim.server.poll_transmit().is_some() {}
    let mut out = Vec::new();
    sim.client.send(sim.now, b"input", &mut out).unwrap();
    let mut probed = std::collections::HashSet::new();
    for round in 0..3u32 {
        for k in 0..100u16 {
            let mut d = out.clone();
            let _ = sim.server.handle_datagram(sim.now, addr(7000 + k), &mut d);
        }
        while let Some(t) = sim.server.poll_transmit() {
            assert_ne!(t.to, addr(CLIENT), "round {round}");
            probed.insert(t.to);
        }
        sim.now += tickpack_transport::conn::MIGRATION_INTERVAL;
        sim.server.handle_timeout(sim.now);
        while sim.server.poll_transmit().is_some() {}
    }
    let max = 3 * tickpack_transport::conn::MAX_PATH_PROBES;
    assert!(
        (1..=max).contains(&probed.len()),
        "{} addresses probed",
        probed.len()
    );
    assert_eq!(sim.server.address(0), Some(addr(CLIENT)));
}
