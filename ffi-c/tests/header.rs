//! The checked-in C header must match a fresh cbindgen run over this crate.
//! `UPDATE_HEADERS=1 cargo test -p rffi-c --test header` rewrites it.

use std::path::Path;

#[test]
fn header_is_up_to_date() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = crate_dir.join("../include/rffi/c_api.h");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).unwrap();
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen failed");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    if std::env::var_os("UPDATE_HEADERS").is_some() {
        std::fs::write(&header, &fresh).unwrap();
        return;
    }
    let current = std::fs::read(&header).unwrap_or_default();
    assert!(
        current == fresh,
        "include/rffi/c_api.h is out of date; regenerate with \
         `UPDATE_HEADERS=1 cargo test -p rffi-c --test header`"
    );
}
