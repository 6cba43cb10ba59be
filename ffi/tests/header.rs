//! The committed header is what cbindgen makes of the current source.

use std::path::Path;

#[test]
fn header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = dir.join("include/tickpack.h");
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).unwrap();
    let bindings = cbindgen::generate_with_config(dir, config).unwrap();
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let committed = std::fs::read(&path).unwrap_or_default();
    if std::env::var_os("TICKPACK_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    assert!(
        committed == generated,
        "{} is stale: regenerate with TICKPACK_BLESS=1 cargo test -p tickpack-ffi --test header",
        path.display()
    );
}
