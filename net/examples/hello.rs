//! One server and two clients over UDP on 127.0.0.1 in one process: a
//! handful of balls move, each client presents them, and the run exits 0
//! only if every client's applied state is what the server sent it.
//!
//! `cargo run --release -p tickpack-net --example hello -- --seconds 3`

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickpack::{Primitive, Schema, Snapshot};
use tickpack_net::udp::{unix_now, Driver, Ticker};
use tickpack_net::{Client, ClientConfig, ClientEvent, EveryEntity, Server, ServerConfig};
use tickpack_transport::conn::{ConnectToken, Key};

const PROTOCOL_ID: u64 = 0x0068_656c_6c6f;
const BALLS: u32 = 6;

/// Ball `id`'s position on `tick`: circles of different radii.
fn world(schema: &Schema, tick: u32) -> Result<Snapshot, Box<dyn Error>> {
    let mut w = Snapshot::new(schema);
    let section = w.section_mut(0).ok_or("no ball section")?;
    for id in 0..BALLS {
        let (r, a) = (10.0 + id as f32 * 5.0, tick as f32 * 0.05 + id as f32);
        let pos = [r * a.cos(), r * a.sin()];
        section.insert(id, &pos.map(f32::to_le_bytes).concat())?;
    }
    Ok(w)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let seconds: f64 = match args.iter().position(|a| a == "--seconds") {
        Some(i) => args.get(i + 1).ok_or("--seconds needs a value")?.parse()?,
        None => 3.0,
    };
    let schema = Schema::builder()
        .entity("ball")
        .field("pos", Primitive::F32, 2)
        .build()?;
    let key = Key::generate()?;
    let server = Server::new(
        schema.clone(),
        ServerConfig::new(PROTOCOL_ID, key.clone()),
        EveryEntity,
    )?;
    let mut server = Driver::bind("127.0.0.1:0", server)?;
    let server_addr = server.local_addr()?;
    let mut clients = Vec::new();
    for user in [1u64, 2] {
        // The backend's job: a token per player, valid for a minute.
        let (life, timeout) = (Duration::from_secs(60), Duration::from_secs(5));
        let token = ConnectToken::issue(&key, PROTOCOL_ID, user, unix_now(), life, timeout)?;
        let client = Client::new(
            unix_now(),
            server_addr,
            token,
            schema.clone(),
            ClientConfig::default(),
        )?;
        clients.push((user, Driver::bind("127.0.0.1:0", client)?));
    }

    let mut ticker = Ticker::new(60);
    let ticks = (seconds * 60.0).round().max(1.0) as u32;
    let (mut tick, mut done_at) = (0u32, None);
    while done_at.is_none_or(|t: Instant| t.elapsed() < Duration::from_millis(300)) {
        let now = unix_now();
        if ticker.due() && tick < ticks {
            server
                .endpoint_mut()
                .tick(now, Arc::new(world(&schema, tick)?))?;
            tick += 1;
            if tick == ticks {
                done_at = Some(Instant::now());
            }
        }
        server.pump(now)?;
        while let Some(event) = server.endpoint_mut().poll_event() {
            println!("server: {event:?}");
        }
        for (user, client) in &mut clients {
            client.pump(now)?;
            while let Some(event) = client.endpoint_mut().poll_event() {
                if !matches!(event, ClientEvent::SnapshotApplied { .. }) {
                    println!("user {user}: {event:?}");
                }
            }
        }
        ticker.idle(Duration::from_millis(1));
    }

    let mut ok = true;
    for (user, client) in &clients {
        let c = client.endpoint();
        let id = server
            .endpoint()
            .client_of(*user)
            .ok_or("client not connected")?;
        let mut sent = Snapshot::default();
        let in_sync = c.latest().is_some_and(|(seq, applied)| {
            server
                .endpoint()
                .session()
                .sent_state(id.index(), seq, &mut sent)
                && *applied == sent
        });
        let balls = c.presented().sections().first().map_or(0, |s| s.len());
        println!(
            "user {user}: {} snapshots applied, {balls} balls presented, in sync: {in_sync}",
            c.stats().applied
        );
        ok &= in_sync && balls == BALLS as usize;
    }
    if !ok {
        return Err("a client's state differs from what the server sent it".into());
    }
    Ok(())
}
