//! The UDP lobby under attack, briefly: forged and replayed datagrams at
//! the server and every client leave every client in codec sync, nothing
//! undecodable, nothing amplified.

use std::time::Duration;

use tickpack_benches::lobby_udp::{run, LobbyConfig};

#[test]
fn four_clients_under_attack_stay_in_sync() {
    let config = LobbyConfig {
        clients: 4,
        seconds: 1.0,
        loss: 0.05,
        latency: Duration::from_millis(20),
        budget_mbps: 10.0,
        attack: true,
        seed: 3,
    };
    let report = run(&config).unwrap_or_else(|e| panic!("{e}"));
    let v = &report.verdict;
    assert!(v.passed(), "{report}");
    assert_eq!(v.never_connected, 0, "{report}");
    let json = report.to_json();
    assert!(
        json["attack_datagrams"].as_u64().is_some_and(|n| n > 1000),
        "{json}"
    );
    assert!(
        json["server_rejected_datagrams"]
            .as_u64()
            .is_some_and(|n| n > 100),
        "{json}"
    );
}
