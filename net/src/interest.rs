//! The interest hook: what each client is sent of the world, per tick.

use std::collections::{HashMap, HashSet};

use tickpack::Snapshot;
use tickpack_session::{RateTiers, View};

use crate::ClientId;

/// Decides, per client and tick, which entities the client's snapshot
/// holds (a [`View`]). The server calls [`view`](Self::view) for every
/// client it sends to this tick, then [`sent`](Self::sent) for each whose
/// snapshot actually went out (pacing may hold one back).
pub trait Interest {
    /// The view of `client` (whose connect token named `user`) on `tick`
    /// (the server's tick count) of `world`.
    fn view(&mut self, client: ClientId, user: u64, tick: u32, world: &Snapshot) -> View;

    /// `client`'s snapshot with `view` went out on `tick`.
    fn sent(&mut self, _client: ClientId, _tick: u32, _view: &View) {}

    /// `client` disconnected: forget what was kept for it.
    fn disconnected(&mut self, _client: ClientId) {}
}

/// Every client sees the whole world.
#[derive(Debug, Clone, Copy, Default)]
pub struct EveryEntity;

impl Interest for EveryEntity {
    fn view(&mut self, _: ClientId, _: u64, _: u32, _: &Snapshot) -> View {
        View::all()
    }
}

/// What a client's snapshot holds of an entity the rate tiers skip this
/// tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Skipped {
    /// Left out ([`View::filter`]).
    #[default]
    Omitted,
    /// Held at the baseline's record ([`View::with_held`]).
    Held,
}

/// Entities positions, for [`Tiered`]: `(id, position)` of every entity of
/// the tiered section in a world.
pub type Positions = fn(&Snapshot) -> Vec<(u32, [f32; 3])>;

/// Entity ids and positions of one tick.
type Placed = Vec<(u32, [f32; 3])>;

/// Distance rate tiers ([`RateTiers::select_due`]) as an [`Interest`]: a
/// client views from the entity whose id is its connect token's user id;
/// entities of section 0 near it are sent every tick, farther ones every
/// 2nd or 4th tick after they were last *sent* to it (a snapshot held back
/// by pacing does not count). Other sections are not sent. A new client's
/// first snapshot holds every entity, and entity `id` counts as sent `id %
/// 4` ticks earlier than that, so the far entities spread over the ticks.
#[derive(Debug)]
pub struct Tiered {
    tiers: RateTiers,
    skipped: Skipped,
    positions: Positions,
    /// The positions of the tick they were computed for.
    cache: Option<(u32, Placed)>,
    /// Per client: per entity id, the tick it was last sent.
    last_sent: HashMap<ClientId, HashMap<u32, u32>>,
    /// Clients whose first snapshot has not gone out yet.
    fresh: HashSet<ClientId>,
}

impl Tiered {
    /// Tiers over the entities `positions` lists.
    pub fn new(tiers: RateTiers, skipped: Skipped, positions: Positions) -> Self {
        Self {
            tiers,
            skipped,
            positions,
            cache: None,
            last_sent: HashMap::new(),
            fresh: HashSet::new(),
        }
    }
}

impl Interest for Tiered {
    fn view(&mut self, client: ClientId, user: u64, tick: u32, world: &Snapshot) -> View {
        if self.cache.as_ref().is_none_or(|(t, _)| *t != tick) {
            self.cache = Some((tick, (self.positions)(world)));
        }
        let cars = self.cache.as_ref().map_or(&[][..], |(_, c)| c.as_slice());
        let viewer = cars
            .iter()
            .find(|(id, _)| u64::from(*id) == user)
            .map_or([0.0; 3], |c| c.1);
        let Some(last) = self.last_sent.get(&client) else {
            self.fresh.insert(client);
            return View::filter(vec![cars.iter().map(|c| c.0).collect()]);
        };
        let entities = cars
            .iter()
            .map(|&(id, pos)| (id, pos, last.get(&id).copied()));
        let (mut send, mut skip) = (Vec::with_capacity(cars.len()), Vec::new());
        self.tiers
            .select_due(tick, viewer, entities, &mut send, &mut skip);
        match self.skipped {
            Skipped::Omitted => View::filter(vec![send]),
            Skipped::Held => View::with_held(vec![send], vec![skip]),
        }
    }

    fn sent(&mut self, client: ClientId, tick: u32, view: &View) {
        let fresh = self.fresh.remove(&client);
        let last = self.last_sent.entry(client).or_default();
        for &id in view.sent_ids(0).unwrap_or(&[]) {
            let at = if fresh {
                tick.saturating_sub(id % 4)
            } else {
                tick
            };
            last.insert(id, at);
        }
    }

    fn disconnected(&mut self, client: ClientId) {
        self.last_sent.remove(&client);
        self.fresh.remove(&client);
    }
}
