use super::*;
use crate::schema::{Field, Schema};

fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

const ONE: Spacing = Spacing { ahead: 1, back: 1 };

fn step(m: i64) -> f64 {
    core::f64::consts::FRAC_1_SQRT_2 / m as f64
}

/// A random quantised rotation and its canonical codes.
fn random_codes(next: &mut impl FnMut() -> f64, m: i64, ty: Primitive) -> (usize, [i64; 3]) {
    loop {
        let x = [next(), next(), next(), next()];
        if let Some(v) = quat::quantize(&x, m, step(m), ty) {
            if let Some(c) = quat::code_of(&v, m, step(m), ty) {
                return c;
            }
        }
    }
}

#[test]
fn own_layout_gives_the_codes_back() {
    let mut next = rng(0x9e37_79b9_7f4a_7c15);
    for (bits, ty) in [
        (4, Primitive::F32),
        (10, Primitive::F32),
        (20, Primitive::F64),
    ] {
        let m = (1i64 << (bits - 1)) - 1;
        for _ in 0..5_000 {
            let (k, q) = random_codes(&mut next, m, ty);
            assert_eq!(reexpress(k, q, k, m, step(m), ty), q, "{bits} {k} {q:?}");
        }
    }
}

#[test]
fn other_layouts_are_the_same_rotation_to_a_step() {
    let mut next = rng(0x2545_f491_4f6c_dd1d);
    for (bits, ty) in [(10, Primitive::F32), (20, Primitive::F64)] {
        let m = (1i64 << (bits - 1)) - 1;
        let s = step(m);
        for _ in 0..5_000 {
            let (kr, qr) = random_codes(&mut next, m, ty);
            let v = quat::value(kr, qr, s, ty);
            for k in 0..4 {
                let t = reexpress(kr, qr, k, m, s, ty);
                let sign = if v[k] < 0.0 { -1.0 } else { 1.0 };
                for (t, &i) in t.iter().zip(&OTHERS[k]) {
                    let want = sign * v[i] / s;
                    let err = (*t as f64 - want).abs();
                    assert!(err <= 0.5 + 1e-9, "{kr} {qr:?} -> {k}: {t} vs {want}");
                }
            }
        }
    }
}

/// A record of one smallest-three `f32` field in code form.
fn rec(k: i64, q: [i64; 3]) -> Vec<u8> {
    [k, q[0], q[1], q[2]]
        .iter()
        .flat_map(|c| (*c as i32).to_le_bytes())
        .collect()
}

fn schema(op: DeltaOp) -> Schema {
    Schema::builder()
        .entity("e")
        .field_with(Field {
            name: "r".into(),
            ty: Primitive::F32,
            len: 4,
            delta: Some(op),
        })
        .quantize(crate::quant::Quantize::smallest_three(10))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn section(rows: &[(u32, Vec<u8>)]) -> Section {
    let ids = rows.iter().map(|r| r.0).collect();
    let recs = rows.iter().flat_map(|r| r.1.clone()).collect();
    Section::from_parts(ids, recs, 16).unwrap_or_else(|_| Section::new(16))
}

#[test]
fn every_layout_change_codes_small_differences() {
    // A rotation about the axis between components `a` and `b`, just
    // before and just after they swap as the largest: the raw codes jump
    // by about `m`, the recoded ones by a few steps.
    let (m, ty) = (511i64, Primitive::F32);
    let s = step(m);
    let schema = schema(DeltaOp::Int);
    let t = &schema.sections()[0];
    for a in 0..4 {
        for b in 0..4 {
            if a == b {
                continue;
            }
            let quat_at = |x: f64| {
                let mut v = [0.1, -0.05, 0.08, 0.02];
                v[a] = x.cos();
                v[b] = -x.sin();
                let v = quat::quantize(&v, m, s, ty).unwrap_or([9.0; 4]);
                quat::code_of(&v, m, s, ty).unwrap_or((9, [0; 3]))
            };
            let angle = core::f64::consts::FRAC_PI_4;
            let (k0, q0) = quat_at(angle - 0.01);
            let (k1, q1) = quat_at(angle + 0.01);
            assert_eq!((k0, k1), (a, b));
            let base = section(&[(1, rec(k0 as i64, q0))]);
            let mut cur = section(&[(1, rec(k1 as i64, q1))]);
            recode(t, &base.as_ref(), None, ONE, &mut cur, false);
            let coded = read(cur.records(), 0, 4).unwrap_or([0; 4]);
            assert_eq!(coded[0], k1 as i64);
            let diff: i64 = (0..3)
                .map(|j| (coded[j + 1] - q0[j]).abs())
                .max()
                .unwrap_or(0);
            let raw: i64 = (0..3).map(|j| (q1[j] - q0[j]).abs()).max().unwrap_or(0);
            assert!(diff <= 12 && raw > 100, "{a}->{b}: {diff} (raw {raw})");
            recode(t, &base.as_ref(), None, ONE, &mut cur, true);
            assert_eq!(cur.records(), rec(k1 as i64, q1));
        }
    }
}

#[test]
fn recoding_is_undone_for_any_codes() {
    // Hostile codes (largest index out of range, codes at the integer
    // limits) come back bit for bit: recoding is a bijection either way.
    let mut next = rng(0x1234_5678_9abc_def1);
    let mut int = move || (next() * 2f64.powi(31)) as i64;
    let edge = [0, 1, -1, 511, -511, 4, -4, i32::MAX as i64, i32::MIN as i64];
    for op in [DeltaOp::Int, DeltaOp::Predict] {
        let schema = schema(op);
        let t = &schema.sections()[0];
        for i in 0..4_000 {
            let pick = |i: usize, r: i64| {
                if i.is_multiple_of(3) {
                    edge[r.unsigned_abs() as usize % edge.len()]
                } else {
                    r
                }
            };
            let k = |r: i64| r.rem_euclid(6) - 1;
            let b = rec(k(int()), [pick(i, int()), pick(i + 1, int()), int() % 600]);
            let c = rec(k(int()), [pick(i + 2, int()), int() % 600, pick(i, int())]);
            let base = section(&[(1, b.clone()), (2, b)]);
            let mut cur = section(&[(1, c.clone()), (3, c.clone())]);
            let p = rec(k(int()), [int(), pick(i + 1, int()), int() % 600]);
            let prior = section(&[(1, p)]);
            let (b1, sp) = (
                prior.as_ref(),
                Spacing {
                    ahead: 1 + (i % 5) as u16,
                    back: 1 + (i % 3) as u16,
                },
            );
            recode(t, &base.as_ref(), Some(&b1), sp, &mut cur, false);
            assert_eq!(&cur.records()[16..], &c[..], "entity 3 has no reference");
            recode(t, &base.as_ref(), Some(&b1), sp, &mut cur, true);
            assert_eq!(cur.records(), [c.clone(), c].concat());
        }
    }
}

#[test]
fn a_prior_in_another_layout_is_predicted_in_the_baselines() {
    // A steady turn about one axis through the swap of the two largest
    // components: prior before it, baseline after, the packet further on.
    let (m, ty) = (511i64, Primitive::F32);
    let s = step(m);
    let schema = schema(DeltaOp::Predict);
    let t = &schema.sections()[0];
    let at = |x: f64| {
        let v = quat::quantize(&[0.0, x.sin(), 0.0, x.cos()], m, s, ty).unwrap_or([9.0; 4]);
        quat::code_of(&v, m, s, ty).unwrap_or((9, [0; 3]))
    };
    let (d, x0) = (0.02, core::f64::consts::FRAC_PI_4);
    let (kp, qp) = at(x0 - 0.5 * d);
    let (kb, qb) = at(x0 + 0.5 * d);
    let (kc, qc) = at(x0 + 1.5 * d);
    assert_eq!((kp, kb, kc), (3, 1, 1));
    let b0 = section(&[(1, rec(kb as i64, qb))]);
    let b1 = section(&[(1, rec(kp as i64, qp))]);
    let mut out = Section::new(16);
    crate::pipeline::predict::predict_spaced(
        t,
        &b0.as_ref(),
        &b1.as_ref(),
        Spacing { ahead: 1, back: 1 },
        &mut out,
    );
    let p = read(out.records(), 0, 4).unwrap_or([0; 4]);
    assert_eq!(p[0], 1, "the baseline's layout");
    for j in 0..3 {
        assert!((p[j + 1] - qc[j]).abs() <= 2, "{p:?} vs {qc:?}");
    }
    // The linear prediction of the raw codes is far off.
    let linear = (0..3).map(|j| (2 * qb[j] - qp[j] - qc[j]).abs()).max();
    assert!(linear > Some(100));
}

#[test]
fn recoding_references_the_pipelines_prediction() {
    // The reference `recode` computes per entity is the pipeline's
    // predicted record, for every pair of largest indices and spacing.
    let (m, ty) = (511i64, Primitive::F32);
    let mut next = rng(0x5151_7a7a_0303_9999);
    let schema = schema(DeltaOp::Predict);
    let t = &schema.sections()[0];
    for i in 0..2_000 {
        let (kb, qb) = random_codes(&mut next, m, ty);
        let (kp, qp) = random_codes(&mut next, m, ty);
        let b0 = section(&[(1, rec(kb as i64, qb))]);
        let b1 = section(&[(1, rec(kp as i64, qp))]);
        let sp = Spacing {
            ahead: 1 + (i % 7) as u16,
            back: 1 + (i % 4) as u16,
        };
        let mut out = Section::new(16);
        crate::pipeline::predict::predict_spaced(t, &b0.as_ref(), &b1.as_ref(), sp, &mut out);
        let want = read(out.records(), 0, 4).unwrap_or([9; 4]);
        let got = predicted(
            read(b0.records(), 0, 4).unwrap_or([0; 4]),
            read(b1.records(), 0, 4).unwrap_or([0; 4]),
            sp,
            4,
            m,
            step(m),
            ty,
        );
        assert_eq!(got, want, "{kb} {qb:?} {kp} {qp:?} {sp:?}");
    }
}
