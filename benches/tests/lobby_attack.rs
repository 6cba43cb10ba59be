//! The UDP lobby, briefly: under attack, forged and replayed datagrams at
//! the server and every client leave every client in codec sync, nothing
//! undecodable, nothing amplified; without, the quantised and the
//! full-precision lobbies stay in sync and the quantised one reports its
//! errors within their bounds.

use std::time::Duration;

use tickpack_benches::lobby_udp::{run, FarCars, LobbyConfig};
use tickpack_session::{RateTiers, DEFAULT_BASELINE_WINDOW};

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
        lossless: false,
        untrained: false,
        far_cars: FarCars::Omitted,
        tiers: RateTiers::default(),
        baseline_window: DEFAULT_BASELINE_WINDOW,
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

/// Without attack, quantised (far cars held or left out, with and without
/// the trained set) and at full precision: in sync, and the quantised runs
/// report each quantised field's error within its bound.
#[test]
fn quantised_and_lossless_lobbies_stay_in_sync() {
    for (lossless, untrained, far_cars) in [
        (false, false, FarCars::Omitted),
        (false, true, FarCars::Held),
        (true, false, FarCars::Omitted),
    ] {
        let config = LobbyConfig {
            clients: 4,
            seconds: 1.0,
            loss: 0.05,
            latency: Duration::from_millis(20),
            budget_mbps: 10.0,
            attack: false,
            seed: 4,
            lossless,
            untrained,
            far_cars,
            tiers: RateTiers::default(),
            baseline_window: DEFAULT_BASELINE_WINDOW,
        };
        let report = run(&config).unwrap_or_else(|e| panic!("{e}"));
        assert!(report.verdict.passed(), "{report}");
        let json = report.to_json();
        let errors = json["max_abs_error"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        if lossless {
            assert!(errors.is_empty(), "{json}");
            continue;
        }
        let schema = tickpack_scenarios::racing_schema_quantized();
        let ty = &schema.sections()[0];
        for (f, q) in ty.fields().iter().zip(ty.quantization()) {
            let Some(q) = q else { continue };
            let e = errors[f.name.as_str()].as_f64().unwrap_or(f64::NAN);
            assert!(e > 0.0 && e <= q.max_error(f.ty), "{}: {e}", f.name);
        }
    }
}
