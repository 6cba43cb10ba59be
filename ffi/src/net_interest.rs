//! The interest hook of a C server: everything, distance rate tiers over
//! a position field the caller names, or a C callback per entity.

// Calls the C callback; the one `unsafe` block states the contract.
#![allow(unsafe_code)]

use core::ffi::c_void;
use std::collections::{HashMap, HashSet};

use tickpack::{Primitive, Schema, Snapshot};
use tickpack_net::{ClientId, Interest};
use tickpack_session::{RateTiers, View};

use crate::boundary::in_callback;
use crate::error::Error;

/// `TpInterestConfig::kind`: every client sees the whole world.
pub const TP_INTEREST_EVERYTHING: u8 = 0;
/// `TpInterestConfig::kind`: distance rate tiers over one entity type.
pub const TP_INTEREST_TIERED: u8 = 1;
/// `TpInterestConfig::kind`: a C function decides per entity.
pub const TP_INTEREST_CALLBACK: u8 = 2;

/// Decides whether `client` sees entity `entity` of type `entity_type`
/// this tick: nonzero sends it, 0 leaves it out. `user` is
/// `TpInterestConfig::user`. Called from inside `tp_net_server_tick`, on
/// its thread; a library call made from inside it is refused with
/// `TP_STATUS_INVALID_ARGUMENT`.
pub type TpInterestFn = Option<
    unsafe extern "C" fn(user: *mut c_void, client: u16, entity_type: usize, entity: u32) -> i32,
>;

/// What each client of a `TpNetServer` is sent of the world;
/// `tp_net_server_new` takes it (null: everything). `kind` picks the
/// hook; the fields of the other kinds are ignored.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TpInterestConfig {
    /// `TP_INTEREST_EVERYTHING`, `TP_INTEREST_TIERED` or
    /// `TP_INTEREST_CALLBACK` (a byte, so no value is undefined; others
    /// are refused).
    pub kind: u8,
    /// Tiered: the entity type whose entities are tiered by distance;
    /// every other type is sent whole every tick.
    pub entity_type: usize,
    /// Tiered: the name (UTF-8, `position_field_len` bytes, no NUL needed)
    /// of that type's position field: `f32` with 2 or 3 elements.
    pub position_field: *const u8,
    /// Length of `position_field` in bytes.
    pub position_field_len: usize,
    /// Tiered: up to this distance from the client's focus entity, every
    /// tick (the default 100).
    pub near: f32,
    /// Tiered: up to this distance every 2nd tick, beyond every 4th (the
    /// default 200).
    pub far: f32,
    /// Tiered: 0 leaves an entity skipped this tick out of the client's
    /// snapshot (its game keeps the last one it saw), anything else holds
    /// it at the client's baseline record.
    pub hold_skipped: u8,
    /// Callback: the function.
    pub callback: TpInterestFn,
    /// Callback: passed to it unchanged.
    pub user: *mut c_void,
}

/// Entity ids and positions of one tick.
type Placed = Vec<(u32, [f32; 3])>;

/// Tiers over one entity type, viewed from each client's focus entity.
#[derive(Debug)]
pub(crate) struct Tiers {
    tiers: RateTiers,
    hold: bool,
    entity_type: usize,
    /// Byte offset of the position field in a record, and its elements.
    offset: usize,
    dims: usize,
    /// The positions of the tick they were computed for.
    cache: Option<(u32, Placed)>,
    /// Per client: the entity it views from (default: its token's user).
    focus: HashMap<ClientId, u32>,
    /// Per client: per entity id, the tick it was last sent.
    last_sent: HashMap<ClientId, HashMap<u32, u32>>,
    /// Clients whose first snapshot has not gone out yet.
    fresh: HashSet<ClientId>,
}

/// The hook a C server runs.
#[derive(Debug)]
pub(crate) enum CInterest {
    Everything,
    Tiered(Box<Tiers>),
    Callback {
        f: unsafe extern "C" fn(*mut c_void, u16, usize, u32) -> i32,
        /// The caller's pointer, as an address so the handle stays `Send`
        /// (the header says the callback runs on the ticking thread).
        user: usize,
    },
}

impl CInterest {
    /// The hook `c` describes (`name` is its position field's text).
    pub(crate) fn new(schema: &Schema, c: &TpInterestConfig, name: &str) -> Result<Self, Error> {
        match c.kind {
            TP_INTEREST_EVERYTHING => Ok(Self::Everything),
            TP_INTEREST_CALLBACK => {
                let f = c.callback.ok_or_else(|| Error::null("interest callback"))?;
                Ok(Self::Callback {
                    f,
                    user: c.user.expose_provenance(),
                })
            }
            TP_INTEREST_TIERED => Ok(Self::Tiered(Box::new(Tiers::new(schema, c, name)?))),
            other => Err(Error::invalid(format_args!(
                "interest kind {other} is not a TP_INTEREST_* value"
            ))),
        }
    }

    /// Makes `client` view from `entity` (tiered hooks only).
    pub(crate) fn set_focus(&mut self, client: ClientId, entity: u32) -> Result<(), Error> {
        match self {
            Self::Tiered(t) => {
                t.focus.insert(client, entity);
                Ok(())
            }
            _ => Err(Error::invalid(
                "the server's interest is not TP_INTEREST_TIERED: it has no focus",
            )),
        }
    }
}

impl Tiers {
    fn new(schema: &Schema, c: &TpInterestConfig, name: &str) -> Result<Self, Error> {
        let ty = schema.sections().get(c.entity_type).ok_or_else(|| {
            Error::invalid(format_args!(
                "entity type {} is past the schema's {}",
                c.entity_type,
                schema.sections().len()
            ))
        })?;
        let (index, field) = ty
            .fields()
            .iter()
            .enumerate()
            .find(|(_, f)| f.name == name)
            .ok_or_else(|| {
                Error::invalid(format_args!(
                    "entity type {} has no field named {name:?}",
                    ty.name()
                ))
            })?;
        if field.ty != Primitive::F32 || !(2..=3).contains(&field.len) {
            return Err(Error::invalid(format_args!(
                "position field {name:?} is not f32 with 2 or 3 elements"
            )));
        }
        if !(c.near >= 0.0 && c.far >= c.near) {
            return Err(Error::invalid("tiers need 0 <= near <= far (and no NaN)"));
        }
        Ok(Self {
            tiers: RateTiers {
                near: c.near,
                far: c.far,
                stagger: false,
            },
            hold: c.hold_skipped != 0,
            entity_type: c.entity_type,
            offset: ty.offsets().get(index).copied().unwrap_or_default(),
            dims: field.len,
            cache: None,
            focus: HashMap::new(),
            last_sent: HashMap::new(),
            fresh: HashSet::new(),
        })
    }

    /// Ids and positions of the tiered entities of `world`.
    fn positions(&self, world: &Snapshot) -> Placed {
        let Some(section) = world.sections().get(self.entity_type) else {
            return Vec::new();
        };
        let size = section.record_size().max(1);
        let records = section.records().chunks_exact(size);
        section
            .ids()
            .iter()
            .zip(records)
            .map(|(&id, record)| {
                let mut pos = [0.0f32; 3];
                for (d, p) in pos.iter_mut().enumerate().take(self.dims) {
                    let at = self.offset + 4 * d;
                    if let Some(b) = record.get(at..at + 4).and_then(|b| b.try_into().ok()) {
                        *p = f32::from_le_bytes(b);
                    }
                }
                (id, pos)
            })
            .collect()
    }

    fn view(&mut self, client: ClientId, user: u64, tick: u32, world: &Snapshot) -> View {
        // Computed once per tick, not once per client.
        if self.cache.as_ref().is_none_or(|(t, _)| *t != tick) {
            self.cache = Some((tick, self.positions(world)));
        }
        let placed = self.cache.take().map(|(_, p)| p).unwrap_or_default();
        let view = self.view_from(client, user, tick, world, &placed);
        self.cache = Some((tick, placed));
        view
    }

    fn view_from(
        &mut self,
        client: ClientId,
        user: u64,
        tick: u32,
        world: &Snapshot,
        placed: &[(u32, [f32; 3])],
    ) -> View {
        let focus = self
            .focus
            .get(&client)
            .copied()
            .or_else(|| u32::try_from(user).ok());
        let viewer = placed
            .iter()
            .find(|(id, _)| Some(*id) == focus)
            .map_or([0.0; 3], |p| p.1);
        let mut send: Vec<Vec<u32>> = world.sections().iter().map(|s| s.ids().to_vec()).collect();
        let mut hold = vec![Vec::new(); send.len()];
        let Some(last) = self.last_sent.get(&client) else {
            // A new client's first snapshot holds every entity.
            self.fresh.insert(client);
            return View::filter(send);
        };
        let (mut due, mut skip) = (Vec::with_capacity(placed.len()), Vec::new());
        let entities = placed
            .iter()
            .map(|&(id, pos)| (id, pos, last.get(&id).copied()));
        self.tiers
            .select_due(tick, viewer, entities, &mut due, &mut skip);
        if let Some(s) = send.get_mut(self.entity_type) {
            *s = due;
        }
        if self.hold {
            if let Some(h) = hold.get_mut(self.entity_type) {
                *h = skip;
            }
            return View::with_held(send, hold);
        }
        View::filter(send)
    }

    fn sent(&mut self, client: ClientId, tick: u32, view: &View) {
        let fresh = self.fresh.remove(&client);
        let last = self.last_sent.entry(client).or_default();
        for &id in view.sent_ids(self.entity_type).unwrap_or(&[]) {
            // A new client's far entities spread over the next ticks.
            let at = if fresh {
                tick.saturating_sub(id % 4)
            } else {
                tick
            };
            last.insert(id, at);
        }
    }
}

impl Interest for CInterest {
    fn view(&mut self, client: ClientId, user: u64, tick: u32, world: &Snapshot) -> View {
        match self {
            Self::Everything => View::all(),
            Self::Tiered(t) => t.view(client, user, tick, world),
            Self::Callback { f, user } => {
                let sections = world
                    .sections()
                    .iter()
                    .enumerate()
                    .map(|(ty, s)| {
                        s.ids()
                            .iter()
                            .copied()
                            .filter(|&id| {
                                // SAFETY: the caller gave this function
                                // and pointer in `TpInterestConfig` and
                                // promised the call is sound (see
                                // `TpInterestFn`).
                                let user = core::ptr::with_exposed_provenance_mut(*user);
                                in_callback(|| unsafe { f(user, client.index(), ty, id) }) != 0
                            })
                            .collect()
                    })
                    .collect();
                View::filter(sections)
            }
        }
    }

    fn sent(&mut self, client: ClientId, tick: u32, view: &View) {
        if let Self::Tiered(t) = self {
            t.sent(client, tick, view);
        }
    }

    fn disconnected(&mut self, client: ClientId) {
        if let Self::Tiered(t) = self {
            t.focus.remove(&client);
            t.last_sent.remove(&client);
            t.fresh.remove(&client);
        }
    }
}
