//! What the network endpoints report to C: events, the outcome of a
//! datagram, disconnect reasons and round-trip times.

use tickpack_net::{ClientEvent, DisconnectReason, Handled, ServerEvent};
use tickpack_transport::conn::Rtt;

use crate::net_address::TpAddress;

/// What an event says happened.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpNetEventKind {
    /// Server: a client answered its challenge (`client`, `user`,
    /// `address`); its connect snapshot goes out with the next tick.
    ClientConnected = 1,
    /// Server: the client holds its connect snapshot; regular snapshots
    /// flow (`client`).
    ClientReady = 2,
    /// Server: the client's packets now come from `address` (NAT
    /// rebinding).
    ClientMigrated = 3,
    /// Server: a client is gone (`client`, `user`, `reason`); its id is
    /// free for the next one.
    ClientDisconnected = 4,
    /// Client: the connect snapshot arrived; the client is connected.
    Connected = 5,
    /// Client: a snapshot was applied (`sequence`, `tick`).
    SnapshotApplied = 6,
    /// Client: the connection ended (`reason`); it sends nothing more.
    Disconnected = 7,
    /// An event this version of the header does not name.
    Other = 8,
}

/// Why a connection ended.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpDisconnectReason {
    /// Not a disconnect event.
    None = 0,
    /// The peer fell silent for the token's timeout, or the handshake did
    /// not finish in time.
    TimedOut = 1,
    /// Refused: server full, token expired or used, or the two ends
    /// disagree on schema, dictionaries or limits.
    Refused = 2,
    /// The server ended it (`tp_net_server_kick`).
    Kicked = 3,
    /// The peer sent too many malformed authenticated payloads.
    BadTraffic = 4,
    /// The client left (`tp_net_client_disconnect`).
    Left = 5,
    /// A reason this version of the header does not name.
    Other = 6,
}

impl From<DisconnectReason> for TpDisconnectReason {
    fn from(r: DisconnectReason) -> Self {
        match r {
            DisconnectReason::TimedOut => Self::TimedOut,
            DisconnectReason::Refused => Self::Refused,
            DisconnectReason::Kicked => Self::Kicked,
            DisconnectReason::BadTraffic => Self::BadTraffic,
            DisconnectReason::Left => Self::Left,
            _ => Self::Other,
        }
    }
}

/// One event of `tp_net_server_poll_event` or `tp_net_client_poll_event`;
/// fields the kind does not use are zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpNetEvent {
    /// What happened.
    pub kind: TpNetEventKind,
    /// The client's id on the server (its slot, `0..max_clients`).
    pub client: u16,
    /// The user id its connect token names.
    pub user: u64,
    /// Why the connection ended (disconnect events).
    pub reason: TpDisconnectReason,
    /// The applied snapshot's session sequence (`SnapshotApplied`).
    pub sequence: u16,
    /// Its tick, counting up without wrap (`SnapshotApplied`).
    pub tick: u32,
    /// The client's address (`ClientConnected`, `ClientMigrated`).
    pub address: TpAddress,
}

impl TpNetEvent {
    fn of(kind: TpNetEventKind) -> Self {
        Self {
            kind,
            client: 0,
            user: 0,
            reason: TpDisconnectReason::None,
            sequence: 0,
            tick: 0,
            address: TpAddress::default(),
        }
    }
}

impl From<ServerEvent> for TpNetEvent {
    fn from(e: ServerEvent) -> Self {
        match e {
            ServerEvent::ClientConnected { client, user, addr } => Self {
                client: client.index(),
                user,
                address: addr.into(),
                ..Self::of(TpNetEventKind::ClientConnected)
            },
            ServerEvent::ClientReady { client } => Self {
                client: client.index(),
                ..Self::of(TpNetEventKind::ClientReady)
            },
            ServerEvent::ClientMigrated { client, to } => Self {
                client: client.index(),
                address: to.into(),
                ..Self::of(TpNetEventKind::ClientMigrated)
            },
            ServerEvent::ClientDisconnected {
                client,
                user,
                reason,
            } => Self {
                client: client.index(),
                user,
                reason: reason.into(),
                ..Self::of(TpNetEventKind::ClientDisconnected)
            },
            _ => Self::of(TpNetEventKind::Other),
        }
    }
}

impl From<ClientEvent> for TpNetEvent {
    fn from(e: ClientEvent) -> Self {
        match e {
            ClientEvent::Connected => Self::of(TpNetEventKind::Connected),
            ClientEvent::SnapshotApplied { sequence, tick } => Self {
                sequence,
                tick,
                ..Self::of(TpNetEventKind::SnapshotApplied)
            },
            ClientEvent::Disconnected { reason } => Self {
                reason: reason.into(),
                ..Self::of(TpNetEventKind::Disconnected)
            },
            _ => Self::of(TpNetEventKind::Other),
        }
    }
}

/// What one received datagram did (`tp_net_*_handle`). None is an error:
/// the datagram was taken in or dropped, and nothing else changed.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpHandled {
    /// An authenticated payload, taken in.
    Payload = 0,
    /// A handshake or control packet of the connection layer.
    Control = 1,
    /// Refused by the connection layer (forged, replayed, foreign,
    /// malformed); `tp_last_error_message` says why.
    Rejected = 2,
    /// Authenticated but malformed; counted against the sender, who is
    /// disconnected after too many.
    Malformed = 3,
    /// An outcome this version of the header does not name.
    Other = 4,
}

impl TpHandled {
    /// The outcome and, for a refused datagram, the reason.
    pub(crate) fn of(h: &Handled) -> (Self, Option<String>) {
        match h {
            Handled::Payload => (Self::Payload, None),
            Handled::Control => (Self::Control, None),
            Handled::Rejected(e) => (Self::Rejected, Some(format!("rejected: {e}"))),
            Handled::Malformed(e) => (Self::Malformed, Some(format!("malformed: {e}"))),
            _ => (Self::Other, None),
        }
    }
}

/// Round-trip estimates of a connection, in microseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TpRtt {
    /// The smoothed estimate.
    pub smoothed_us: u64,
    /// Its mean deviation.
    pub variance_us: u64,
    /// The newest sample.
    pub latest_us: u64,
    /// The smallest sample.
    pub min_us: u64,
}

fn micros(d: core::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl From<Rtt> for TpRtt {
    fn from(r: Rtt) -> Self {
        Self {
            smoothed_us: micros(r.smoothed()),
            variance_us: micros(r.variance()),
            latest_us: micros(r.latest()),
            min_us: micros(r.min()),
        }
    }
}
