//! Dictionary sets: trained dictionaries and per-field choices for one game
//! version, loaded from `dictionaries/<game>/<version>/manifest.json`.
#![forbid(unsafe_code)]
