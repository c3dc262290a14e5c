//! The object protocol with objects made outside this runtime, and reference counts through
//! containers.

use rffi_core::abi::*;
use rffi_core::{Any, Array, Map, ObjectRef};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, Ordering};

static STRONG_CALLS: AtomicI32 = AtomicI32::new(0);
static WEAK_CALLS: AtomicI32 = AtomicI32::new(0);

/// An object laid out by "another library": header plus a payload, freed by its own deleter.
#[repr(C)]
struct Foreign {
    header: RFFIObject,
    payload: u64,
}

unsafe extern "C" fn foreign_deleter(obj: *mut c_void, flags: i32) {
    if flags & kRFFIObjectDeleterFlagBitMaskStrong != 0 {
        STRONG_CALLS.fetch_add(1, Ordering::SeqCst);
    }
    if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
        WEAK_CALLS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: allocated with Box below.
        drop(unsafe { Box::from_raw(obj.cast::<Foreign>()) });
    }
}

fn make_foreign() -> NonNull<RFFIObject> {
    let b = Box::new(Foreign {
        header: RFFIObject {
            combined_ref_count: 1 | (1 << 32),
            type_index: 200,
            __padding: 0,
            deleter: Some(foreign_deleter),
        },
        payload: 7,
    });
    NonNull::from(Box::leak(b)).cast()
}

#[test]
fn foreign_objects_follow_the_protocol() {
    // SAFETY: a fresh object with one reference, handed to the ObjectRef.
    let obj = unsafe { ObjectRef::from_raw(make_foreign()) };
    assert_eq!(obj.type_index(), 200);
    let a = Any::from(obj.clone());
    let arr = Array::new(vec![a.clone(), a]);
    assert_eq!(obj.strong_count(), 3);
    drop(arr);
    assert_eq!(obj.strong_count(), 1);
    let raw = obj.into_raw();
    // A weak reference held by the foreign library: the strong side dies first, memory later.
    // SAFETY: raw is live; we add one weak reference by the protocol's layout.
    unsafe {
        let rc =
            std::sync::atomic::AtomicU64::from_ptr(&raw mut (*raw.as_ptr()).combined_ref_count);
        rc.fetch_add(1 << 32, Ordering::Relaxed);
        rffi_core::object::dec_ref(raw.as_ptr());
        assert_eq!(STRONG_CALLS.load(Ordering::SeqCst), 1);
        assert_eq!(WEAK_CALLS.load(Ordering::SeqCst), 0);
        // The foreign library drops its weak reference and frees (flags = Weak) by itself.
        if rc.fetch_sub(1 << 32, Ordering::Release) >> 32 == 1 {
            foreign_deleter(raw.as_ptr().cast(), kRFFIObjectDeleterFlagBitMaskWeak);
        }
    }
    assert_eq!(WEAK_CALLS.load(Ordering::SeqCst), 1);
}

#[test]
fn our_objects_released_by_a_foreign_decref() {
    // A foreign library that only knows the header protocol: decrement, call the deleter with
    // Both when the count was 1|1<<32.
    let s = Any::from("a string long enough to be an object");
    let obj = s.view().as_object().unwrap().clone();
    let raw = obj.clone().into_raw().as_ptr();
    assert_eq!(obj.strong_count(), 3);
    drop(s);
    drop(obj);
    // SAFETY: the protocol as a C++ runtime inlines it.
    unsafe {
        let rc = std::sync::atomic::AtomicU64::from_ptr(&raw mut (*raw).combined_ref_count);
        let old = rc.fetch_sub(1, Ordering::Release);
        assert_eq!(old, 1 | (1 << 32));
        ((*raw).deleter.unwrap())(raw.cast(), kRFFIObjectDeleterFlagBitMaskBoth);
    }
}

#[test]
fn use_count_through_containers() {
    let echo = rffi_core::get_global_func("testing.echo").unwrap();
    let count = rffi_core::get_global_func("testing.object_use_count").unwrap();
    let obj = Any::from(Array::new(vec![
        Any::from(1i64),
        Any::from(2i64),
        Any::from(3i64),
    ]));
    let n = |o: &Any| {
        count
            .call(std::slice::from_ref(o))
            .unwrap()
            .try_as::<i64>()
            .unwrap()
    };
    assert_eq!(n(&obj), 1);
    let map = Map::new(vec![
        (Any::from("a"), Any::from(1i64)),
        (Any::from("b"), obj.clone()),
    ])
    .unwrap();
    let outer = echo
        .call(&[Any::from(Array::new(vec![obj.clone(), Any::from(map)]))])
        .unwrap();
    assert_eq!(n(&obj), 3);
    drop(outer);
    assert_eq!(n(&obj), 1);
}

#[test]
fn runtime_registered_type_keys() {
    let i = rffi_core::type_registry::get_or_alloc_type_index("test_object.Point").unwrap();
    assert!(i >= kRFFIDynObjectBegin);
    assert_eq!(
        rffi_core::type_registry::type_key_to_index("test_object.Point"),
        Some(i)
    );
    assert_eq!(
        rffi_core::type_registry::type_index_to_key(i),
        Some("test_object.Point")
    );
}

static OPAQUE_FREED: AtomicI32 = AtomicI32::new(0);

unsafe extern "C" fn free_opaque(handle: *mut c_void) {
    assert_eq!(handle as usize, 0x1234);
    OPAQUE_FREED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn opaque_objects_release_their_handle_once() {
    // SAFETY: the deleter accepts this handle from any thread.
    let o = unsafe {
        ObjectRef::new_opaque(
            kRFFIOpaquePyObject,
            0x1234 as *mut c_void,
            Some(free_opaque),
        )
    };
    assert_eq!(o.type_index(), kRFFIOpaquePyObject);
    // SAFETY: made by new_opaque.
    assert_eq!(unsafe { o.opaque_handle() } as usize, 0x1234);
    let echoed = rffi_core::get_global_func("testing.echo")
        .unwrap()
        .call(&[Any::from(o.clone())])
        .unwrap();
    assert!(echoed.view().as_object().unwrap().same_as(&o));
    drop(echoed);
    drop(o);
    assert_eq!(OPAQUE_FREED.load(Ordering::SeqCst), 1);
}

#[test]
fn freeing_a_deeply_nested_value_takes_no_deep_stack() {
    // A million Arrays and Lists, each holding the next and one shared leaf, freed on a thread
    // with a 256 KiB stack: the nested deleters are bounded (deeper releases wait in a queue),
    // and every level is freed (the leaf is back to one reference).
    let leaf = Any::from(Array::new(vec![Any::from(7i64)]));
    let held = leaf.clone();
    std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            let mut v = Any::none();
            for i in 0..1_000_000 {
                let items = vec![v, held.clone()];
                v = if i % 2 == 0 {
                    Any::from(Array::new(items))
                } else {
                    Any::from(rffi_core::List::new(items))
                };
            }
            drop(held);
            drop(v);
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(leaf.view().as_object().unwrap().strong_count(), 1);
}

/// A List and a Dict shared by eight threads that append, set, pop and read them at once (and a
/// List that holds the Dict): every operation sees a whole container, and the counts add up.
/// Run under ThreadSanitizer by `make sanitize-tsan`.
#[test]
fn lists_and_dicts_shared_by_threads_stay_consistent() {
    use rffi_core::{Dict, List};
    const THREADS: i64 = 8;
    const ROUNDS: i64 = 1500;
    let list = List::new(vec![]);
    let dict = Dict::new(vec![]).unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (list, dict) = (list.clone(), dict.clone());
            s.spawn(move || {
                for i in 0..ROUNDS {
                    list.append(Any::from(t * ROUNDS + i));
                    if i % 3 == 0 {
                        list.pop(None).unwrap();
                    }
                    let key = Any::from(format!("thread {t}, key {}", i % 16));
                    dict.set_item(key.clone(), Any::from(i)).unwrap();
                    assert_eq!(
                        dict.get(&key.view())
                            .unwrap()
                            .map(|v| v.try_as::<i64>().unwrap()),
                        Some(i),
                        "only this thread writes its keys"
                    );
                    if i % 5 == 0 {
                        assert!(dict.pop(&key.view()).unwrap().is_some());
                    }
                    let items = list.items();
                    assert!(items.iter().all(|v| v.try_as::<i64>().is_ok()));
                    if i % 100 == 0 {
                        List::new(vec![Any::from(dict.clone())]).clear();
                    }
                }
            });
        }
    });
    let pops = THREADS * ((ROUNDS + 2) / 3);
    let mut items: Vec<i64> = list
        .items()
        .iter()
        .map(|v| v.try_as::<i64>().unwrap())
        .collect();
    assert_eq!(items.len() as i64, THREADS * ROUNDS - pops);
    items.sort_unstable();
    items.dedup();
    assert_eq!(items.len() as i64, THREADS * ROUNDS - pops, "no item twice");
    // Each thread's last write of each of its 16 keys is there unless that write was popped.
    for t in 0..THREADS {
        for k in 0..16 {
            let last = (ROUNDS - 1) - (ROUNDS - 1 - k) % 16;
            let key = Any::from(format!("thread {t}, key {k}"));
            let got = dict
                .get(&key.view())
                .unwrap()
                .map(|v| v.try_as::<i64>().unwrap());
            assert_eq!(got, (last % 5 != 0).then_some(last), "thread {t}, key {k}");
        }
    }
}
