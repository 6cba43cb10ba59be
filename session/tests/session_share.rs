//! Shared encodes under stress: five clients joining on different ticks
//! (so their recalls count steps from different keyframes), views drawn
//! from a small pool (whole, filtered, with held ids), small limits (the
//! recall evicts by count and by groups), quantised and predicted fields,
//! loss, delays and requests for full snapshots. Every packet applied
//! gives exactly the state the server sent; none is undecodable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use tickpack::quant::Quantize;
use tickpack::{DeltaOp, Field, Limits, Primitive, Schema, Snapshot};
use tickpack_session::{Client, ClientConfig, DropReason, Received, Server, ServerConfig, View};
use tickpack_testkit::rng::SplitMix64;

fn schema(quant: bool, predict: bool) -> Schema {
    let b = Schema::builder().entity("a").field("x", Primitive::U8, 2);
    let b = b.entity("b").field_with(Field {
        name: "p".into(),
        ty: Primitive::F32,
        len: 2,
        delta: predict.then_some(DeltaOp::Predict),
    });
    let b = if quant {
        b.quantize(Quantize::step(0.5).with_range(-1000.0, 1000.0).clamped())
    } else {
        b
    };
    b.entity("c").field("y", Primitive::U32, 1).build().unwrap()
}

/// Packets on their way, each with the tick it arrives.
type InFlight = Vec<(u32, Arc<[u8]>)>;

/// One run's settings.
struct Run {
    seed: u64,
    quant: bool,
    predict: bool,
    limits: Limits,
    /// Percent of sends with the tick's common view (else one drawn from
    /// the pool).
    common_pct: u64,
    /// Percent of packets and of acks lost.
    loss: u64,
    ticks: u32,
}

/// Runs `r`, checking every applied packet; returns the sends that took
/// another client's encode.
fn run(r: Run) -> u64 {
    let Run {
        seed,
        quant,
        predict,
        limits,
        common_pct,
        loss,
        ticks,
    } = r;
    let s = schema(quant, predict);
    let mut rng = SplitMix64::new(seed);
    let mut server = Server::new(
        s.clone(),
        ServerConfig {
            limits,
            history: 8,
            ..ServerConfig::default()
        },
    )
    .unwrap();
    let joins = [(1u16, 0u32), (2, 3), (3, 17), (4, 50), (5, 51)];
    // Per client: its id, itself, and its packets in flight (tick due).
    let mut clients: Vec<(u16, Client, InFlight)> = Vec::new();
    let mut expected = Snapshot::default();
    // World state: per section, id -> value.
    let mut present: Vec<Vec<(u32, u32)>> = vec![Vec::new(); 3];
    let mut views: Vec<View> = Vec::new();
    for t in 0..ticks {
        for &(id, at) in &joins {
            if t == at {
                let mut c = Client::new(
                    s.clone(),
                    ClientConfig {
                        limits,
                        history: 8,
                        ..ClientConfig::default()
                    },
                )
                .unwrap();
                server
                    .accept(id, &c.answer(&server.hello().to_bytes()).unwrap())
                    .unwrap();
                clients.push((id, c, Vec::new()));
            }
        }
        // Evolve the world: sparse ids, churn.
        for (sec, p) in present.iter_mut().enumerate() {
            p.retain(|_| rng.below(100) >= 10);
            while p.len() < 12 && rng.below(100) < 60 {
                let id = rng.below(300) as u32;
                if !p.iter().any(|e| e.0 == id) {
                    p.push((id, rng.below(4) as u32));
                }
            }
            for e in p.iter_mut() {
                if rng.below(100) < 30 {
                    e.1 = e.1.wrapping_add(1 + sec as u32);
                }
            }
        }
        let mut w = Snapshot::new(&s);
        for (sec, p) in present.iter().enumerate() {
            for &(id, v) in p {
                let rec: Vec<u8> = match sec {
                    0 => vec![v as u8, id as u8],
                    1 => {
                        let mut r = ((v as f32) * 0.5).to_le_bytes().to_vec();
                        r.extend_from_slice(&(id as f32).to_le_bytes());
                        r
                    }
                    _ => v.to_le_bytes().to_vec(),
                };
                w.section_mut(sec).unwrap().insert(id, &rec).unwrap();
            }
        }
        if quant {
            s.quantize(&mut w).unwrap();
        }
        let w = Arc::new(w);
        // A small pool of views, renewed every 5 ticks.
        if t % 5 == 0 || views.is_empty() {
            views.clear();
            views.push(View::all());
            for k in 0..3 {
                let mut send = Vec::new();
                let mut hold = Vec::new();
                for p in &present {
                    let mut sv = Vec::new();
                    let mut hv = Vec::new();
                    for &(id, _) in p {
                        match rng.below(3) {
                            0 => sv.push(id),
                            1 if k == 2 => hv.push(id),
                            _ => {}
                        }
                    }
                    // Some ids that are not (yet) in the world.
                    sv.push(rng.below(300) as u32);
                    send.push(sv);
                    hold.push(hv);
                }
                views.push(View::with_held(send, hold));
            }
        }
        server.begin_tick(w.clone());
        let common = views[(t as usize / 7) % views.len()].clone();
        for (id, c, flight) in clients.iter_mut() {
            let view = if rng.below(100) < common_pct {
                common.clone()
            } else {
                views[rng.below(views.len() as u64) as usize].clone()
            };
            let p = server.send(*id, &view).unwrap();
            if rng.below(100) >= loss {
                flight.push((t + rng.below(3) as u32, p));
            }
            let (now, later): (Vec<_>, Vec<_>) = flight.drain(..).partition(|p| p.0 <= t);
            *flight = later;
            for (_, p) in now {
                match c.receive(&p) {
                    Received::Applied { sequence, .. } => {
                        assert!(server.sent_state(*id, sequence, &mut expected));
                        assert_eq!(
                            c.get(sequence),
                            Some(&expected),
                            "seed {seed} tick {t} client {id}"
                        );
                    }
                    Received::Dropped(DropReason::Undecodable(e)) => {
                        panic!("seed {seed} tick {t} client {id}: undecodable {e}")
                    }
                    Received::Dropped(_) => {}
                }
            }
            if ticks < 1000 && rng.below(500) == 0 {
                c.request_full();
            }
            if rng.below(100) >= loss {
                server.handle_message(*id, &c.message().to_bytes()).unwrap();
            }
        }
    }
    let st = server.stats();
    st.packets - st.encodes
}

#[test]
fn late_joiners_share_encodes_under_small_limits() {
    let small = Limits {
        max_entities_per_section: 14,
        max_snapshot_bytes: 700,
        ..Limits::default()
    };
    let medium = Limits {
        max_entities_per_section: 30,
        max_snapshot_bytes: 900,
        ..Limits::default()
    };
    let mut shared = 0;
    for seed in 0..4u64 {
        for (quant, predict) in [(false, false), (true, false), (false, true), (true, true)] {
            for limits in [small, medium, Limits::default()] {
                shared += run(Run {
                    seed,
                    quant,
                    predict,
                    limits,
                    common_pct: [100, 97, 90][seed as usize % 3],
                    loss: [0, 3, 15][seed as usize % 3],
                    ticks: 300,
                });
            }
        }
    }
    assert!(shared > 1000, "{shared} shared sends");
}

/// Long enough that every chain forgets departures (after 4,096 steps),
/// each on its own steps.
#[test]
fn late_joiners_share_encodes_across_forgetting() {
    let mut shared = 0;
    for (seed, quant) in [(0u64, false), (1, true)] {
        shared += run(Run {
            seed,
            quant,
            predict: quant,
            limits: Limits {
                max_entities_per_section: 30,
                max_snapshot_bytes: 2000,
                ..Limits::default()
            },
            common_pct: 100,
            loss: 0,
            ticks: 4500,
        });
    }
    assert!(shared > 1000, "{shared} shared sends");
}
