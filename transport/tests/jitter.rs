//! Jitter buffer and distance-based rates over simulated traffic.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tickpack_testkit::rng::SplitMix64;
use tickpack_transport::{JitterBuffer, JitterConfig, Playout};

struct Run {
    released: Vec<(u32, Duration, bool)>,
    late: u64,
    gaps: u64,
    final_delay: Duration,
}

/// 60 Hz snapshots for `secs` seconds, latency 30 ms plus uniform jitter
/// up to `jitter_ms`, `loss_pct` lost; the client polls every millisecond.
fn run(config: JitterConfig, jitter_ms: u64, loss_pct: u64, secs: u64, seed: u64) -> Run {
    let mut rng = SplitMix64::new(seed);
    let tick = config.tick;
    let ticks = (secs * 60) as u32;
    let mut arrivals: Vec<(Duration, u32)> = Vec::new();
    for t in 0..ticks {
        if rng.next_u64() % 100 < loss_pct {
            continue;
        }
        let lat = Duration::from_millis(30 + rng.next_u64() % (jitter_ms + 1));
        arrivals.push((tick * t + lat, t));
    }
    arrivals.sort();
    let mut b = JitterBuffer::new(config);
    let mut released = Vec::new();
    let mut i = 0;
    let end = tick * ticks + Duration::from_millis(500);
    let mut now = Duration::ZERO;
    while now < end {
        while let Some(&(at, t)) = arrivals.get(i) {
            if at > now {
                break;
            }
            b.push(t, t, now);
            i += 1;
        }
        while let Some(p) = b.poll(now) {
            match p {
                Playout::Snapshot { tick, item } => {
                    assert_eq!(tick, item);
                    released.push((tick, now, true));
                }
                Playout::Gap { tick } => released.push((tick, now, false)),
            }
        }
        now += Duration::from_millis(1);
    }
    Run {
        released,
        late: b.stats().late,
        gaps: b.stats().gaps,
        final_delay: b.delay(),
    }
}

#[test]
fn fixed_delay_releases_every_tick_once_at_the_tick_rate() {
    let cfg = JitterConfig {
        delay: Duration::from_millis(60),
        ..JitterConfig::default()
    };
    let r = run(cfg, 40, 2, 10, 1);
    // Every tick once, in order, snapshot or gap.
    let first = r.released[0].0;
    for (k, (t, _, _)) in r.released.iter().enumerate() {
        assert_eq!(*t, first + k as u32);
    }
    // Released at the tick rate: consecutive releases 16 or 17 ms apart
    // (1 ms polling of a 16.667 ms tick), however uneven the arrivals.
    for w in r.released.windows(2) {
        let gap = w[1].1 - w[0].1;
        assert!(
            (16..=17).contains(&gap.as_millis()),
            "uneven release {gap:?}"
        );
    }
    // Delay 60 ms covers the 40 ms jitter: gaps are the 2 % losses only.
    eprintln!(
        "fixed 60 ms delay, 40 ms jitter: {} late, {} gaps",
        r.late, r.gaps
    );
    assert_eq!(r.late, 0);
    // Gaps within the 600 ticks sent are the lost ones (about 2 %); the
    // rest are ticks after the stream ended.
    let gaps = r.released.iter().filter(|x| !x.2 && x.0 < 600).count();
    assert!(gaps > 0 && gaps < 30, "gaps {gaps}");
}

#[test]
fn adaptive_delay_cuts_late_snapshots() {
    let small = JitterConfig {
        delay: Duration::from_millis(16),
        ..JitterConfig::default()
    };
    let fixed = run(small, 60, 0, 10, 2);
    let adaptive = run(
        JitterConfig {
            adaptive: true,
            ..small
        },
        60,
        0,
        10,
        2,
    );
    eprintln!(
        "60 ms jitter: fixed 16 ms delay {} late / {} gaps; adaptive {} late / {} gaps, delay now {:?}",
        fixed.late, fixed.gaps, adaptive.late, adaptive.gaps, adaptive.final_delay
    );
    assert!(fixed.late > 100);
    assert!(adaptive.late * 4 < fixed.late);
    assert!(adaptive.final_delay > Duration::from_millis(40));
}

#[test]
fn extreme_times_do_not_overflow() {
    let mut b = JitterBuffer::new(JitterConfig {
        adaptive: true,
        tick: Duration::MAX,
        max_delay: Duration::MAX,
        ..JitterConfig::default()
    });
    b.push(0, (), Duration::MAX);
    b.push(u32::MAX - 1, (), Duration::MAX);
    b.push(3, (), Duration::ZERO);
    for _ in 0..10 {
        assert!(b.poll(Duration::MAX).is_some());
    }
    assert!(b.stats().released >= 1);
}

#[test]
fn playout_goes_on_across_the_end_of_the_tick_numbers() {
    use tickpack_transport::Pushed;
    let ms = Duration::from_millis;
    let config = JitterConfig {
        tick: ms(10),
        delay: ms(30),
        ..JitterConfig::default()
    };
    let mut b = JitterBuffer::new(config);
    let first = u32::MAX - 2;
    for (k, tick) in [first, u32::MAX - 1, u32::MAX, 0, 1, 2]
        .into_iter()
        .enumerate()
    {
        if tick != 0 {
            assert_eq!(b.push(tick, tick, ms(10 * k as u64)), Pushed::Accepted);
        }
    }
    let mut played = Vec::new();
    let mut now = Duration::ZERO;
    while now < ms(200) {
        while let Some(p) = b.poll(now) {
            played.push(match p {
                Playout::Snapshot { tick, item } => {
                    assert_eq!(tick, item);
                    (tick, true, now)
                }
                Playout::Gap { tick } => (tick, false, now),
            });
        }
        now += ms(1);
    }
    let ticks: Vec<(u32, bool)> = played.iter().map(|&(t, s, _)| (t, s)).collect();
    assert_eq!(
        &ticks[..6],
        &[
            (u32::MAX - 2, true),
            (u32::MAX - 1, true),
            (u32::MAX, true),
            (0, false),
            (1, true),
            (2, true),
        ]
    );
    // Each tick plays 10 ms after the one before, across the wrap too.
    for w in played.windows(2) {
        assert_eq!(w[1].2 - w[0].2, ms(10));
    }
    assert!(played.len() > 10, "playout stalled at the wrap");
    // Tick 0 was reported as a gap: it is late now, and so is u32::MAX.
    assert_eq!(b.push(0, 0, now), Pushed::Late);
    assert_eq!(b.push(u32::MAX, 0, now), Pushed::Late);
    let next = b.next_tick();
    assert_eq!(b.push(next.wrapping_add(3), 7, now), Pushed::Accepted);
}
