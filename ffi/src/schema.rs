//! Schemas and dictionary sets.

// `#[no_mangle]` exports; pointers are dereferenced only through
// `boundary`, each call in an `unsafe` block stating the caller's contract.
#![allow(unsafe_code)]

use tickpack::Schema;

use crate::adapter;
use crate::boundary::{call, free, get, new_handle, text, HANDLE_OUT};
use crate::error::{Error, TpStatus};
use crate::out::Out;
use crate::{TpDictSet, TpSchema};

/// Parses the text at `text_ptr` with `parse` into a new handle in `*out`.
///
/// # Safety
/// `text_ptr` is null or valid for reads of `len` bytes; `out` is null or
/// valid for a write.
unsafe fn parse(
    text_ptr: *const u8,
    len: usize,
    out: *mut *mut TpSchema,
    parse: fn(&str) -> Result<Schema, tickpack::SchemaError>,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (text, out) = unsafe { (text(text_ptr, len, "text")?, Out::new(out, HANDLE_OUT)?) };
        new_handle(out, parse(text)?);
        Ok(())
    })
}

/// Parses a schema from JSON text (`len` bytes of UTF-8 at `text`, no NUL
/// needed) into a new handle in `*out`.
///
/// The format is the one of tickpack's `Schema::from_json`:
/// `{"entities":[{"name":"car","fields":[{"name":"pos","type":"f32","len":3}]}]}`.
///
/// # Safety
/// `text` is valid for reads of `len` bytes; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_schema_from_json(
    text: *const u8,
    len: usize,
    out: *mut *mut TpSchema,
) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    unsafe { parse(text, len, out, Schema::from_json) }
}

/// Parses a schema from TOML text (`len` bytes of UTF-8 at `text`) into a
/// new handle in `*out`; same fields as the JSON form.
///
/// # Safety
/// `text` is valid for reads of `len` bytes; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_schema_from_toml(
    text: *const u8,
    len: usize,
    out: *mut *mut TpSchema,
) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    unsafe { parse(text, len, out, Schema::from_toml) }
}

/// Frees a schema. Null is accepted and does nothing; a handle already
/// freed gives `TP_STATUS_WRONG_HANDLE`. Handles made from it (snapshots,
/// encoders, sessions) stay valid: they hold their own copy.
///
/// # Safety
/// `schema` is null or a handle of this library that no other call is using.
#[no_mangle]
pub unsafe extern "C" fn tp_schema_free(schema: *mut TpSchema) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { free(schema) })
}

/// Writes the schema's 32-bit id (the one packets carry) to `*id`.
///
/// # Safety
/// `schema` is a live handle; `id` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_schema_id(schema: *const TpSchema, id: *mut u32) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (schema, id) = unsafe { (get(schema)?, Out::new(id, "id")?) };
        id.write(schema.id());
        Ok(())
    })
}

/// Writes the number of entity types (snapshot sections) to `*count`.
///
/// # Safety
/// `schema` is a live handle; `count` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_schema_entity_types(
    schema: *const TpSchema,
    count: *mut usize,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (schema, count) = unsafe { (get(schema)?, Out::new(count, "count")?) };
        count.write(schema.sections().len());
        Ok(())
    })
}

/// Writes the record size in bytes of entity type `entity_type` (0-based,
/// in schema order) to `*size`: the `sizeof` of the matching C struct,
/// which must have no padding.
///
/// # Safety
/// `schema` is a live handle; `size` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_schema_record_size(
    schema: *const TpSchema,
    entity_type: usize,
    size: *mut usize,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (schema, size) = unsafe { (get(schema)?, Out::new(size, "size")?) };
        let ty = schema.sections().get(entity_type).ok_or_else(|| {
            Error::invalid(format_args!(
                "entity type {entity_type} is past the schema's {}",
                schema.sections().len()
            ))
        })?;
        size.write(ty.record_size());
        Ok(())
    })
}

/// Finds an entity type by name (`len` bytes of UTF-8 at `name`) and
/// writes its index to `*entity_type`; `TP_STATUS_INVALID_ARGUMENT` when
/// the schema has no such type.
///
/// # Safety
/// `schema` is a live handle; `name` is valid for reads of `len` bytes;
/// `entity_type` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_schema_entity_type_index(
    schema: *const TpSchema,
    name: *const u8,
    len: usize,
    entity_type: *mut usize,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (schema, name, entity_type) = unsafe {
            (
                get(schema)?,
                text(name, len, "name")?,
                Out::new(entity_type, "entity_type")?,
            )
        };
        let index = schema
            .sections()
            .iter()
            .position(|t| t.name() == name)
            .ok_or_else(|| Error::invalid(format_args!("no entity type named {name:?}")))?;
        entity_type.write(index);
        Ok(())
    })
}

/// Loads the dictionary set in directory `dir` (`len` bytes of UTF-8, no
/// NUL needed): its `manifest.json` and dictionaries, verifying sizes,
/// SHA-256 hashes and ids as the Rust API does.
///
/// # Safety
/// `dir` is valid for reads of `len` bytes; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_dictset_load(
    dir: *const u8,
    len: usize,
    out: *mut *mut TpDictSet,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (dir, out) = unsafe { (text(dir, len, "dir")?, Out::new(out, HANDLE_OUT)?) };
        new_handle(out, adapter::load_set(dir)?);
        Ok(())
    })
}

/// Frees a dictionary set. Null is accepted and does nothing; a handle
/// already freed gives `TP_STATUS_WRONG_HANDLE`.
///
/// # Safety
/// `set` is null or a handle of this library that no other call is using.
#[no_mangle]
pub unsafe extern "C" fn tp_dictset_free(set: *mut TpDictSet) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { free(set) })
}

/// Writes the set's 32-bit id to `*id`.
///
/// # Safety
/// `set` is a live handle; `id` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_dictset_id(set: *const TpDictSet, id: *mut u32) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (set, id) = unsafe { (get(set)?, Out::new(id, "id")?) };
        id.write(set.id());
        Ok(())
    })
}

/// Writes a new handle to the set's schema (the layout it was trained for,
/// with the trained delta operators) to `*out`. Snapshots, encoders and
/// sessions used with the set must be made from this schema.
///
/// # Safety
/// `set` is a live handle; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_dictset_schema(
    set: *const TpDictSet,
    out: *mut *mut TpSchema,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (set, out) = unsafe { (get(set)?, Out::new(out, HANDLE_OUT)?) };
        new_handle(out, set.schema().clone());
        Ok(())
    })
}
