//! Encoders, decoders and packet headers.

// `#[no_mangle]` exports; pointers are dereferenced only through
// `boundary`, each call in an `unsafe` block stating the caller's contract.
#![allow(unsafe_code)]

use std::sync::Arc;

use crate::adapter::{self, Encoder};
use crate::boundary::{
    call, disjoint, free, get, get_mut, new_handle, read_or_default, slice, HANDLE_OUT,
};
use crate::error::TpStatus;
use crate::out::{copy_out, write_opt, Out, OutBuf};
use crate::{TpDecoder, TpDictSet, TpEncoder, TpSchema, TpSnapshot};

/// The default zstd level.
pub const TP_DEFAULT_LEVEL: i32 = 3;
// A literal above so that cbindgen can write it into the header.
const _: () = assert!(TP_DEFAULT_LEVEL == tickpack::DEFAULT_LEVEL);

/// Bounds on what one packet may hold. The encoder refuses to exceed them
/// and the decoder refuses packets that do, before allocating; give both
/// sides the same.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpLimits {
    /// Most entities of one type (default 65,536).
    pub max_entities_per_section: usize,
    /// Most bytes one packet may decompress to (default 256 KiB).
    pub max_decoded_bytes: usize,
    /// Most bytes one decoded snapshot may hold, counted as entities times
    /// (record size + 4) over all entity types (default 1 MiB); a session
    /// client keeps at most its `history` times this.
    pub max_snapshot_bytes: usize,
}

impl Default for TpLimits {
    fn default() -> Self {
        adapter::default_limits()
    }
}

/// An encoder and the buffer its packets are built in before they are
/// copied to the caller.
pub(crate) struct EncoderState {
    encoder: Encoder,
    packet: Vec<u8>,
}

/// What a packet header says.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TpPacketInfo {
    /// The packet's sequence.
    pub sequence: u16,
    /// Whether the packet is a delta against a baseline (else a full
    /// snapshot).
    pub has_baseline: bool,
    /// The baseline's sequence, when `has_baseline`.
    pub baseline: u16,
    /// Whether the packet also names a prior (older) baseline for
    /// predicted fields; only the session layer makes such packets.
    pub has_prior: bool,
    /// The prior's sequence, when `has_prior`.
    pub prior: u16,
    /// Whether the blocks were compressed with a dictionary (the one
    /// `dictionary_id` names, else the one agreed for the packet's kind).
    pub uses_dictionary: bool,
    /// Whether the packet carries the schema and dictionary ids (keyframes
    /// do, deltas never).
    pub has_ids: bool,
    /// Id of the schema the packet was encoded with, when `has_ids`.
    pub schema_id: u32,
    /// Whether the packet names its dictionary (only with `has_ids`).
    pub has_dictionary_id: bool,
    /// That dictionary's id, when `has_dictionary_id`.
    pub dictionary_id: u32,
}

/// Makes an encoder for `schema` at zstd level `level` (`TP_DEFAULT_LEVEL`
/// is a good start; 1..=22, negative is faster), without dictionary.
///
/// # Safety
/// `schema` is a live handle; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_encoder_new(
    schema: *const TpSchema,
    level: i32,
    out: *mut *mut TpEncoder,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(out, HANDLE_OUT)? };
        // SAFETY: as above.
        let schema = unsafe { get(schema)? };
        let encoder = Encoder::new(schema.clone(), level);
        let state = EncoderState {
            encoder,
            packet: Vec::new(),
        };
        new_handle(out, state);
        Ok(())
    })
}

/// Makes an encoder using dictionary set `set`: its schema (snapshots must
/// be made from `tp_dictset_schema`), its keyframe dictionary for full
/// snapshots and its delta dictionary for deltas.
///
/// # Safety
/// `set` is a live handle; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_encoder_from_dictset(
    set: *const TpDictSet,
    level: i32,
    out: *mut *mut TpEncoder,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(out, HANDLE_OUT)? };
        // SAFETY: as above.
        let set = unsafe { get(set)? };
        let state = EncoderState {
            encoder: Encoder::from_set(set, level)?,
            packet: Vec::new(),
        };
        new_handle(out, state);
        Ok(())
    })
}

/// Frees an encoder. Null is accepted and does nothing; a handle already
/// freed gives `TP_STATUS_WRONG_HANDLE`.
///
/// # Safety
/// `encoder` is null or a handle of this library that no other call is using.
#[no_mangle]
pub unsafe extern "C" fn tp_encoder_free(encoder: *mut TpEncoder) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { free(encoder) })
}

/// Turns the 16-bit snapshot checksum in every packet on (`on` not 0) or
/// off (`on` 0; the default). Costs 2 bytes, lets the receiver detect a
/// wrong reconstruction.
///
/// # Safety
/// `encoder` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn tp_encoder_set_checksum(encoder: *mut TpEncoder, on: u8) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        unsafe { get_mut(encoder)? }
            .encoder
            .set_checksum(adapter::flag(on));
        Ok(())
    })
}

/// Writes the default limits to `*limits`.
///
/// # Safety
/// `limits` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_limits_default(limits: *mut TpLimits) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        unsafe { Out::new(limits, "limits")? }.write(TpLimits::default());
        Ok(())
    })
}

/// Sets the encoder's limits (null: the defaults).
///
/// # Safety
/// `encoder` is a live handle; `limits` is null or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn tp_encoder_set_limits(
    encoder: *mut TpEncoder,
    limits: *const TpLimits,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (state, limits) = unsafe { (get_mut(encoder)?, read_or_default(limits, "limits")?) };
        state.encoder.set_limits(limits);
        Ok(())
    })
}

/// Writes to `*size` an upper bound on the packet size for `snapshot`
/// against `baseline` (null for a full snapshot): a buffer this large never
/// gets `TP_STATUS_BUFFER_TOO_SMALL` from `tp_encoder_encode`.
///
/// # Safety
/// `encoder` and `snapshot` are live handles, `baseline` is null or one;
/// `size` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_encoder_max_size(
    encoder: *mut TpEncoder,
    snapshot: *const TpSnapshot,
    baseline: *const TpSnapshot,
    size: *mut usize,
) -> TpStatus {
    call(|| {
        disjoint(encoder, &[snapshot.cast(), baseline.cast()])?;
        // SAFETY: forwarded from this function's contract.
        let size = unsafe { Out::new(size, "size")? };
        // SAFETY: as above; the encoder is not among the other arguments.
        let (state, snapshot) = unsafe { (get_mut(encoder)?, get(snapshot)?) };
        let base = if baseline.is_null() {
            None
        } else {
            // SAFETY: as above; non-null.
            Some((0, &**unsafe { get(baseline)? }))
        };
        size.write(state.encoder.max_encoded_len(snapshot, base));
        Ok(())
    })
}

/// Encodes `snapshot` as packet number `sequence` into `out` (room for
/// `capacity` bytes) and writes the packet's length to `*written`.
/// With `baseline` non-null the packet is a delta against that snapshot,
/// which the receiver holds as packet `baseline_sequence` (1..=32767
/// sequences older); with null it is a full snapshot. When `capacity` is
/// too small, `*written` gets the size needed and the call returns
/// `TP_STATUS_BUFFER_TOO_SMALL`.
///
/// # Safety
/// `encoder` and `snapshot` are live handles, `baseline` is null or one;
/// `out` is valid for writes of `capacity` bytes; `written` is valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn tp_encoder_encode(
    encoder: *mut TpEncoder,
    snapshot: *const TpSnapshot,
    sequence: u16,
    baseline: *const TpSnapshot,
    baseline_sequence: u16,
    out: *mut u8,
    capacity: usize,
    written: *mut usize,
) -> TpStatus {
    call(|| {
        disjoint(encoder, &[snapshot.cast(), baseline.cast()])?;
        // SAFETY: forwarded from this function's contract.
        let (out, written) = unsafe {
            (
                OutBuf::new(out, capacity, "out")?,
                Out::new(written, "written")?,
            )
        };
        // SAFETY: as above; the encoder is not among the other arguments.
        let (state, snapshot) = unsafe { (get_mut(encoder)?, get(snapshot)?) };
        let base = if baseline.is_null() {
            None
        } else {
            // SAFETY: as above; non-null.
            Some((baseline_sequence, &**unsafe { get(baseline)? }))
        };
        state
            .encoder
            .encode(snapshot, sequence, base, &mut state.packet)?;
        copy_out(out, &state.packet, written, "out")
    })
}

/// Makes a decoder for `schema`, without dictionaries.
///
/// # Safety
/// `schema` is a live handle; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_decoder_new(
    schema: *const TpSchema,
    out: *mut *mut TpDecoder,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(out, HANDLE_OUT)? };
        // SAFETY: as above.
        let schema = unsafe { get(schema)? };
        new_handle(out, adapter::decoder(schema.clone()));
        Ok(())
    })
}

/// Makes a decoder with `set`'s schema holding all its dictionaries.
///
/// # Safety
/// `set` is a live handle; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_decoder_from_dictset(
    set: *const TpDictSet,
    out: *mut *mut TpDecoder,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(out, HANDLE_OUT)? };
        // SAFETY: as above.
        let set = unsafe { get(set)? };
        new_handle(out, adapter::decoder_from_set(set)?);
        Ok(())
    })
}

/// Sets the decoder's limits (null: the defaults): packets beyond them
/// are refused with `TP_STATUS_DECODE` before anything is allocated.
///
/// # Safety
/// `decoder` is a live handle; `limits` is null or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn tp_decoder_set_limits(
    decoder: *mut TpDecoder,
    limits: *const TpLimits,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (decoder, limits) = unsafe { (get_mut(decoder)?, read_or_default(limits, "limits")?) };
        adapter::set_decoder_limits(decoder, limits);
        Ok(())
    })
}

/// Frees a decoder. Null is accepted and does nothing; a handle already
/// freed gives `TP_STATUS_WRONG_HANDLE`.
///
/// # Safety
/// `decoder` is null or a handle of this library that no other call is using.
#[no_mangle]
pub unsafe extern "C" fn tp_decoder_free(decoder: *mut TpDecoder) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { free(decoder) })
}

/// Decodes `len` bytes of `packet` into `out`, replacing its contents. A
/// delta packet needs the baseline it names (`tp_packet_info` tells which):
/// pass that snapshot as `baseline` and its sequence as
/// `baseline_sequence`; for a full snapshot pass null. Writes the header to
/// `*info` unless `info` is null. Malformed input gives `TP_STATUS_DECODE`
/// and leaves `out` empty; it never reads past `len` bytes nor allocates
/// beyond the decoder's limits.
///
/// # Safety
/// `decoder` and `out` are live handles, `baseline` is null or one;
/// `packet` is valid for reads of `len` bytes; `info` is null or valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn tp_decoder_decode(
    decoder: *mut TpDecoder,
    packet: *const u8,
    len: usize,
    baseline: *const TpSnapshot,
    baseline_sequence: u16,
    out: *mut TpSnapshot,
    info: *mut TpPacketInfo,
) -> TpStatus {
    call(|| {
        disjoint(decoder, &[baseline.cast(), out.cast_const().cast()])?;
        disjoint(out, &[baseline.cast()])?;
        // Checked before `out` is overwritten, so a call that fails on its
        // arguments changes nothing.
        // SAFETY: forwarded from this function's contract.
        let info = unsafe { Out::optional(info, "info")? };
        // SAFETY: as above; the two handles borrowed mutably are none of
        // the other handle arguments.
        let (decoder, packet, out) = unsafe {
            (
                get_mut(decoder)?,
                slice(packet, len, "packet")?,
                get_mut(out)?,
            )
        };
        let base = if baseline.is_null() {
            None
        } else {
            // SAFETY: as above; non-null.
            Some((baseline_sequence, &**unsafe { get(baseline)? }))
        };
        let header = adapter::decode(decoder, packet, base, Arc::make_mut(out))?;
        write_opt(info, header);
        Ok(())
    })
}

/// Reads the header of `len` bytes of `packet` into `*info` without
/// decoding the rest: which baseline the packet needs, its sequence, its
/// schema and dictionary ids.
///
/// # Safety
/// `packet` is valid for reads of `len` bytes; `info` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_packet_info(
    packet: *const u8,
    len: usize,
    info: *mut TpPacketInfo,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (packet, info) = unsafe { (slice(packet, len, "packet")?, Out::new(info, "info")?) };
        info.write(adapter::packet_info(packet)?);
        Ok(())
    })
}
