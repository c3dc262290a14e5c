//! `RFFI_BACKTRACE=0` turns native capture off; the raise site is still recorded. This file is its
//! own test process, with this one test, so the variable is read before any error exists.

#[test]
fn native_capture_can_be_turned_off() {
    std::env::set_var("RFFI_BACKTRACE", "0");
    let f = rffi_core::Function::from_typed(|| -> rffi_core::Result<()> {
        Err(rffi_core::Error::value_error("no native frames"))
    });
    rffi_core::register_global_func("test_bt.off", f.clone(), false).unwrap();
    let e = f.call(&[]).unwrap_err();
    let bt = e.backtrace();
    assert_eq!(bt.lines().count(), 1, "{bt}");
    assert!(
        bt.contains("tests/backtrace_off.rs") && bt.contains("in test_bt.off"),
        "{bt}"
    );
}
