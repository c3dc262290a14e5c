fn main() {
    // Plugins and Python find the one runtime by this name (a NEEDED entry resolves to the copy
    // already loaded); without a SONAME they would need LD_LIBRARY_PATH.
    println!("cargo::rustc-cdylib-link-arg=-Wl,-soname,librffi.so");
}
