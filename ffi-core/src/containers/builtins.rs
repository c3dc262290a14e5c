//! `ffi.List*` and `ffi.Dict*`: the mutable containers for bindings and C callers.

use super::{Dict, List};
use crate::any::{Any, AnyView};
use crate::error::{Error, Result};
use crate::function_registry::{register_builtin, register_builtin_packed};
use crate::Array;

fn owned(args: &[AnyView<'_>]) -> Result<Vec<Any>> {
    args.iter().map(AnyView::to_owned).collect()
}

register_builtin_packed!("ffi.List", |args: &[AnyView<'_>]| Ok(List::new(owned(
    args
)?)
.into()));
register_builtin!("ffi.ListSize", |l: List| l.len() as i64);
register_builtin!("ffi.ListGetItem", |l: List, i: i64| l.get_item(i));
register_builtin!("ffi.ListSetItem", |l: List, i: i64, v: Any| l
    .set_item(i, v));
register_builtin!("ffi.ListAppend", |l: List, v: Any| l.append(v));
register_builtin!("ffi.ListInsert", |l: List, i: i64, v: Any| l.insert(i, v));
register_builtin!("ffi.ListPop", |l: List, i: Option<i64>| l.pop(i));
register_builtin!("ffi.ListClear", |l: List| l.clear());
register_builtin!("ffi.ListExtend", |l: List, items: Array| -> Result<()> {
    l.extend(owned(items.as_slice())?);
    Ok(())
});
register_builtin!("ffi.ListItems", |l: List| Array::new(l.items()));

register_builtin_packed!("ffi.Dict", |args: &[AnyView<'_>]| {
    if args.len() % 2 != 0 {
        return Err(Error::type_error(format!(
            "`ffi.Dict` expects key, value pairs but got {} arguments",
            args.len()
        )));
    }
    let pairs = args
        .chunks_exact(2)
        .map(|kv| Ok((kv[0].to_owned()?, kv[1].to_owned()?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Dict::new(pairs)?.into())
});
register_builtin!("ffi.DictSize", |d: Dict| d.len() as i64);
register_builtin!("ffi.DictGetItem", |d: Dict, k: Any| d.get_item(&k.view()));
register_builtin!("ffi.DictCount", |d: Dict, k: Any| -> Result<i64> {
    Ok(d.get(&k.view())?.is_some() as i64)
});
register_builtin!("ffi.DictSetItem", |d: Dict, k: Any, v: Any| d
    .set_item(k, v));
register_builtin!("ffi.DictPop", |d: Dict, k: Any| -> Result<Any> {
    d.pop(&k.view())?
        .ok_or_else(|| crate::map::missing_key(&k.view()))
});
register_builtin!("ffi.DictClear", |d: Dict| d.clear());
// Keys and values flattened as [k0, v0, k1, v1, ...], in insertion order (as `ffi.MapItems`).
register_builtin!("ffi.DictItems", |d: Dict| Array::new(
    d.items().into_iter().flat_map(|(k, v)| [k, v]).collect()
));
