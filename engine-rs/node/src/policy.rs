//! Policy exports: compile a Rego policy into a boxed `Policy` (the `PolicyHandle`), evaluate it
//! for one input, and apply a record field mask in place.

use std::sync::Arc;

use hd_engine_core::policy::{apply_field_mask, Policy};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::util::throw_coded;

/// The boxed state behind a `PolicyHandle`: a compiled policy, shared, never mutated.
pub struct PolicyBox(Arc<Policy>);

impl Finalize for PolicyBox {}

/// Compiles `rego` with optional `dataJson`; throws `ERR_POLICY` with the compiler's message.
#[neon::export(name = "policyCompile")]
fn policy_compile<'cx>(
    cx: &mut FunctionContext<'cx>,
    rego: String,
    data_json: Option<String>,
) -> JsResult<'cx, JsBox<PolicyBox>> {
    match Policy::compile(&rego, data_json.as_deref()) {
        Ok(p) => Ok(cx.boxed(PolicyBox(Arc::new(p)))),
        Err(e) => throw_coded(cx, "ERR_POLICY", &e.message),
    }
}

/// Evaluates the policy's package for `inputJson`; returns its value as JSON text. Throws
/// `ERR_POLICY_EVAL` when evaluation fails (an error in the policy, the time limit).
#[neon::export(name = "policyEvaluate")]
fn policy_evaluate<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    input_json: String,
) -> NeonResult<String> {
    let policy = match handle.downcast::<JsBox<PolicyBox>, _>(cx) {
        Ok(b) => Arc::clone(&b.0),
        Err(_) => {
            return throw_coded(
                cx,
                "ERR_POLICY_HANDLE",
                "expected a PolicyHandle from policyCompile",
            )
        }
    };
    match policy.evaluate(&input_json) {
        Ok(json) => Ok(json),
        Err(e) => throw_coded(cx, "ERR_POLICY_EVAL", &e.message),
    }
}

/// ANDs every record of `records` with `mask` (one record long), in place.
#[neon::export(name = "policyApplyFieldMask")]
fn policy_apply_field_mask<'cx>(
    cx: &mut FunctionContext<'cx>,
    mut records: Handle<'cx, JsBuffer>,
    mask: Handle<'cx, JsBuffer>,
) -> NeonResult<()> {
    let m = mask.as_slice(cx).to_vec();
    let r = records.as_mut_slice(cx);
    match apply_field_mask(r, &m) {
        Ok(()) => Ok(()),
        Err(e) => throw_coded(cx, "ERR_FIELD_MASK", &e.0),
    }
}
