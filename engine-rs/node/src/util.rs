//! Small helpers shared by the bridge modules.

use neon::prelude::*;

/// Throws a JS `Error` whose `code` property names the failure kind, so TS can map it to a typed error.
pub fn throw_coded<'a, C: Context<'a>, T>(cx: &mut C, code: &str, message: &str) -> NeonResult<T> {
    let err = cx.error(message)?;
    let code = cx.string(code);
    err.set(cx, "code", code)?;
    cx.throw(err)
}
