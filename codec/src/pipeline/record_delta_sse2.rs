//! A chunk of [`super::record_delta`] in one SSE2 register (x86_64),
//! through `safe_arch`'s safe wrappers of the intrinsics: the same word
//! arithmetic on both 64-bit halves at once, the sign of a lane's top byte
//! by a signed byte compare.

use safe_arch::{
    add_i8_m128i, bitand_m128i, bitandnot_m128i, bitor_m128i, bitxor_m128i, cmp_eq_mask_i8_m128i,
    cmp_lt_mask_i8_m128i, m128i, shl_imm_u16_m128i, shl_imm_u32_m128i, shl_imm_u64_m128i,
    shr_imm_i16_m128i, shr_imm_i32_m128i, shr_imm_u64_m128i, shuffle_ai_f32_all_m128i,
    sub_i16_m128i, sub_i32_m128i, sub_i64_m128i, sub_i8_m128i, zeroed_m128i,
};

use super::record_delta::Chunk;
use super::sse2::{load, store};
use crate::schema::{DeltaOp, Span};

/// The lanes of a chunk: all `Int`/`Predict` lanes of one width (their
/// delta is the zigzag of the lane-wise difference at that width, a few
/// instructions), or any mix (the masked word arithmetic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lanes {
    Zigzag1,
    Zigzag2,
    Zigzag4,
    Zigzag8,
    /// Bytes of `Sub` lanes.
    Sub,
    /// Bytes of `Xor` lanes.
    Xor,
    /// Bytes of `None` lanes.
    Copy,
    Mixed,
}

impl Lanes {
    /// The lanes of a chunk holding the one lane of `span` (a lane of
    /// width `span.width` for `Int`/`Predict`, of one byte for the other
    /// operators), at an offset from the chunk's start that is a multiple
    /// of its width.
    pub(super) fn of_lane(span: &Span) -> Self {
        match (span.op, span.width) {
            (DeltaOp::Int | DeltaOp::Predict, 1) => Self::Zigzag1,
            (DeltaOp::Int | DeltaOp::Predict, 2) => Self::Zigzag2,
            (DeltaOp::Int | DeltaOp::Predict, 4) => Self::Zigzag4,
            (DeltaOp::Int | DeltaOp::Predict, _) => Self::Zigzag8,
            (DeltaOp::Sub, _) => Self::Sub,
            (DeltaOp::Xor, _) => Self::Xor,
            (DeltaOp::None, _) => Self::Copy,
        }
    }

    /// The lanes of the chunk `k`.
    pub(super) fn of(k: &Chunk) -> Self {
        if k.n != [0; 2] || k.z != [u64::MAX; 2] {
            return Self::Mixed;
        }
        for (w, lanes) in [
            (1, Self::Zigzag1),
            (2, Self::Zigzag2),
            (4, Self::Zigzag4),
            (8, Self::Zigzag8),
        ] {
            // The top bit of every lane's top byte.
            let top =
                u64::from_le_bytes(core::array::from_fn(
                    |b| {
                        if b % w == w - 1 {
                            0x80
                        } else {
                            0
                        }
                    },
                ));
            if k.h == [top; 2] {
                return lanes;
            }
        }
        Self::Mixed
    }
}

/// The byte-wise difference of `c` and `r`.
#[inline(always)]
pub(super) fn sub1(c: m128i, r: m128i) -> m128i {
    sub_i8_m128i(c, r)
}

/// The byte-wise XOR of `c` and `r`.
#[inline(always)]
pub(super) fn xor1(c: m128i, r: m128i) -> m128i {
    bitxor_m128i(c, r)
}

/// `c` itself.
#[inline(always)]
pub(super) fn copy1(c: m128i, _: m128i) -> m128i {
    c
}

/// The zigzag of the byte-wise difference of `c` and `r`.
#[inline(always)]
pub(super) fn zigzag1(c: m128i, r: m128i) -> m128i {
    let d = sub_i8_m128i(c, r);
    bitxor_m128i(add_i8_m128i(d, d), cmp_lt_mask_i8_m128i(d, zeroed_m128i()))
}

/// The zigzag of the 16-bit lane-wise difference of `c` and `r`.
#[inline(always)]
pub(super) fn zigzag2(c: m128i, r: m128i) -> m128i {
    let d = sub_i16_m128i(c, r);
    bitxor_m128i(shl_imm_u16_m128i::<1>(d), shr_imm_i16_m128i::<15>(d))
}

/// The zigzag of the 32-bit lane-wise difference of `c` and `r`.
#[inline(always)]
pub(super) fn zigzag4(c: m128i, r: m128i) -> m128i {
    let d = sub_i32_m128i(c, r);
    bitxor_m128i(shl_imm_u32_m128i::<1>(d), shr_imm_i32_m128i::<31>(d))
}

/// The zigzag of the 64-bit lane-wise difference of `c` and `r` (the
/// sign of each lane's upper half copied to both halves).
#[inline(always)]
pub(super) fn zigzag8(c: m128i, r: m128i) -> m128i {
    let d = sub_i64_m128i(c, r);
    let sign = shuffle_ai_f32_all_m128i::<0b11_11_01_01>(shr_imm_i32_m128i::<31>(d));
    bitxor_m128i(shl_imm_u64_m128i::<1>(d), sign)
}

/// A chunk's masks in registers ([`super::record_delta::Chunk`]).
#[derive(Clone, Copy)]
pub(super) struct Masks {
    h: m128i,
    not_h: m128i,
    n: m128i,
    z: m128i,
    t: m128i,
    s1: m128i,
    s2: m128i,
    s4: m128i,
    /// The chunk's lanes.
    pub(super) lanes: Lanes,
}

impl Masks {
    #[inline(always)]
    pub(super) fn new(k: &Chunk) -> Self {
        let h = m128i::from(k.h);
        Self {
            h,
            not_h: bitxor_m128i(h, cmp_eq_mask_i8_m128i(h, h)),
            n: m128i::from(k.n),
            z: m128i::from(k.z),
            t: m128i::from(k.t),
            s1: m128i::from(k.s1),
            s2: m128i::from(k.s2),
            s4: m128i::from(k.s4),
            lanes: Lanes::of(k),
        }
    }

    /// The masks of `k` for lanes `lanes` instead of its own.
    pub(super) fn with_lanes(self, lanes: Lanes) -> Self {
        Self { lanes, ..self }
    }

    /// The delta of the chunk's sixteen record bytes `c` against `r`
    /// (bytes the chunk does not write are not meaningful).
    #[inline(always)]
    pub(super) fn delta(&self, c: m128i, r: m128i) -> m128i {
        let Self {
            h,
            not_h,
            n,
            z,
            t,
            s1,
            s2,
            s4,
            ..
        } = *self;
        let r = bitandnot_m128i(n, r);
        // `(c ^ !r) & h` as `!(c ^ r) & h`, and `r & !h`.
        let d = bitxor_m128i(
            sub_i64_m128i(bitor_m128i(c, h), bitand_m128i(r, not_h)),
            bitandnot_m128i(bitxor_m128i(c, r), h),
        );
        let mut m = bitand_m128i(cmp_lt_mask_i8_m128i(d, zeroed_m128i()), t);
        m = bitor_m128i(m, bitand_m128i(shr_imm_u64_m128i::<8>(m), s1));
        m = bitor_m128i(m, bitand_m128i(shr_imm_u64_m128i::<16>(m), s2));
        m = bitor_m128i(m, bitand_m128i(shr_imm_u64_m128i::<32>(m), s4));
        let zz = bitxor_m128i(shl_imm_u64_m128i::<1>(bitand_m128i(d, not_h)), m);
        bitxor_m128i(d, bitand_m128i(bitxor_m128i(zz, d), z))
    }
}

/// The rows of [`super::record_delta::DeltaPlan::delta_rows`] in the
/// bytes the chunk `k` writes (records of `rs` bytes), the chunk's masks
/// in registers over the rows.
#[inline(always)]
pub(super) fn rows(
    k: &Chunk,
    rs: usize,
    cur: &[u8],
    reference: &[u8],
    pairs: &[(u32, u32)],
    out: &mut [u8],
) {
    let masks = Masks::new(k);
    let args = (k, rs, cur, reference, pairs);
    match masks.lanes {
        Lanes::Zigzag1 => rows_by(args, out, zigzag1),
        Lanes::Zigzag2 => rows_by(args, out, zigzag2),
        Lanes::Zigzag4 => rows_by(args, out, zigzag4),
        Lanes::Zigzag8 => rows_by(args, out, zigzag8),
        Lanes::Sub => rows_by(args, out, sub1),
        Lanes::Xor => rows_by(args, out, xor1),
        Lanes::Copy => rows_by(args, out, copy1),
        Lanes::Mixed => rows_by(args, out, |c, r| masks.delta(c, r)),
    }
}

/// The chunk, record size, records of both sides and index pairs of
/// [`rows`].
type Rows<'a> = (&'a Chunk, usize, &'a [u8], &'a [u8], &'a [(u32, u32)]);

/// [`rows`] with `delta` the chunk's delta of sixteen record bytes.
#[inline(always)]
fn rows_by(
    (k, rs, cur, reference, pairs): Rows<'_>,
    out: &mut [u8],
    delta: impl Fn(m128i, m128i) -> m128i,
) {
    let w = m128i::from(k.w);
    let at = k.at;
    for (o, &(c, b)) in out.chunks_exact_mut(rs).zip(pairs) {
        let (c, b) = (c as usize * rs + at, b as usize * rs + at);
        let (Some(c), Some(r)) = (cur.get(c..c + 16), reference.get(b..b + 16)) else {
            continue;
        };
        let Some(o) = o.get_mut(at..at + 16) else {
            continue;
        };
        let mut v = delta(load(c, 0), load(r, 0));
        if k.partial {
            v = bitor_m128i(bitand_m128i(v, w), bitandnot_m128i(w, load(o, 0)));
        }
        store(o, 0, v);
    }
}
