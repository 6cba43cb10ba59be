//! The load machinery, briefly: a small sans-IO run ends with every client
//! in sync and counts the server's heap; the churn soak passes with its
//! levels back after each wave, and fails when the heap keeps growing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tickpack_benches::load::bench::{self, LoadConfig};
use tickpack_benches::load::sim::{Links, Sim};
use tickpack_benches::load::soak::{self, SoakConfig};
use tickpack_benches::load::Setup;
use tickpack_testkit::counting::{current, Counting, SERIAL};

#[global_allocator]
static ALLOC: Counting = Counting;

#[test]
fn eight_clients_on_rough_links_end_in_sync() {
    // Heap readings: no other test allocates meanwhile.
    let _serial = SERIAL.lock();
    let r = bench::run(
        &LoadConfig {
            clients: 8,
            seconds: 1.0,
            links: Links::ROUGH,
            seed: 2,
        },
        current,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.ticks, 60);
    assert!(r.server_heap_per_client > 0);
    assert!(r.session_per_client > 0);
    assert!(r.bytes_per_client_tick > 0.0);
    assert!(r.max_lag < 30, "{r:?}");
}

#[test]
fn a_client_that_went_silent_is_timed_out_and_a_rebound_one_stays_in_sync() {
    // Allocates while the other tests read the heap.
    let _serial = SERIAL.lock();
    let links = Links::ROUGH;
    let setup = Setup::new(4, links.round_trip()).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Sim::new(setup, links, 5).unwrap_or_else(|e| panic!("{e}"));
    for user in 0..3 {
        sim.join(user, Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(sim.settle(600).unwrap_or_else(|e| panic!("{e}")));
    sim.silence(0);
    sim.rebind(1);
    for _ in 0..150 {
        sim.step().unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(sim.server.clients().count(), 2);
    assert_eq!(
        sim.server
            .peer_stats(sim.client_id(1).unwrap_or_else(|| panic!("client 1")))
            .map(|s| s.migrations),
        Some(1)
    );
    sim.check_sync().unwrap_or_else(|e| panic!("{e}"));
}

fn small_soak() -> SoakConfig {
    SoakConfig {
        seconds: 0.0,
        standing: 4,
        wave: 4,
        links: Links::ROUGH,
        seed: 3,
        tolerance: 256 * 1024,
        warmup: 0,
        window: 1,
    }
}

#[test]
fn a_short_soak_comes_back_to_its_level_after_each_wave() {
    let _serial = SERIAL.lock();
    let r = soak::run(&small_soak(), current).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.levels.len(), 2);
    for l in &r.levels {
        assert_eq!((l.server_clients, l.sessions), (4, 4), "{l:?}");
        assert_eq!(l.joined, 4);
        assert_eq!(l.silenced, 1);
    }
}

/// A heap that grows by 4 MiB at each reading: a leak (beyond the
/// allowance for the used-token table of 12 slots).
fn leaking() -> usize {
    static GROWN: AtomicUsize = AtomicUsize::new(0);
    GROWN.fetch_add(4 << 20, Ordering::SeqCst) + (4 << 20)
}

#[test]
fn a_soak_whose_heap_keeps_growing_fails() {
    // Its simulation allocates for real: run beside the soak above, it
    // would count in that soak's heap readings.
    let _serial = SERIAL.lock();
    let e = soak::run(&small_soak(), leaking)
        .err()
        .map(|e| e.to_string());
    assert!(e.is_some_and(|e| e.contains("leak")));
}
