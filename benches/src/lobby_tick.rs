//! The UDP lobby's server tick without its sockets, as the criterion
//! `session` bench times it and `examples/session_profile.rs` counts it:
//! 63 clients of the quantised race (seed 1), the shipped quantised set, a
//! rate-tier view per client (far cars left out between their updates),
//! acks 3 ticks late (every 20th client 4-6).

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use tickpack::Snapshot;
use tickpack_scenarios::{car_positions, racing_lobby, racing_schema_quantized, TICK_RATE};
use tickpack_session::{history_for, RateTiers, Server, ServerConfig, SessionError};
use tickpack_sets::dictset::{DictKind, DictionarySet};

use crate::lobby::shipped_racing_quantized_set;
use crate::lobby_udp::{view_for, FarCars};

/// Clients of the lobby.
pub const CLIENTS: u16 = 63;

/// The ack lag of client `id` in ticks: 3, for every 20th 4-6 (the spread
/// of a 5% lossy link).
pub fn lag(id: u16) -> u16 {
    if id.is_multiple_of(20) {
        4 + id % 3
    } else {
        3
    }
}

/// The worlds and, per client, the tick each car was last sent.
pub struct LobbyTick {
    worlds: Vec<Arc<Snapshot>>,
    cars: Vec<Vec<(u32, [f32; 3])>>,
    last_sent: Vec<Vec<Option<u32>>>,
    rates: RateTiers,
    t: usize,
}

impl LobbyTick {
    /// The server with every client connected, and the lobby at tick 0.
    pub fn new() -> Result<(Server, Self), Box<dyn Error>> {
        let sc =
            racing_lobby(1, 240).quantized("racing lobby, quantised", racing_schema_quantized());
        let set = DictionarySet::load(shipped_racing_quantized_set())?;
        set.fits(&sc.schema)?;
        let worlds: Vec<Arc<Snapshot>> = sc.ticks.into_iter().map(Arc::new).collect();
        let cars: Vec<_> = worlds.iter().map(|w| car_positions(w)).collect();
        let cfg = ServerConfig {
            dictionary: set.dictionary(DictKind::Delta).cloned(),
            keyframe_dictionary: set.dictionary(DictKind::Keyframe).cloned(),
            history: history_for(
                Duration::from_secs(1) / TICK_RATE,
                Duration::from_millis(200),
            ),
            ..ServerConfig::default()
        };
        let mut server = Server::new(set.schema().clone(), cfg)?;
        for id in 1..=CLIENTS {
            server.connect(id);
        }
        let n_cars = cars.first().map_or(0, Vec::len);
        let lobby = Self {
            worlds,
            cars,
            last_sent: vec![vec![None; n_cars + 1]; usize::from(CLIENTS) + 1],
            rates: RateTiers::default(),
            t: 0,
        };
        Ok((server, lobby))
    }

    /// One tick: each client's packet (or its error) goes to `packet`.
    #[inline(always)]
    pub fn step(
        &mut self,
        server: &mut Server,
        mut packet: impl FnMut(Result<Arc<[u8]>, SessionError>),
    ) {
        let k = self.t % self.worlds.len();
        let seq = server.begin_tick(self.worlds[k].clone());
        for id in 1..=CLIENTS {
            let sent = &mut self.last_sent[usize::from(id)];
            let view = view_for(
                &self.rates,
                FarCars::Omitted,
                self.t,
                id,
                &self.cars[k],
                sent,
            );
            packet(server.send(id, &view));
            for &car in view.sent_ids(0).unwrap_or(&[]) {
                if let Some(slot) = sent.get_mut(car as usize) {
                    *slot = Some(self.t as u32);
                }
            }
            server.ack(id, seq.wrapping_sub(lag(id))).ok();
        }
        self.t += 1;
    }
}
