//! Properties the fuzz targets assert, shared with the regression test that
//! replays committed crash inputs (feature `internals`).

#![forbid(unsafe_code)]
