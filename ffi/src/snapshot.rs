//! Snapshots: setting and reading sections as arrays of ids and packed
//! records.

// `#[no_mangle]` exports; pointers are dereferenced only through
// `boundary`, each call in an `unsafe` block stating the caller's contract.
#![allow(unsafe_code)]

use core::ffi::c_void;
use std::sync::Arc;

use tickpack::{Section, Snapshot};

use crate::boundary::{call, free, get, get_mut, new_handle, slice, HANDLE_OUT};
use crate::error::{Error, TpStatus};
use crate::out::{Out, OutBuf};
use crate::{TpSchema, TpSnapshot};

/// The section for `entity_type`, or an error naming the count.
fn section(snapshot: &Snapshot, entity_type: usize) -> Result<&Section, Error> {
    snapshot.sections().get(entity_type).ok_or_else(|| {
        Error::invalid(format_args!(
            "entity type {entity_type} is past the snapshot's {}",
            snapshot.sections().len()
        ))
    })
}

fn check_record_size(section: &Section, record_size: usize) -> Result<(), Error> {
    if section.record_size() != record_size {
        return Err(Error::invalid(format_args!(
            "record size {record_size} given, the schema's is {}",
            section.record_size()
        )));
    }
    Ok(())
}

/// Builds a section from `ids` and their records in any order: sorted by
/// id, duplicates refused.
fn sorted_section(ids: &[u32], records: &[u8], record_size: usize) -> Result<Section, Error> {
    if ids.windows(2).all(|w| w[0] < w[1]) {
        return Ok(Section::from_parts(
            ids.to_vec(),
            records.to_vec(),
            record_size,
        )?);
    }
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_unstable_by_key(|&i| ids[i]);
    if let Some(w) = order.windows(2).find(|w| ids[w[0]] == ids[w[1]]) {
        return Err(Error::invalid(format_args!(
            "entity id {} appears twice",
            ids[w[0]]
        )));
    }
    let mut sorted_records = Vec::with_capacity(records.len());
    for &i in &order {
        sorted_records.extend_from_slice(&records[i * record_size..(i + 1) * record_size]);
    }
    let sorted_ids = order.iter().map(|&i| ids[i]).collect();
    Ok(Section::from_parts(
        sorted_ids,
        sorted_records,
        record_size,
    )?)
}

/// Makes an empty snapshot (no entities) for `schema` in `*out`.
///
/// # Safety
/// `schema` is a live handle; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_snapshot_new(
    schema: *const TpSchema,
    out: *mut *mut TpSnapshot,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (schema, out) = unsafe { (get(schema)?, Out::new(out, HANDLE_OUT)?) };
        new_handle(out, Arc::new(Snapshot::new(schema)));
        Ok(())
    })
}

/// Replaces every quantised field of `snapshot` (a snapshot of `schema`)
/// by the value its code stands for, as `Schema::quantize` does: a server
/// with a quantised schema calls this on its world every tick before
/// `tp_server_begin_tick` or an encode, which refuse values that are not
/// quantised. Quantising twice changes nothing; a schema without
/// quantised fields leaves the snapshot as it is. On
/// `TP_STATUS_QUANTIZE` (a value that is not finite, outside a range
/// whose policy refuses it, or a quaternion of four zeros; the message
/// names entity type, entity id, field and element) the snapshot is
/// partly quantised.
///
/// # Safety
/// `schema` and `snapshot` are live handles.
#[no_mangle]
pub unsafe extern "C" fn tp_snapshot_quantize(
    schema: *const TpSchema,
    snapshot: *mut TpSnapshot,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let schema = unsafe { get(schema)? };
        // SAFETY: as above.
        let snapshot = Arc::make_mut(unsafe { get_mut(snapshot)? });
        snapshot.check(schema)?;
        schema.quantize(snapshot)?;
        Ok(())
    })
}

/// Frees a snapshot. Null is accepted and does nothing; a handle already
/// freed gives `TP_STATUS_WRONG_HANDLE`. A server that was given the
/// snapshot by `tp_server_begin_tick` keeps its own reference.
///
/// # Safety
/// `snapshot` is null or a handle of this library that no other call is using.
#[no_mangle]
pub unsafe extern "C" fn tp_snapshot_free(snapshot: *mut TpSnapshot) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { free(snapshot) })
}

/// Removes every entity of every entity type.
///
/// # Safety
/// `snapshot` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn tp_snapshot_clear(snapshot: *mut TpSnapshot) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let snapshot = Arc::make_mut(unsafe { get_mut(snapshot)? });
        for i in 0..snapshot.sections().len() {
            if let Some(s) = snapshot.section_mut(i) {
                *s = Section::new(s.record_size());
            }
        }
        Ok(())
    })
}

/// Replaces the entities of type `entity_type` with `count` entities: ids
/// `ids[0..count]` and their records, `count` packed records of
/// `record_size` bytes each at `records` (the bytes of an array of the
/// game's `#[repr(C)]`-style struct, little-endian, without padding).
/// Ids may come in any order but must be distinct. `record_size` must equal
/// the schema's record size for that type (`tp_schema_record_size`).
///
/// # Safety
/// `snapshot` is a live handle; when `count > 0`, `ids` is valid for reads
/// of `count` `uint32_t` and `records` for reads of `count * record_size`
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn tp_snapshot_set_section(
    snapshot: *mut TpSnapshot,
    entity_type: usize,
    ids: *const u32,
    records: *const c_void,
    count: usize,
    record_size: usize,
) -> TpStatus {
    call(|| {
        let bytes = count
            .checked_mul(record_size)
            .ok_or_else(|| Error::invalid("count * record_size overflows"))?;
        // SAFETY: forwarded from this function's contract.
        let (ids, records) = unsafe {
            (
                slice(ids, count, "ids")?,
                slice(records.cast::<u8>(), bytes, "records")?,
            )
        };
        // SAFETY: as above.
        let handle = unsafe { get_mut(snapshot)? };
        check_record_size(section(handle, entity_type)?, record_size)?;
        let new = sorted_section(ids, records, record_size)?;
        if let Some(s) = Arc::make_mut(handle).section_mut(entity_type) {
            *s = new;
        }
        Ok(())
    })
}

/// Writes the number of entities of type `entity_type` to `*count`.
///
/// # Safety
/// `snapshot` is a live handle; `count` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_snapshot_section_len(
    snapshot: *const TpSnapshot,
    entity_type: usize,
    count: *mut usize,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (snapshot, count) = unsafe { (get(snapshot)?, Out::new(count, "count")?) };
        count.write(section(snapshot, entity_type)?.len());
        Ok(())
    })
}

/// Copies the entities of type `entity_type`, in ascending id order, into
/// caller buffers with room for `capacity` entities: their ids into `ids`
/// and their packed records (`record_size` bytes each, which must be the
/// schema's) into `records`. Either buffer may be null to skip it. Writes
/// the number of entities to `*count`; if that exceeds `capacity`, nothing
/// is copied and the call returns `TP_STATUS_BUFFER_TOO_SMALL`.
///
/// # Safety
/// `snapshot` is a live handle; `count` is valid for a write; `ids` is null
/// or valid for writes of `capacity` `uint32_t`; `records` is null or valid
/// for writes of `capacity * record_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn tp_snapshot_get_section(
    snapshot: *const TpSnapshot,
    entity_type: usize,
    ids: *mut u32,
    records: *mut c_void,
    capacity: usize,
    record_size: usize,
    count: *mut usize,
) -> TpStatus {
    call(|| {
        // `capacity * record_size` cannot overflow where the caller's
        // buffer really has that many bytes; saturate for a lying caller.
        let record_capacity = capacity.saturating_mul(record_size);
        // Every pointer is checked before anything is written.
        // SAFETY: forwarded from this function's contract.
        let (snapshot, count, ids, records) = unsafe {
            (
                get(snapshot)?,
                Out::new(count, "count")?,
                OutBuf::optional(ids, capacity, "ids")?,
                OutBuf::optional(records.cast::<u8>(), record_capacity, "records")?,
            )
        };
        let s = section(snapshot, entity_type)?;
        check_record_size(s, record_size)?;
        count.write(s.len());
        if s.len() > capacity {
            return Err(Error::too_small("the section buffers", s.len(), capacity));
        }
        if let Some(ids) = ids {
            ids.fill(s.ids(), "ids")?;
        }
        if let Some(records) = records {
            records.fill(s.records(), "records")?;
        }
        Ok(())
    })
}

/// Writes to `*equal` whether two snapshots hold the same entities with the
/// same record bytes.
///
/// # Safety
/// `a` and `b` are live handles; `equal` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_snapshot_equal(
    a: *const TpSnapshot,
    b: *const TpSnapshot,
    equal: *mut bool,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (a, b, equal) = unsafe { (get(a)?, get(b)?, Out::new(equal, "equal")?) };
        equal.write(a == b);
        Ok(())
    })
}
