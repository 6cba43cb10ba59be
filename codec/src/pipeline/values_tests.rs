//! Tests of [`super`]: each value coded and decoded back, the encoder's
//! and decoder's one-step forms against the general ones.

use super::*;
use proptest::prelude::*;

/// The kind an element must be decoded as, before its kind bit (if any) is
/// read: `None` when the element has no kind bit. The reference of
/// [`FloatReference::kind`](super::FloatReference::kind).
fn kind_before_bit(e: Element, reference: &[u8]) -> Kind {
    if !e.float {
        return Kind::Int;
    }
    let r = usize::from(e.offset)..usize::from(e.offset) + usize::from(e.width);
    match whole(e, load(&reference[r])) {
        Some(_) => Kind::Bits,
        None => Kind::BitsOnly,
    }
}

/// Inverse of [`encode`](super::encode): writes element `e` of `out` from its kind and
/// value and the reference record. Refuses values wider than the element
/// and integral values outside the integral range. The reference of
/// [`decode_changed`](super::decode_changed) and [`decode_float_changed`](super::decode_float_changed).
fn decode(
    e: Element,
    kind: Kind,
    v: u64,
    reference: &[u8],
    out: &mut [u8],
) -> Result<(), BadValue> {
    let r = usize::from(e.offset)..usize::from(e.offset) + usize::from(e.width);
    let (b, o) = (&reference[r.clone()], &mut out[r]);
    let bv = load(b);
    if kind == Kind::Integral {
        let bi = whole(e, bv).ok_or(BadValue)?;
        let ci = bi.checked_add(unzigzag64(v)).ok_or(BadValue)?;
        let bits = from_whole(e, ci).ok_or(BadValue)?;
        // On a grid two step counts may round to one float: only the one
        // the encoder would send is accepted.
        if e.grid.is_some() && whole(e, bits) != Some(ci) {
            return Err(BadValue);
        }
        store(bits, o);
        return Ok(());
    }
    if v & !mask(e.width) != 0 {
        return Err(BadValue);
    }
    match e.op {
        DeltaOp::Int | DeltaOp::Predict => store(unzigzag_add(v, bv, e.width), o),
        DeltaOp::Sub => {
            for (i, (o, &b)) in o.iter_mut().zip(b).enumerate() {
                *o = ((v >> (8 * i)) as u8).wrapping_add(b);
            }
        }
        DeltaOp::Xor => store(v ^ bv, o),
        DeltaOp::None => store(v, o),
    }
    Ok(())
}

/// Whether elements `e` of `a` and `b` differ.
fn differs(e: Element, a: &[u8], b: &[u8]) -> bool {
    element(e, a) != element(e, b)
}

fn el(width: u8, op: DeltaOp, float: bool) -> Element {
    Element {
        offset: 0,
        width,
        op,
        float,
        grid: None,
    }
}

fn rt(e: Element, c: u64, b: u64) -> (Kind, u64) {
    let w = usize::from(e.width);
    let (cb, bb) = (&c.to_le_bytes()[..w], &b.to_le_bytes()[..w]);
    let (k, v) = encode(e, cb, bb);
    // The encoder's one-load form agrees.
    let changed = differs(e, cb, bb).then_some((k, v));
    assert_eq!(encode_changed(e, cb, bb), changed);
    // The decoder knows from the reference whether a kind bit follows.
    assert_eq!(kind_before_bit(e, bb).bit().is_some(), k.bit().is_some());
    if k.bit().is_none() {
        assert_eq!(kind_before_bit(e, bb), k);
    }
    let mut out = vec![0xaa; w];
    decode(e, k, v, bb, &mut out).unwrap();
    assert_eq!(out, cb);
    (k, v)
}

proptest! {
    #[test]
    fn inverse(w in prop_oneof![Just(1u8), Just(2), Just(4), Just(8)], op in 0usize..5, c: u64, b: u64, small: i16) {
        let op = [DeltaOp::Sub, DeltaOp::Xor, DeltaOp::Int, DeltaOp::None, DeltaOp::Predict][op];
        let m = mask(w);
        rt(el(w, op, false), c & m, b & m);
        if w >= 4 && matches!(op, DeltaOp::Int | DeltaOp::Predict) {
            rt(el(w, op, true), c & m, b & m);
            // Whole numbers near each other.
            let (x, y) = (f64::from(small), f64::from(small) + 3.0);
            let (xb, yb) = if w == 4 {
                (u64::from((x as f32).to_bits()), u64::from((y as f32).to_bits()))
            } else {
                (x.to_bits(), y.to_bits())
            };
            prop_assert_eq!(rt(el(w, op, true), yb, xb), (Kind::Integral, 6));
        }
    }
}

proptest! {
    #[test]
    fn decode_changed_matches_decode(w in prop_oneof![Just(1u8), Just(2), Just(4), Just(8)], op in 0usize..5, v: u64, b: u64, at in 0usize..20, extra in 0usize..13, small in 0u64..4) {
        // An element anywhere in a record of `w` to `w + 12` bytes: with
        // eight bytes from its offset, with eight bytes before its end,
        // or in a record shorter than eight bytes.
        let op = [DeltaOp::Sub, DeltaOp::Xor, DeltaOp::Int, DeltaOp::None, DeltaOp::Predict][op];
        let len = usize::from(w) + extra;
        let at = at % (extra + 1);
        let e = Element { offset: at as u16, ..el(w, op, false) };
        let reference: Vec<u8> = (0..len as u64).map(|i| (b >> (i % 8 * 8)) as u8 ^ i as u8).collect();
        // Small values (0 among them), values of the element's width,
        // and values too wide for it.
        for v in [small, v & mask(w), v] {
            let (mut want, mut got) = (vec![0x5a; len], vec![0x5a; len]);
            let expected = decode(e, Kind::Int, v, &reference, &mut want)
                .and_then(|()| if differs(e, &want, &reference) { Ok(()) } else { Err(BadValue) });
            let result = decode_changed(e, v, &reference, &mut got);
            prop_assert_eq!(result, expected);
            if result.is_ok() {
                prop_assert_eq!(&got, &want);
            }
        }
    }
}

#[test]
fn float_kinds() {
    let e = el(4, DeltaOp::Int, true);
    let f = |x: f32| u64::from(x.to_bits());
    assert_eq!(rt(e, f(1010.0), f(1000.0)), (Kind::Integral, 20));
    assert_eq!(rt(e, f(-3.0), f(2.0)), (Kind::Integral, 9));
    assert_eq!(rt(e, f(0.5), f(1000.0)).0, Kind::Bits);
    assert_eq!(rt(e, f(-0.0), f(0.0)).0, Kind::Bits);
    assert_eq!(rt(e, f(0.0), f(-0.0)).0, Kind::BitsOnly);
    assert_eq!(rt(e, f(f32::NAN), f(1.0)).0, Kind::Bits);
    assert_eq!(rt(e, f(2.0), f(33_554_432.0)).0, Kind::BitsOnly);
    assert_eq!(rt(e, f(16_777_216.0), f(0.0)), (Kind::Integral, 1 << 25));
    let mut o = [0; 4];
    let b = 16_777_216f32.to_bits().to_le_bytes();
    assert_eq!(decode(e, Kind::Integral, 2, &b, &mut o), Err(BadValue));
    assert_eq!(
        decode(e, Kind::Integral, 0, &[0, 0, 0xc0, 0x7f], &mut o),
        Err(BadValue)
    );
    assert_eq!(decode(e, Kind::Bits, 1 << 32, &b, &mut o), Err(BadValue));
}

proptest! {
    #[test]
    fn integral_matches_float_arithmetic(x: f32, y: f64, k in -20_000_000i64..20_000_000) {
        let reference32 = |x: f32| (x.is_finite() && x.trunc() == x && x.abs() <= 16_777_216.0
            && x.to_bits() != 0x8000_0000).then_some(x as i64);
        let reference64 = |x: f64| (x.is_finite() && x.trunc() == x && x.abs() <= 9_007_199_254_740_992.0
            && x.to_bits() != 0x8000_0000_0000_0000).then_some(x as i64);
        for v in [x, k as f32, (k as f32) + 0.5, -0.0, 0.0, f32::INFINITY, f32::NAN] {
            prop_assert_eq!(integral(u64::from(v.to_bits()), 4), reference32(v), "{}", v);
        }
        for v in [y, k as f64, (k as f64) * 1e9, (k as f64) + 0.25, -0.0] {
            prop_assert_eq!(integral(v.to_bits(), 8), reference64(v), "{}", v);
        }
    }
}

#[test]
fn integer_zigzag() {
    assert_eq!(
        rt(el(4, DeltaOp::Int, false), (-3i32) as u32 as u64, 0),
        (Kind::Int, 5)
    );
    assert_eq!(rt(el(1, DeltaOp::Int, false), 0, 255), (Kind::Int, 2));
    assert_eq!(rt(el(8, DeltaOp::Int, false), 0, 1), (Kind::Int, 1));
    assert_eq!(
        rt(el(2, DeltaOp::Sub, false), 0x0100, 0x00ff),
        (Kind::Int, 0x0101)
    );
}

fn grid(width: u8, step: f64) -> Element {
    Element {
        grid: Some(step.to_bits()),
        ..el(width, DeltaOp::Int, true)
    }
}

proptest! {
    #[test]
    fn grid_values_round_trip_bit_exactly(ka in -70_000i64..70_000, kb in -70_000i64..70_000, noise: u32, step_at in 0usize..3) {
        let step = [360.0 / 65536.0, 0.1, 0.125][step_at];
        let e = grid(4, step);
        let on = |k: i64| u64::from(((k as f64 * step) as f32).to_bits());
        // Both on the grid: whole steps, the difference of the counts.
        let (k, v) = rt(e, on(ka), on(kb));
        if on(ka) != on(kb) && whole(e, on(ka)) == Some(ka) && whole(e, on(kb)) == Some(kb) {
            prop_assert_eq!(k, Kind::Integral);
            prop_assert_eq!(v, zigzag64(ka - kb));
        }
        // Off the grid (any bits, NaN included): bit-exact as without one.
        rt(e, u64::from(noise), on(kb));
        rt(e, on(ka), u64::from(noise));
        let e64 = grid(8, step);
        rt(e64, (ka as f64 * step).to_bits(), (kb as f64 * step).to_bits());
        rt(e64, u64::from(noise) << 20, (kb as f64 * step).to_bits());
    }
}

#[test]
fn angle_steps_cost_a_few_bits() {
    // 90.0 and 90.0 + 3 steps of 360/65536 degrees.
    let e = grid(4, 360.0 / 65536.0);
    let a = u64::from(90.0f32.to_bits());
    let b = u64::from((((16384 + 3) as f64 * (360.0 / 65536.0)) as f32).to_bits());
    assert_eq!(rt(e, b, a), (Kind::Integral, zigzag64(3)));
    // Without the grid, 90.0 is integral and the other is not: bits.
    assert_eq!(rt(el(4, DeltaOp::Int, true), b, a).0, Kind::Bits);
    // -0.0 is never on a grid.
    let neg_zero = u64::from((-0.0f32).to_bits());
    assert_eq!(whole(e, neg_zero), None);
    assert_eq!(rt(e, neg_zero, a).0, Kind::Bits);
}

#[test]
fn non_canonical_step_counts_are_rejected() {
    // With a step below f32 precision near 2^24 · step, neighbouring
    // counts round to one float; only the count `whole` finds decodes.
    let e = grid(4, 1e-3);
    let mut out = [0u8; 4];
    let mut rejected = 0;
    for k in (1i64 << 24) - 200..1 << 24 {
        let Some(r) = from_whole(e, k).filter(|&r| whole(e, r) == Some(k)) else {
            continue;
        };
        let Some(bits) = from_whole(e, k + 1) else {
            continue;
        };
        let got = decode(
            e,
            Kind::Integral,
            zigzag64(1),
            &r.to_le_bytes()[..4],
            &mut out,
        );
        if whole(e, bits) == Some(k + 1) {
            assert_eq!(got, Ok(()));
        } else {
            assert_eq!(got, Err(BadValue));
            rejected += 1;
        }
    }
    assert!(rejected > 0);
}

proptest! {
    #[test]
    fn encode_changed_matches_encode_anywhere(w in prop_oneof![Just(1u8), Just(2), Just(4), Just(8)], op in 0usize..5, float: bool, c: u64, b: u64, at in 0usize..20, extra in 0usize..13, same: bool) {
        // An element anywhere in a record of `w` to `w + 12` bytes, as in
        // `decode_changed_matches_decode`; the bytes around it differ.
        let op = [DeltaOp::Sub, DeltaOp::Xor, DeltaOp::Int, DeltaOp::None, DeltaOp::Predict][op];
        let float = float && w >= 4 && matches!(op, DeltaOp::Int | DeltaOp::Predict);
        let len = usize::from(w) + extra;
        let at = at % (extra + 1);
        let e = Element { offset: at as u16, ..el(w, op, float) };
        let cur: Vec<u8> = (0..len as u64).map(|i| (c >> (i % 8 * 8)) as u8 ^ i as u8).collect();
        let mut reference: Vec<u8> = (0..len as u64).map(|i| (b >> (i % 8 * 8)) as u8 ^ 0x33).collect();
        if same {
            let r = at..at + usize::from(w);
            reference[r.clone()].copy_from_slice(&cur[r]);
        }
        let want = differs(e, &cur, &reference).then(|| encode(e, &cur, &reference));
        prop_assert_eq!(encode_changed(e, &cur, &reference), want);
    }
}

proptest! {
    #[test]
    fn decode_float_changed_matches_decode(w in prop_oneof![Just(4u8), Just(8)], predict: bool, grid_on: bool, v: u64, b: u64, at in 0usize..20, extra in 0usize..13, small in 0u64..4, whole_ref in -40i32..40, bits_ref: bool) {
        // A float element anywhere in a record, as in
        // `decode_changed_matches_decode`, against references that are
        // whole (a kind bit) or not, with and without a grid.
        let op = if predict { DeltaOp::Predict } else { DeltaOp::Int };
        let len = usize::from(w) + extra;
        let at = at % (extra + 1);
        let e = Element {
            offset: at as u16,
            grid: grid_on.then(|| 0.25f64.to_bits()),
            ..el(w, op, true)
        };
        let mut reference: Vec<u8> = (0..len as u64).map(|i| (b >> (i % 8 * 8)) as u8 ^ i as u8).collect();
        if !bits_ref {
            let x = f64::from(whole_ref) * 0.25;
            let bytes = if w == 4 { u64::from((x as f32).to_bits()) } else { x.to_bits() };
            reference[at..at + usize::from(w)].copy_from_slice(&bytes.to_le_bytes()[..usize::from(w)]);
        }
        let r = FloatReference::new(e, &reference);
        prop_assert_eq!(r.kind(), kind_before_bit(e, &reference));
        for v in [small, v & mask(w), v, v & 0xff] {
            for integral in [false, true] {
                let kind = match (integral, r.kind()) {
                    (true, _) => Kind::Integral,
                    (false, k) => k,
                };
                let (mut want, mut got) = (vec![0x5a; len], vec![0x5a; len]);
                let expected = decode(e, kind, v, &reference, &mut want)
                    .and_then(|()| if differs(e, &want, &reference) { Ok(()) } else { Err(BadValue) });
                let result = decode_float_changed(e, r, integral, v, &mut got);
                prop_assert_eq!(result, expected);
                if result.is_ok() {
                    prop_assert_eq!(&got, &want);
                }
            }
        }
    }
}

proptest! {
    #[test]
    fn encode_changed_of_f32_matches_encode(c_whole in -(1i32 << 25)..(1 << 25), r_whole in -(1i32 << 25)..(1 << 25), c_bits: u32, r_bits: u32, pick in 0u8..4, at in 0usize..9, extra in 0usize..9, predict: bool) {
        // The `f32` fast path against the general one, with both sides whole
        // (inside and outside the integral range), either side a bit
        // pattern, or equal, anywhere in a record.
        let op = if predict { DeltaOp::Predict } else { DeltaOp::Int };
        let (c, r) = match pick {
            0 => ((c_whole as f32).to_bits(), (r_whole as f32).to_bits()),
            1 => ((c_whole as f32).to_bits(), r_bits),
            2 => (c_bits, (r_whole as f32).to_bits()),
            _ => (c_bits, c_bits),
        };
        let len = 4 + extra;
        let at = at % (extra + 1);
        let e = Element { offset: at as u16, ..el(4, op, true) };
        let (mut cur, mut reference) = (vec![0x5au8; len], vec![0xa5u8; len]);
        cur[at..at + 4].copy_from_slice(&c.to_le_bytes());
        reference[at..at + 4].copy_from_slice(&r.to_le_bytes());
        let want = differs(e, &cur, &reference).then(|| encode(e, &cur, &reference));
        prop_assert_eq!(encode_changed(e, &cur, &reference), want);
    }
}

proptest! {
    #[test]
    fn decode_f32_changed_matches_the_general_path(predict: bool, v: u64, b: u32, at in 0usize..9, extra in 0usize..9, small in 0u64..4, whole_ref in -(1i32 << 25)..(1 << 25), bits_ref: bool, integral: bool) {
        // The `f32` fast path against FloatReference and
        // decode_float_changed: the same kind asked for, the same values
        // refused, the same record written.
        let op = if predict { DeltaOp::Predict } else { DeltaOp::Int };
        let len = 4 + extra;
        let at = at % (extra + 1);
        let e = Element { offset: at as u16, ..el(4, op, true) };
        let r_bits = if bits_ref { b } else { (whole_ref as f32).to_bits() };
        let mut reference = vec![0xa5u8; len];
        reference[at..at + 4].copy_from_slice(&r_bits.to_le_bytes());
        let r = FloatReference::new(e, &reference);
        for v in [small, v & 0xffff_ffff, v, v & 0xff, v & 0x1ff_ffff] {
            let (mut want, mut got) = (vec![0x5a; len], vec![0x5a; len]);
            let integral = integral && r.kind() == Kind::Bits;
            let expected = decode_float_changed(e, r, integral, v, &mut want);
            let fast = f32_reference(at, &reference);
            prop_assert_eq!(fast.map(|f| f.1.is_some()), Some(r.kind() == Kind::Bits));
            let result = fast.map(|f| decode_f32_changed(at, f, integral, v, &mut got));
            prop_assert_eq!(result, Some(expected));
            prop_assert_eq!(&got, &want);
        }
    }
}

proptest! {
    /// `same_at` is the slice compare it replaces, in and out of range.
    #[test]
    fn same_at_matches_the_slice_compare(
        a in proptest::collection::vec(0u8..3, 0..20),
        b in proptest::collection::vec(0u8..3, 0..20),
        at in 0usize..20,
        width in 0usize..10,
    ) {
        let r = at..at + width;
        prop_assert_eq!(same_at(&a, &b, r.clone()), a.get(r.clone()) == b.get(r));
    }
}

/// The reference of [`integral`]: the whole number an integral float holds,
/// from the bit pattern alone (no float arithmetic): `mant_bits` mantissa bits,
/// exponent bias `bias`, integral range `2^max_pow`.
fn integral_bits(bits: u64, mant_bits: u32, exp_mask: u64, bias: i64, max_pow: i64) -> Option<i64> {
    let sign = bits >> (mant_bits + exp_mask.count_ones());
    let exp = ((bits >> mant_bits) & exp_mask) as i64 - bias;
    let mant = bits & ((1u64 << mant_bits) - 1);
    if exp < 0 {
        // |x| < 1: whole only as +0.0 (-0.0 is excluded).
        return (bits == 0).then_some(0);
    }
    if exp > max_pow || (exp == max_pow && mant != 0) {
        return None;
    }
    let frac_bits = i64::from(mant_bits) - exp;
    if frac_bits > 0 && mant & ((1u64 << frac_bits) - 1) != 0 {
        return None;
    }
    let m = mant | (1u64 << mant_bits);
    let whole = if frac_bits >= 0 {
        m >> frac_bits
    } else {
        m << -frac_bits
    } as i64;
    Some(if sign == 1 { -whole } else { whole })
}

#[test]
fn integral_matches_the_bit_pattern_reference() {
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut specials: Vec<u64> = [
        0.0f64,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2f64.powi(53),
        -(2f64.powi(53)),
        2f64.powi(54),
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e300,
        f64::MIN_POSITIVE / 4.0,
    ]
    .iter()
    .map(|f| f.to_bits())
    .collect();
    specials.extend(
        [
            0.0f32,
            -0.0,
            1.0,
            -3.0,
            0.25,
            16_777_216.0,
            -16_777_216.0,
            33_554_432.0,
            f32::NAN,
            f32::INFINITY,
            1e-40,
            7.5,
        ]
        .iter()
        .map(|f| u64::from(f.to_bits())),
    );
    for i in 0..200_000usize {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Whole numbers too, which random patterns rarely are.
        let w = (x >> 38) as i64 - (1 << 25);
        let pats = [x, u64::from((w as f32).to_bits()), (w as f64).to_bits()];
        for bits in pats.into_iter().chain(specials.get(i).copied()) {
            let f32_ref = integral_bits(bits & 0xffff_ffff, 23, 0xff, 127, 24);
            assert_eq!(integral(bits, 4), f32_ref, "{bits:#x}");
            let f64_ref = integral_bits(bits, 52, 0x7ff, 1023, 53);
            assert_eq!(integral(bits, 8), f64_ref, "{bits:#x}");
        }
    }
}
