//! The server on a UDP socket on 127.0.0.1 at 60 Hz of wall-clock time,
//! its clients in a second thread of the same process (a socket each,
//! the crate's `udp::Driver`), and the search for the largest client
//! count that keeps the tick rate with every client in sync.

use std::error::Error;
use std::net::UdpSocket;
use std::thread;
use std::time::{Duration, Instant};

use tickpack_net::udp::{unix_now, Driver, Ticker};
use tickpack_net::{Client, Server};
use tickpack_transport::conn::ConnectToken;

use super::sim::check_sync;
use super::{Setup, Spread};

/// Settings of one UDP run.
#[derive(Debug, Clone, Copy)]
pub struct UdpConfig {
    /// Clients.
    pub clients: u16,
    /// Seconds measured, after a warm-up in which the clients connect.
    pub seconds: f64,
    /// Seconds of warm-up.
    pub warmup: f64,
}

/// What one UDP run saw.
#[derive(Debug, Clone)]
pub struct UdpRun {
    /// Clients.
    pub clients: u16,
    /// Ticks due in the measured time, and ticks run.
    pub due: u64,
    /// Ticks run in the measured time.
    pub run: u64,
    /// Server time per tick (`tick` and the pump that sends it).
    pub tick: Spread,
    /// The server thread's busy share of the measured time (ticks and the
    /// pumps between them).
    pub server_busy: f64,
    /// The client thread's busy share of the measured time.
    pub client_busy: f64,
    /// The client thread's longest turn over every client.
    pub client_turn: Spread,
    /// Datagrams the OS refused to the server (full send buffer).
    pub send_refused: u64,
    /// The sync check: the most lagging client's lag in ticks, or why not.
    pub sync: Result<u64, String>,
}

/// Most ticks a client's newest snapshot may be behind at the end.
pub const MAX_LAG: u64 = 30;

impl UdpRun {
    /// Whether the server kept 60 Hz (99% of the ticks due ran, the 99th
    /// percentile tick within two periods: one late tick is caught up by
    /// the next, and a shared machine preempts now and then) and every
    /// client is in sync and no more than [`MAX_LAG`] ticks behind.
    pub fn holds(&self) -> bool {
        self.limit().is_none()
    }

    /// What failed, if anything.
    pub fn limit(&self) -> Option<String> {
        let period = Duration::from_secs(1) / 60;
        if (self.run as f64) < self.due as f64 * 0.99 {
            return Some(format!("the server ran {} of {} ticks", self.run, self.due));
        }
        if self.tick.p99 > period * 2 {
            return Some(format!("the server's p99 tick took {:?}", self.tick.p99));
        }
        match &self.sync {
            Err(e) => Some(format!("sync: {e}")),
            Ok(lag) if *lag > MAX_LAG => Some(format!(
                "the clients fell {lag} ticks behind (client thread busy {:.0}%)",
                self.client_busy * 100.0
            )),
            Ok(_) => None,
        }
    }
}

/// Runs one UDP measurement.
pub fn run(a: &UdpConfig) -> Result<UdpRun, Box<dyn Error>> {
    let setup = Setup::new(a.clients, Duration::from_millis(20))?;
    let server_socket = UdpSocket::bind("127.0.0.1:0")?;
    let server_addr = server_socket.local_addr()?;
    let server = Server::new(
        setup.schema.clone(),
        setup.server.clone(),
        Setup::interest(),
    )?;
    let mut server = Driver::on(server_socket, server)?;
    let now = unix_now();
    let mut clients = Vec::with_capacity(usize::from(a.clients));
    for user in 0..u64::from(a.clients) {
        let token = ConnectToken::issue(
            &setup.key,
            super::PROTOCOL_ID,
            user,
            now,
            Duration::from_secs(120),
            Duration::from_secs(10),
        )?;
        let net = Client::new(
            now,
            server_addr,
            token,
            setup.schema.clone(),
            setup.client.clone(),
        )?;
        clients.push(Driver::bind("127.0.0.1:0", net)?);
    }
    let start = Instant::now();
    let warmup = Duration::from_secs_f64(a.warmup);
    let measured = Duration::from_secs_f64(a.seconds);
    let drain = Duration::from_millis(300);
    let end = start + warmup + measured;

    let client_thread = thread::spawn(move || -> Result<_, std::io::Error> {
        let mut busy = Duration::ZERO;
        let mut turns = Vec::new();
        loop {
            let t = Instant::now();
            if t >= end + drain * 2 {
                break;
            }
            let now = unix_now();
            for c in &mut clients {
                c.pump(now)?;
                while c.endpoint_mut().poll_event().is_some() {}
            }
            let spent = t.elapsed();
            if t >= start + warmup && t < end {
                busy += spent;
                turns.push(spent);
            }
            if spent < Duration::from_millis(1) {
                thread::sleep(Duration::from_millis(1) - spent);
            }
        }
        Ok((clients, busy, turns))
    });

    let mut ticker = Ticker::new(60);
    let (mut k, mut run, mut busy) = (0u64, 0u64, Duration::ZERO);
    let mut ticks = Vec::new();
    loop {
        let t = Instant::now();
        if t >= end {
            break;
        }
        let measuring = t >= start + warmup;
        if ticker.due() {
            let now = unix_now();
            server.endpoint_mut().tick(now, setup.world(k))?;
            server.pump(now)?;
            while server.endpoint_mut().poll_event().is_some() {}
            k += 1;
            let spent = t.elapsed();
            if measuring {
                run += 1;
                busy += spent;
                ticks.push(spent);
            }
        } else {
            server.pump(unix_now())?;
            if measuring {
                busy += t.elapsed();
            }
            ticker.idle(Duration::from_millis(1));
        }
    }
    // Acks still arriving; no more ticks.
    while Instant::now() < end + drain {
        server.pump(unix_now())?;
        thread::sleep(Duration::from_millis(1));
    }
    let (clients, client_busy, turns) = client_thread
        .join()
        .map_err(|_| "the client thread panicked")??;
    let sync = check_sync(
        server.endpoint(),
        clients
            .iter()
            .enumerate()
            .map(|(i, c)| (i, i as u64, c.endpoint())),
    );
    let secs = measured.as_secs_f64();
    Ok(UdpRun {
        clients: a.clients,
        due: (secs * 60.0).round() as u64,
        run,
        tick: Spread::of(&ticks),
        server_busy: busy.as_secs_f64() / secs,
        client_busy: client_busy.as_secs_f64() / secs,
        client_turn: Spread::of(&turns),
        send_refused: server.stats().send_refused,
        sync,
    })
}

/// The search: doubling from `from` while runs hold, then halving the gap
/// between the last count that held and the first that did not, down to
/// `step` clients. Returns every run, in order, and the largest count that
/// held (0 if none did).
pub fn search(
    from: u16,
    max: u16,
    step: u16,
    seconds: f64,
    mut each: impl FnMut(&UdpRun),
) -> Result<(Vec<UdpRun>, u16), Box<dyn Error>> {
    let mut runs = Vec::new();
    let mut measure = |clients: u16| -> Result<bool, Box<dyn Error>> {
        let r = run(&UdpConfig {
            clients,
            seconds,
            warmup: 2.0,
        })?;
        each(&r);
        let holds = r.holds();
        runs.push(r);
        Ok(holds)
    };
    let (mut good, mut bad) = (0u16, None);
    let mut n = from.max(1);
    loop {
        if measure(n)? {
            good = n;
            if n >= max {
                break;
            }
            n = n.saturating_mul(2).min(max);
        } else {
            bad = Some(n);
            break;
        }
    }
    if let Some(mut bad) = bad {
        while bad - good > step {
            let mid = good + (bad - good) / 2;
            if measure(mid)? {
                good = mid;
            } else {
                bad = mid;
            }
        }
    }
    Ok((runs, good))
}

impl UdpRun {
    /// One row of the report table.
    pub fn row(&self) -> String {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        format!(
            "| {} | {}/{} | {:.0} | {:.0} | {:.0}% | {:.0}% | {:.0} | {} | {} |",
            self.clients,
            self.run,
            self.due,
            us(self.tick.mean),
            us(self.tick.p99),
            self.server_busy * 100.0,
            self.client_busy * 100.0,
            us(self.client_turn.p99),
            match &self.sync {
                Ok(lag) => format!("in sync, lag ≤ {lag}"),
                Err(e) => e.clone(),
            },
            self.limit().unwrap_or_else(|| "holds".into()),
        )
    }

    /// The table's header.
    pub fn header() -> &'static str {
        "| clients | ticks run/due | server µs/tick (mean) | p99 | server busy | client thread busy | client turn p99 µs | sync | verdict |\n\
         |---:|---:|---:|---:|---:|---:|---:|---|---|"
    }
}
