//! The session state machine, capture files and dictionary sets under arbitrary input.

use super::*;
use crate::link::{Link, LinkConfig};

pub(super) fn session_ops_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use std::sync::Arc;
    use tickpack_session::{
        seq_newer, Client, ClientConfig, DropReason, Received, Server, ServerConfig, View,
    };

    /// One client, its link, and the state each packet sent to it gives.
    struct Peer {
        id: u16,
        client: Client,
        joined: bool,
        flight: Link,
        sent: BTreeMap<u16, Snapshot>,
    }

    let schema = arb_schema(u, 2, 3, 2)?;
    let history = u.int_in_range(1..=12usize)?;
    // Often limits small enough that recalls evict (by count and by
    // groups of ids) on most steps; both ends use the same ones.
    let limits = if u.arbitrary()? {
        Limits {
            max_entities_per_section: u.int_in_range(1..=64usize)?,
            max_snapshot_bytes: u.int_in_range(0..=4096usize)?,
            ..Limits::default()
        }
    } else {
        Limits::default()
    };
    let config = ServerConfig {
        history,
        first_sequence: u.arbitrary()?,
        checksum: u.arbitrary()?,
        limits,
        ..ServerConfig::default()
    };
    let Ok(mut server) = Server::new(schema.clone(), config) else {
        return Ok(());
    };
    let client_cfg = ClientConfig {
        history,
        limits,
        ..ClientConfig::default()
    };
    // Client 1 is there from the start; client 2 joins when the input
    // says, so the two chains of baselines (and recalls) begin on
    // different ticks and may still share encodes.
    let mut peers = Vec::new();
    for id in [1u16, 2] {
        let Ok(client) = Client::new(schema.clone(), client_cfg.clone()) else {
            return Ok(());
        };
        peers.push(Peer {
            id,
            client,
            joined: id == 1,
            flight: Link::new(LinkConfig::default(), 0),
            sent: BTreeMap::new(),
        });
    }
    server.connect(1);
    let mut world = arb_snapshot(u, &schema, false)?;
    for _ in 0..u.int_in_range(1..=200usize)? {
        if u.is_empty() {
            break;
        }
        let p = u.choose_index(peers.len())?;
        let before = server.acked(peers[p].id);
        match u.int_in_range(0..=9u8)? {
            0 | 1 => {
                world = evolve_snapshot(u, &schema, &world, false)?;
                let w = Arc::new(world.clone());
                let seq = server.begin_tick(w.clone());
                // Every client sees the world whole or through this tick's
                // filter, so equal views are common.
                let mut ids = Vec::new();
                for sec in w.sections() {
                    let mut keep = Vec::new();
                    for &id in sec.ids() {
                        if u.ratio(3, 4)? {
                            keep.push(id);
                        }
                    }
                    ids.push(keep);
                }
                let filter = View::filter(ids);
                for peer in peers.iter_mut().filter(|p| p.joined) {
                    let view = if u.arbitrary()? {
                        filter.clone()
                    } else {
                        View::all()
                    };
                    let mut want = Snapshot::default();
                    view.apply(&w, &mut want);
                    peer.sent.insert(seq, want);
                    if let Ok(packet) = server.send(peer.id, &view) {
                        peer.flight.send(0, &packet);
                    }
                }
            }
            2 | 3 if peers[p].flight.in_flight() > 0 => {
                let peer = &mut peers[p];
                let i = u.choose_index(peer.flight.in_flight())?;
                let Some(packet) = peer.flight.take(i) else {
                    continue;
                };
                match peer.client.receive(&packet) {
                    Received::Applied { sequence, .. } => {
                        assert_eq!(
                            peer.client.get(sequence),
                            peer.sent.get(&sequence),
                            "applied a wrong state"
                        );
                    }
                    Received::Dropped(DropReason::Undecodable(e)) => {
                        panic!("server packet undecodable: {e}")
                    }
                    Received::Dropped(_) => {}
                }
            }
            4 if peers[p].flight.in_flight() > 0 => {
                let i = u.choose_index(peers[p].flight.in_flight())?;
                peers[p].flight.drop_at(i);
            }
            5 if peers[p].flight.in_flight() > 0 => {
                let i = u.choose_index(peers[p].flight.in_flight())?;
                peers[p].flight.duplicate(i);
            }
            6 if peers[p].joined => {
                let m = peers[p].client.message().to_bytes();
                if u.arbitrary()? {
                    // A joined client's own message on its own connection.
                    assert!(server.handle_message(peers[p].id, &m).is_ok());
                } else {
                    // On some other connection: it acts for that one only.
                    let _ = server.handle_message(u.arbitrary()?, &m);
                }
            }
            7 => {
                let _ = server.ack(peers[p].id, u.arbitrary()?);
                let garbage: Vec<u8> = u.arbitrary()?;
                let _ = server.handle_message(peers[p].id, &garbage);
                let peer = &mut peers[p];
                let r = peer.client.receive(&garbage);
                if let Received::Applied { sequence, .. } = r {
                    // Only a byte-exact copy of a real packet can apply.
                    assert_eq!(peer.client.get(sequence), peer.sent.get(&sequence));
                }
            }
            8 if !peers[p].joined => {
                server.connect(peers[p].id);
                peers[p].joined = true;
            }
            _ => peers[p].client.request_full(),
        }
        let peer = &peers[p];
        if let Some((seq, snap)) = peer.client.latest() {
            assert_eq!(
                Some(snap),
                peer.sent.get(&seq),
                "newest state not one the server sent"
            );
        }
        if let (Some(b), Some(a)) = (before, server.acked(peer.id)) {
            assert!(
                a == b || seq_newer(a, b),
                "baseline moved backwards: {b} -> {a}"
            );
        }
        if let Some(a) = server.acked(peer.id) {
            assert!(peer.sent.contains_key(&a), "baseline {a} was never sent");
        }
    }
    Ok(())
}

pub(super) fn capture_read_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use tickpack_sets::capture::{CaptureHeader, CaptureLimits, CaptureReader, CaptureWriter};

    let limits = CaptureLimits {
        max_header_bytes: 64 << 10,
        max_record_bytes: 256 << 10,
        decoder: Limits {
            max_entities_per_section: 1000,
            max_decoded_bytes: 256 << 10,
            max_snapshot_bytes: 1 << 20,
        },
    };
    let (bytes, written) = if u.arbitrary()? {
        (rest(u)?.to_vec(), None)
    } else {
        let schema = arb_schema(u, 2, 3, 2)?;
        let header = CaptureHeader::new("fuzz", "1", 60, schema.clone());
        let Ok(mut w) = CaptureWriter::new(Vec::new(), &header, Default::default()) else {
            return Ok(());
        };
        let mut snap = arb_snapshot(u, &schema, false)?;
        let mut ticks = Vec::new();
        for t in 0..u.int_in_range(0..=6u64)? {
            if w.tick(t, &snap).is_err() {
                return Ok(());
            }
            ticks.push(snap.clone());
            snap = evolve_snapshot(u, &schema, &snap, false)?;
        }
        let Ok(mut bytes) = w.finish() else {
            return Ok(());
        };
        let intact = !u.arbitrary::<bool>()?;
        if !intact && !bytes.is_empty() {
            for _ in 0..u.int_in_range(1..=4usize)? {
                let i = u.choose_index(bytes.len())?;
                bytes[i] = u.arbitrary()?;
            }
            let keep = u.int_in_range(0..=bytes.len())?;
            bytes.truncate(keep);
        }
        (bytes, intact.then_some(ticks))
    };
    let len = bytes.len() as u64;
    let reader = match CaptureReader::with_limits(&bytes[..], limits) {
        Ok(r) => r,
        Err(e) => {
            assert!(written.is_none(), "intact capture refused: {e}");
            assert!(e.offset().is_none_or(|o| o <= len), "offset past the input");
            return Ok(());
        }
    };
    let mut got = Vec::new();
    for t in reader.ticks() {
        match t {
            Ok(t) => got.push(t.snapshot),
            Err(e) => {
                assert!(written.is_none(), "intact capture failed: {e}");
                assert!(e.offset().is_none_or(|o| o <= len), "offset past the input");
                break;
            }
        }
    }
    if let Some(w) = written {
        assert_eq!(got, w, "capture round trip");
    }
    Ok(())
}
