//! Target `json_graph`: any text as a JSON graph (`from_json_graph`: what
//! `rffi.serialization.from_json_graph_str` and `RFFIFromJSONGraphString` read from files someone
//! else wrote). What must hold: reading returns a value or an error naming `from_json_graph_str`
//! (a ValueError, a TypeError for a field of the wrong type, a RecursionError for a graph deeper
//! than the stack), never a crash, a stack overflow, a hang on a cycle or an allocation the text
//! does not pay for; whatever reads writes back (`to_json_graph`) to text that reads to a value
//! that writes the same text again.

use rffi_core::abi::{
    kRFFIAny, kRFFIArray, kRFFIDict, kRFFIList, kRFFIMap, kRFFIStaticObjectBegin,
};
use rffi_core::reflection;
use rffi_core::structural::{from_json_graph, to_json_graph};
use rffi_core::{Any, Array, Dict, List, Map};

pub fn run(data: &[u8]) {
    let Ok(text) = core::str::from_utf8(data) else {
        return;
    };
    let value = match from_json_graph(text) {
        Ok(v) => v,
        Err(e) => {
            let kind = e.kind();
            assert!(
                matches!(kind.as_str(), "ValueError" | "TypeError" | "RecursionError"),
                "{kind}: {}",
                e.message()
            );
            assert!(
                e.message().starts_with("from_json_graph_str: "),
                "{}",
                e.message()
            );
            return;
        }
    };
    let written = to_json_graph(&value.view(), None)
        .unwrap_or_else(|e| panic!("a value read from JSON does not write: {}", e.message()));
    let again = from_json_graph(&written)
        .unwrap_or_else(|e| panic!("{written} does not read back: {}", e.message()));
    let rewritten = to_json_graph(&again.view(), None).expect("writes again");
    assert_eq!(written, rewritten, "the graph changed in a round trip");
    // A graph may hold a cycle through a List, a Dict or an object's field (refcounted, so it
    // would outlive this input): emptied, so that LeakSanitizer's replay sees only real leaks.
    for v in [value, again] {
        break_cycles(&v, &mut Vec::new());
    }
}

/// Empties every List and Dict reachable from `v` through containers and object fields, and the
/// object fields themselves.
fn break_cycles(v: &Any, seen: &mut Vec<usize>) {
    let view = v.view();
    let Some(obj) = view.as_object() else {
        return;
    };
    let addr = obj.as_ptr() as usize;
    if seen.contains(&addr) {
        return;
    }
    seen.push(addr);
    let mut children = Vec::new();
    match v.type_index() {
        kRFFIList => {
            let l: List = v.try_as().expect("a List");
            children.extend(l.items());
            l.clear();
        }
        kRFFIDict => {
            let d: Dict = v.try_as().expect("a Dict");
            children.extend(d.items().into_iter().flat_map(|(k, x)| [k, x]));
            d.clear();
        }
        index => {
            if let Ok(a) = v.try_as::<Array>() {
                children.extend(a.iter().filter_map(|x| x.to_owned().ok()));
            } else if let Ok(m) = v.try_as::<Map>() {
                for (k, x) in m.iter() {
                    children.extend([k.to_owned().ok(), x.to_owned().ok()].into_iter().flatten());
                }
            } else {
                // An object: a cycle may run through its fields (`v_map` holding a Map that
                // holds the object), so every field that holds an object is set to an empty
                // value of its type.
                for f in reflection::all_fields(index) {
                    let name = reflection::member_name(&f.name);
                    if let Ok(x) = reflection::get_field(obj, name) {
                        children.push(x);
                    }
                    let empty: Any = match f.field_static_type_index {
                        kRFFIArray => Array::new(Vec::new()).into(),
                        kRFFIList => List::new(Vec::new()).into(),
                        kRFFIMap => Map::new(Vec::new()).expect("an empty Map").into(),
                        kRFFIDict => Dict::new(Vec::new()).expect("an empty Dict").into(),
                        i if i == kRFFIAny || i >= kRFFIStaticObjectBegin => Any::none(),
                        _ => continue,
                    };
                    let _ = reflection::set_field(obj, name, &empty.view());
                }
            }
        }
    }
    for c in &children {
        break_cycles(c, seen);
    }
}
