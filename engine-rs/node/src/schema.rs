//! Schema exports: compile schema JSON into a boxed, shared `Schema` (the `SchemaHandle` every
//! codec function takes first) and describe it back as canonical JSON.

use std::sync::Arc;

use hd_engine_core::schema::{describe, parse, Schema};
use neon::prelude::*;

/// Unboxes a `SchemaHandle` passed from JavaScript, throwing a coded TypeError for anything else.
pub fn unbox<'cx, C: Context<'cx>>(
    cx: &mut C,
    handle: Handle<'cx, JsValue>,
) -> NeonResult<Arc<Schema>> {
    match handle.downcast::<JsBox<Arc<Schema>>, _>(cx) {
        Ok(b) => Ok(Arc::clone(&b)),
        Err(_) => crate::util::throw_coded(
            cx,
            "ERR_SCHEMA_HANDLE",
            "expected a SchemaHandle from schemaCompile",
        ),
    }
}

/// Validates schema JSON. Throws an Error with `code: 'ERR_SCHEMA'` and `issues: [{path, message}]`
/// listing every problem.
#[neon::export(name = "schemaCompile")]
fn schema_compile<'cx>(cx: &mut FunctionContext<'cx>, json: String) -> NeonResult<Arc<Schema>> {
    match parse(&json) {
        Ok(s) => Ok(Arc::new(s)),
        Err(issues) => {
            let summary = issues
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join("; ");
            let err = cx.error(format!("invalid dataset schema: {summary}"))?;
            let code = cx.string("ERR_SCHEMA");
            err.set(cx, "code", code)?;
            let list = cx.empty_array();
            for (k, issue) in issues.iter().enumerate() {
                let o = cx.empty_object();
                let path = cx.string(&issue.path);
                o.set(cx, "path", path)?;
                let message = cx.string(&issue.message);
                o.set(cx, "message", message)?;
                list.set(cx, k as u32, o)?;
            }
            err.set(cx, "issues", list)?;
            cx.throw(err)
        }
    }
}

/// Canonical schema JSON of a compiled schema.
#[neon::export(name = "schemaDescribe")]
fn schema_describe<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
) -> NeonResult<String> {
    let s = unbox(cx, handle)?;
    Ok(describe(&s))
}
