//! A harness for instruction counts of Quake 3 packets, as `pipe_profile`
//! is for racing: reads the first `snapshots` of every demo, trains the
//! dictionary and the context model on the other four (as `q3_replay`),
//! encodes every snapshot of demo `index` once to warm the buffers and
//! check each packet, then runs `passes` encode passes in `encode_pass`
//! and `passes` decode passes in `decode_pass` (each out of line, so
//! callgrind can count one of them alone). Prints the packets' mean size
//! and a digest of their bytes, which a speed change must not move.
//!
//! ```sh
//! cargo build --release -p tickpack-benches --example q3_profile
//! valgrind --tool=callgrind --collect-atstart=no \
//!     --toggle-collect='q3_profile::decode_pass' \
//!     target/release/examples/q3_profile 0 2 1000
//! callgrind_annotate --inclusive=yes callgrind.out.<pid>
//! ```
//!
//! Arguments: `[demo index] [passes] [snapshots]` (default `0 4 1000`).
#![forbid(unsafe_code)]

use std::time::Instant;

use tickpack::{Decoder, Encoder, Recall, Snapshot};
use tickpack_benches::q3::{
    data_dir, others, read_demos, reference, train, train_model, Demo, Recalls, Res,
};

#[inline(never)]
fn encode_pass(
    enc: &mut Encoder,
    d: &Demo,
    recalls: &[Option<Recall>],
    packets: &mut [Vec<u8>],
) -> Res<()> {
    for (i, p) in packets.iter_mut().enumerate() {
        let rf = reference(d, i, recalls[i].as_ref());
        enc.encode_to_vec(&d.ticks[i], d.sequences[i], rf, p)?;
    }
    Ok(())
}

#[inline(never)]
fn decode_pass(
    dec: &mut Decoder,
    d: &Demo,
    recalls: &[Option<Recall>],
    packets: &[Vec<u8>],
    out: &mut Snapshot,
) -> Res<()> {
    for (i, p) in packets.iter().enumerate() {
        dec.decode_into(p, reference(d, i, recalls[i].as_ref()), out)?;
    }
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let k: usize = args.get(1).map_or(Ok(0), |s| s.parse())?;
    let passes: usize = args.get(2).map_or(Ok(4), |s| s.parse())?;
    let n: usize = args.get(3).map_or(Ok(1000), |s| s.parse())?;
    let dir = data_dir().ok_or("no q3 data")?;
    let demos = read_demos(&dir, n)?;
    let d = demos.get(k).ok_or("no such demo")?;
    let others = others(&demos, k);
    let dict = train(&d.schema, &others)?.with_model(train_model(&d.schema, &others)?);
    let mut enc = Encoder::new(d.schema.clone());
    let mut dec = Decoder::new(d.schema.clone());
    enc.set_dictionary(Some(&dict))?;
    dec.add_dictionary(&dict)?;
    let mut r = Recalls::new();
    let recalls: Vec<_> = (0..d.ticks.len()).map(|i| r.step(d, i)).collect();
    let mut packets = vec![Vec::new(); d.ticks.len()];
    let mut out = Snapshot::default();
    encode_pass(&mut enc, d, &recalls, &mut packets)?;
    for (i, p) in packets.iter().enumerate() {
        dec.decode_into(p, reference(d, i, recalls[i].as_ref()), &mut out)?;
        if out != d.ticks[i] {
            return Err(format!("snapshot {i} decoded differently").into());
        }
    }
    // The fastest pass of each by the wall clock (noisy on a shared
    // machine; the instruction counts are the measure).
    let (mut te, mut td) = (f64::MAX, f64::MAX);
    for _ in 0..passes {
        let t = Instant::now();
        encode_pass(&mut enc, d, &recalls, &mut packets)?;
        te = te.min(t.elapsed().as_secs_f64());
    }
    for _ in 0..passes {
        let t = Instant::now();
        decode_pass(&mut dec, d, &recalls, &packets, &mut out)?;
        td = td.min(t.elapsed().as_secs_f64());
    }
    let per = 1e6 / packets.len().max(1) as f64;
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for p in &packets {
        for &b in (p.len() as u32).to_le_bytes().iter().chain(p) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let bytes = packets.iter().map(Vec::len).sum::<usize>() as f64 / packets.len().max(1) as f64;
    println!(
        "{}: {} packets x {passes} passes, {bytes:.2} B mean, packets {h:016x}, \
         encode {:.2} µs, decode {:.2} µs (fastest pass)",
        d.name,
        packets.len(),
        te * per,
        td * per,
    );
    Ok(())
}
