//! The authenticated connection layer under hostile datagrams.

use std::net::SocketAddr;
use std::time::Duration;

use arbitrary::{Result as AResult, Unstructured};
use tickpack_transport::conn::{Client, ConnectToken, Key, Server, ServerConfig};

const PROTOCOL: u64 = 0x7469_636b;
const NOW: Duration = Duration::from_secs(1_800_000_000);

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A server and a client connected through the handshake.
fn connected() -> Option<(Server, Client)> {
    let key = Key::generate().ok()?;
    let mut server = Server::new(ServerConfig::new(PROTOCOL, key.clone())).ok()?;
    let token = ConnectToken::issue(
        &key,
        PROTOCOL,
        1,
        NOW,
        Duration::from_secs(60),
        Duration::from_secs(10),
    )
    .ok()?;
    let mut client = Client::new(NOW, addr(1), token, 1200);
    for step in 1..20u64 {
        let now = NOW + Duration::from_millis(100 * step);
        if let Some(mut d) = client.poll_transmit(now) {
            let _ = server.handle_datagram(now, addr(2), &mut d);
        }
        while let Some(mut t) = server.poll_transmit() {
            let _ = client.handle_datagram(now, addr(1), &mut t.datagram);
        }
        if client.is_connected() {
            while server.poll_event().is_some() {}
            return Some((server, client));
        }
    }
    None
}

pub(super) fn conn_packets_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let Some((mut server, mut client)) = connected() else {
        panic!("the handshake did not complete on a perfect link");
    };
    let now = NOW + Duration::from_secs(3);
    let mut honest_up = Vec::new();
    for _ in 0..u.int_in_range(1..=64usize)? {
        match u.int_in_range(0..=4u8)? {
            // Arbitrary bytes at the server, from the client's address or
            // another: never a payload.
            0 => {
                let mut d: Vec<u8> = u.arbitrary()?;
                let from = if u.arbitrary()? { addr(2) } else { addr(3) };
                let r = server.handle_datagram(now, from, &mut d);
                assert!(!matches!(r, Ok(Some(_))), "forged bytes delivered: {r:?}");
            }
            // Arbitrary bytes at the client from the server's address.
            1 => {
                let mut d: Vec<u8> = u.arbitrary()?;
                let r = client.handle_datagram(now, addr(1), &mut d);
                assert!(!matches!(r, Ok(Some(_))), "forged bytes delivered: {r:?}");
            }
            // An honest client packet, then a mutation of it: the mutation
            // is refused whatever it changed.
            2 => {
                let payload: Vec<u8> = u.arbitrary()?;
                let mut out = Vec::new();
                if client.send(now, &payload, &mut out).is_err() {
                    continue;
                }
                let mut mutated = out.clone();
                let i = u.choose_index(mutated.len())?;
                mutated[i] ^= u.int_in_range(1..=255u8)?;
                assert!(server.handle_datagram(now, addr(4), &mut mutated).is_err());
                honest_up.push((out, payload));
            }
            // Deliver an honest client packet, then replay it.
            3 if !honest_up.is_empty() => {
                let i = u.choose_index(honest_up.len())?;
                let (d, payload) = honest_up.remove(i);
                let mut first = d.clone();
                match server.handle_datagram(now, addr(2), &mut first) {
                    Ok(Some((0, got))) => assert_eq!(got, &payload[..]),
                    r => panic!("honest packet refused: {r:?}"),
                }
                let mut replay = d;
                assert!(server.handle_datagram(now, addr(2), &mut replay).is_err());
            }
            // An honest server packet to the client, then its replay.
            _ => {
                let payload: Vec<u8> = u.arbitrary()?;
                let mut out = Vec::new();
                if server.send(now, 0, &payload, &mut out).is_err() {
                    continue;
                }
                let mut d = out.clone();
                assert_eq!(
                    client.handle_datagram(now, addr(1), &mut d).ok().flatten(),
                    Some(&payload[..])
                );
                let mut replay = out.clone();
                assert!(client.handle_datagram(now, addr(1), &mut replay).is_err());
            }
        }
    }
    // Nothing hostile moved the client or ended the connection.
    assert!(client.is_connected());
    assert_eq!(server.address(0), Some(addr(2)));
    Ok(())
}
