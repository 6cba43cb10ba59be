//! The server half of a two-process demo: listens on `--listen`, writes a
//! connect token for each of `--clients` users to `--tokens DIR/user-N.token`
//! (the backend's job, done here for the demo), and runs the world for
//! `--seconds`. Run `client` with `--connect` and one of the tokens.
//!
//! `cargo run -p tickpack-net --example server -- --listen 127.0.0.1:4000 --tokens /tmp/tp`

#[path = "shared/demo.rs"]
mod demo;

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use tickpack_net::udp::{unix_now, Driver, Ticker};
use tickpack_net::{EveryEntity, Server, ServerConfig};
use tickpack_transport::conn::{ConnectToken, Key};

fn main() -> Result<(), Box<dyn Error>> {
    let listen = demo::arg("--listen").unwrap_or_else(|| "127.0.0.1:4000".into());
    let tokens = std::path::PathBuf::from(demo::arg("--tokens").unwrap_or_else(|| ".".into()));
    let seconds: f64 = demo::arg("--seconds").map_or(Ok(10.0), |s| s.parse())?;
    let clients: u64 = demo::arg("--clients").map_or(Ok(1), |s| s.parse())?;
    let schema = demo::schema()?;
    let key = Key::generate()?;
    let config = ServerConfig::new(demo::PROTOCOL_ID, key.clone());
    let mut server = Driver::bind(&listen, Server::new(schema.clone(), config, EveryEntity)?)?;
    std::fs::create_dir_all(&tokens)?;
    for user in 1..=clients {
        let (life, timeout) = (Duration::from_secs(300), Duration::from_secs(5));
        let token = ConnectToken::issue(&key, demo::PROTOCOL_ID, user, unix_now(), life, timeout)?;
        // Written whole, then renamed: a client never reads half a token.
        let (tmp, path) = (
            tokens.join(format!("user-{user}.tmp")),
            tokens.join(format!("user-{user}.token")),
        );
        std::fs::write(&tmp, token.to_bytes())?;
        std::fs::rename(&tmp, &path)?;
        println!("token for user {user}: {}", path.display());
    }
    println!("listening on {}", server.local_addr()?);
    let mut ticker = Ticker::new(60);
    let ticks = (seconds * 60.0).round() as u32;
    let mut tick = 0;
    while tick < ticks {
        let now = unix_now();
        if ticker.due() {
            let world = Arc::new(demo::world(&schema, tick)?);
            server.endpoint_mut().tick(now, world)?;
            tick += 1;
        }
        server.pump(now)?;
        while let Some(event) = server.endpoint_mut().poll_event() {
            println!("{event:?}");
        }
        ticker.idle(Duration::from_millis(1));
    }
    Ok(())
}
