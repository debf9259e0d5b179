//! Small helpers shared by the bridge modules.

use neon::prelude::*;

/// Throws a JS `Error` whose `code` property names the failure kind, so TS can map it to a typed error.
pub fn throw_coded<'a, C: Context<'a>, T>(cx: &mut C, code: &str, message: &str) -> NeonResult<T> {
    let err = cx.error(message)?;
    let code = cx.string(code);
    err.set(cx, "code", code)?;
    cx.throw(err)
}

/// Option `key` of `o` as a number; `default` when it is absent.
pub fn opt_num(
    cx: &mut FunctionContext,
    o: Handle<JsObject>,
    key: &str,
    default: f64,
) -> NeonResult<f64> {
    let v: Handle<JsValue> = o.get_value(cx, key)?;
    if v.is_a::<JsUndefined, _>(cx) {
        return Ok(default);
    }
    Ok(v.downcast_or_throw::<JsNumber, _>(cx)?.value(cx))
}

/// Option `key` of `o` as a boolean; false when it is absent or not a boolean.
pub fn opt_flag(cx: &mut FunctionContext, o: Handle<JsObject>, key: &str) -> NeonResult<bool> {
    let v: Handle<JsValue> = o.get_value(cx, key)?;
    Ok(v.downcast::<JsBoolean, _>(cx)
        .map(|b| b.value(cx))
        .unwrap_or(false))
}

/// Option `key` of `o` as a string; empty when it is absent or not a string.
pub fn opt_text(cx: &mut FunctionContext, o: Handle<JsObject>, key: &str) -> NeonResult<String> {
    let v: Handle<JsValue> = o.get_value(cx, key)?;
    Ok(v.downcast::<JsString, _>(cx)
        .map(|s| s.value(cx))
        .unwrap_or_default())
}
