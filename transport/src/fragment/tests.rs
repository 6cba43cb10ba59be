use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn small_packet_is_one_part() {
    let mut f = Fragmenter::new(FragmentConfig::default());
    let mut r = Reassembler::new(FragmentConfig::default());
    let d = f.split(b"hello").unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(r.handle(&d[0], ms(0)).unwrap().unwrap(), b"hello");
    assert_eq!(r.handle(&d[0], ms(0)).unwrap(), None);
    assert_eq!(r.stats().duplicates, 1);
}

#[test]
fn out_of_order_and_duplicates() {
    let cfg = FragmentConfig {
        mtu: 16,
        ..FragmentConfig::default()
    };
    let packet: Vec<u8> = (0..100u8).collect();
    let mut f = Fragmenter::new(cfg);
    let mut r = Reassembler::new(cfg);
    let mut d = f.split(&packet).unwrap();
    assert_eq!(d.len(), 10);
    d.reverse();
    let mut got = None;
    for (i, part) in d.iter().enumerate() {
        let copies = if i % 3 == 0 { 2 } else { 1 };
        for _ in 0..copies {
            if let Some(p) = r.handle(part, ms(1)).unwrap() {
                assert!(got.is_none(), "delivered twice");
                got = Some(p);
            }
        }
    }
    assert_eq!(got.unwrap(), packet);
    assert_eq!(r.buffered_bytes(), 0);
    assert_eq!(r.pile_count(), 0);
    // A late duplicate of a completed packet is ignored.
    assert_eq!(r.handle(&d[0], ms(2)).unwrap(), None);
    assert_eq!(r.pile_count(), 0);
}

#[test]
fn count_mismatch_discards_the_partial_packet() {
    let cfg = FragmentConfig {
        mtu: 16,
        ..FragmentConfig::default()
    };
    let mut r = Reassembler::new(cfg);
    let mut a = Vec::new();
    FragmentHeader {
        sequence: 7,
        index: 0,
        count: 3,
    }
    .write(&mut a);
    a.extend_from_slice(&[1; 10]);
    assert_eq!(r.handle(&a, ms(0)).unwrap(), None);
    let mut b = Vec::new();
    FragmentHeader {
        sequence: 7,
        index: 1,
        count: 4,
    }
    .write(&mut b);
    assert_eq!(r.handle(&b, ms(0)), Ok(None));
    assert_eq!(r.stats().conflicts, 1);
    assert_eq!(r.pile_count(), 1);
    assert_eq!(r.buffered_bytes(), PART_OVERHEAD);
    assert_eq!(
        r.handle(&[1, 2], ms(0)),
        Err(FragmentError::Truncated { len: 2 })
    );
}

#[test]
fn stale_piles_evicted_by_age_and_count() {
    let cfg = FragmentConfig {
        mtu: 16,
        max_piles: 2,
        ..FragmentConfig::default()
    };
    let mut f = Fragmenter::new(cfg);
    let mut r = Reassembler::new(cfg);
    let a = f.split(&[1; 30]).unwrap();
    let b = f.split(&[2; 30]).unwrap();
    let c = f.split(&[3; 30]).unwrap();
    r.handle(&a[0], ms(0)).unwrap();
    r.handle(&b[0], ms(10)).unwrap();
    r.handle(&c[0], ms(20)).unwrap();
    assert_eq!(r.pile_count(), 2);
    assert_eq!(r.stats().evicted_space, 1);
    r.handle_timeout(ms(1015));
    assert_eq!(r.pile_count(), 1);
    assert_eq!(r.stats().evicted_age, 1);
    r.handle_timeout(ms(5000));
    assert_eq!(r.pile_count(), 0);
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn sequence_wraps() {
    let cfg = FragmentConfig {
        mtu: 16,
        ..FragmentConfig::default()
    };
    let mut f = Fragmenter::new(cfg);
    let mut r = Reassembler::new(cfg);
    for n in 0..70_000u32 {
        let p = n.to_le_bytes().repeat(5);
        let d = f.split(&p).unwrap();
        let mut out = None;
        for part in d.iter().rev() {
            if let Some(x) = r.handle(part, ms(u64::from(n))).unwrap() {
                out = Some(x);
            }
        }
        assert_eq!(out.unwrap(), p);
    }
}

#[test]
fn paced_split_is_all_or_nothing() {
    use crate::TokenBucketConfig;
    let cfg = FragmentConfig::default(); // 1200-byte datagrams
    let mut f = Fragmenter::new(cfg);
    let mut bucket = TokenBucket::new(TokenBucketConfig {
        cir: 60_000,
        cbs: 3000,
        ebs: 1000,
        initial: 3000,
    });
    let packet = vec![1u8; 2500]; // 3 datagrams
    let wire = f.wire_bytes(packet.len(), 29);
    assert_eq!(wire, 2500 + 3 * (FRAGMENT_HEADER_LEN as u64 + 29));
    let Ok(Paced::Send { parts, conformance }) = f.split_paced(&packet, &mut bucket, ms(0), 29)
    else {
        panic!("first packet fits the committed burst");
    };
    assert_eq!((parts.len(), conformance), (3, Conformance::Green));
    // 3000 - 2608 = 392 tokens: the next one borrows, the third is held.
    let Ok(Paced::Send { conformance, .. }) =
        f.split_paced(&packet[..1000], &mut bucket, ms(0), 29)
    else {
        panic!("the second borrows from the excess");
    };
    assert_eq!(conformance, Conformance::Yellow);
    let before = bucket.tokens();
    assert_eq!(
        f.split_paced(&packet, &mut bucket, ms(0), 29),
        Ok(Paced::Held { wire_bytes: wire })
    );
    assert_eq!(bucket.tokens(), before);
    assert_eq!(f.next_sequence(), 2, "a held packet uses no sequence");
    // 60 ms later the rate has repaid it (3600 tokens, capped at CBS).
    assert!(matches!(
        f.split_paced(&packet, &mut bucket, ms(60), 29),
        Ok(Paced::Send { .. })
    ));
    // Too large is an error, not a hold.
    let huge = vec![0u8; cfg.max_packet_len() + 1];
    assert!(f.split_paced(&huge, &mut bucket, ms(60), 29).is_err());
}
