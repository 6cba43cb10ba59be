//! The `server` and `client` examples as two processes on 127.0.0.1: the
//! client connects with the token the server wrote and exits 0 only if it
//! holds the server's world.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Where cargo put this run's examples: `target/<profile>/examples`.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("examples");
    dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

#[test]
fn a_client_process_holds_what_the_server_process_sent() {
    let (server, client) = (example("server"), example("client"));
    if !server.exists() || !client.exists() {
        // `cargo test` builds the examples; `--test two_process` alone does not.
        eprintln!("skipped: build the examples first (cargo test -p tickpack-net)");
        return;
    }
    let tokens = std::env::temp_dir().join(format!("tickpack-net-{}", std::process::id()));
    let mut srv = Command::new(&server)
        .args(["--listen", "127.0.0.1:0", "--seconds", "8", "--tokens"])
        .arg(&tokens)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(srv.stdout.take().unwrap()).lines();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("listening on ").map(str::to_owned))
        .expect("the server prints its address");
    let out = Command::new(&client)
        .args(["--connect", &addr, "--seconds", "2", "--token"])
        .arg(tokens.join("user-1.token"))
        .output()
        .unwrap();
    let _ = srv.kill();
    let _ = srv.wait();
    let _ = std::fs::remove_dir_all(&tokens);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Connected"), "{stdout}");
}
