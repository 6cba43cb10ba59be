//! The client half of a two-process demo: connects to `--connect` with the
//! token in `--token` (written by `server`), presents the world for
//! `--seconds`, and exits 0 only if the snapshot it holds is the server's
//! world of that tick, byte for byte.
//!
//! `cargo run -p tickpack-net --example client -- --connect 127.0.0.1:4000 --token /tmp/tp/user-1.token`

#[path = "shared/demo.rs"]
mod demo;

use std::error::Error;
use std::time::{Duration, Instant};

use tickpack_net::udp::{unix_now, Driver};
use tickpack_net::{Client, ClientConfig, ClientEvent};
use tickpack_transport::conn::ConnectToken;

fn main() -> Result<(), Box<dyn Error>> {
    let server: std::net::SocketAddr = demo::arg("--connect").ok_or("--connect ADDR")?.parse()?;
    let path = demo::arg("--token").ok_or("--token FILE")?;
    let seconds: f64 = demo::arg("--seconds").map_or(Ok(3.0), |s| s.parse())?;
    let token = ConnectToken::from_bytes(&std::fs::read(path)?)?;
    let schema = demo::schema()?;
    let client = Client::new(
        unix_now(),
        server,
        token,
        schema.clone(),
        ClientConfig::default(),
    )?;
    let mut client = Driver::bind("127.0.0.1:0", client)?;
    let start = Instant::now();
    let mut applied = 0u64;
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        client.pump(unix_now())?;
        while let Some(event) = client.endpoint_mut().poll_event() {
            match event {
                ClientEvent::SnapshotApplied { .. } => applied += 1,
                ClientEvent::Disconnected { reason } => {
                    return Err(format!("disconnected: {reason}").into())
                }
                e => println!("{e:?}"),
            }
        }
        // A game renders `client.endpoint().presented()` here.
        std::thread::sleep(Duration::from_millis(2));
    }
    let c = client.endpoint();
    let (_, held) = c.latest().ok_or("no snapshot applied")?;
    let tick = demo::tick_of(held).ok_or("no clock in the snapshot")?;
    let balls = c.presented().sections().first().map_or(0, |s| s.len());
    println!("{applied} snapshots applied; holding tick {tick}; {balls} balls presented");
    if *held != demo::world(&schema, tick)? {
        return Err("the snapshot held is not the server's world of its tick".into());
    }
    client.endpoint_mut().disconnect(unix_now());
    client.flush(unix_now())?;
    Ok(())
}
