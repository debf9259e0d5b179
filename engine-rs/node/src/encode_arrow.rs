//! Arrow encode exports: an Arrow batch's column buffers plus the plan describing them → packed
//! records, in one call (`engine-rs/encodeArrow.ts` builds the plan and collects the buffers).
//!
//! The sync call borrows every input buffer in place and writes straight into the returned
//! Buffer; the task copies the inputs first (a JS buffer cannot be read from another thread) and
//! the records once more into the Buffer it resolves to. Errors carry `code`
//! (`ERR_ENCODE_ARROW_COLUMN | _TYPE | _VALUE | _SHAPE`), `column` and, for a value, `row`.

use std::sync::Arc;

use hd_engine_core::encode::columns::{
    encode_columns, encode_columns_into, parse_plan, ColumnError, EncodePlan,
};
use hd_engine_core::schema::Schema;
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::schema::unbox;
use crate::util::throw_coded;

fn throw_encode<'cx, C: Context<'cx>, T>(cx: &mut C, e: &ColumnError) -> NeonResult<T> {
    let code = match e {
        ColumnError::Plan(_) | ColumnError::Shape { .. } => "ERR_ENCODE_ARROW_SHAPE",
        ColumnError::Column { .. } => "ERR_ENCODE_ARROW_COLUMN",
        ColumnError::Type { .. } => "ERR_ENCODE_ARROW_TYPE",
        ColumnError::Value { .. } => "ERR_ENCODE_ARROW_VALUE",
    };
    let err = cx.error(e.to_string())?;
    let code = cx.string(code);
    err.set(cx, "code", code)?;
    if !e.column().is_empty() {
        let column = cx.string(e.column());
        err.set(cx, "column", column)?;
    }
    if let Some(row) = e.row() {
        let row = cx.number(row as f64);
        err.set(cx, "row", row)?;
    }
    cx.throw(err)
}

/// The plan, and the length of the records it describes.
fn plan_of<'cx, C: Context<'cx>>(
    cx: &mut C,
    schema: &Schema,
    json: &str,
) -> NeonResult<(EncodePlan, usize)> {
    let plan = match parse_plan(json) {
        Ok(p) => p,
        Err(m) => return throw_coded(cx, "ERR_ENCODE_ARROW_SHAPE", &m),
    };
    match plan.rows.checked_mul(schema.record_size) {
        Some(len) => Ok((plan, len)),
        None => throw_coded(cx, "ERR_ENCODE_ARROW_SHAPE", "too many rows"),
    }
}

/// A call's arguments, checked: the schema, the plan, the records' length, the buffers.
struct Inputs<'cx> {
    schema: Arc<Schema>,
    plan: EncodePlan,
    len: usize,
    arrays: Vec<Handle<'cx, JsTypedArray<u8>>>,
}

fn inputs<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    plan: &str,
    buffers: Handle<'cx, JsArray>,
) -> NeonResult<Inputs<'cx>> {
    let schema: Arc<Schema> = unbox(cx, handle)?;
    let (plan, len) = plan_of(cx, &schema, plan)?;
    let arrays = buffers
        .to_vec(cx)?
        .into_iter()
        .map(|v| v.downcast_or_throw::<JsTypedArray<u8>, _>(cx))
        .collect::<NeonResult<_>>()?;
    Ok(Inputs {
        schema,
        plan,
        len,
        arrays,
    })
}

/// Encodes on the calling thread into a fresh Buffer of `rows × record_size` bytes.
#[neon::export(name = "encodeArrowColumns")]
fn encode_arrow_columns<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    plan: String,
    buffers: Handle<'cx, JsArray>,
) -> JsResult<'cx, JsBuffer> {
    let Inputs {
        schema,
        plan,
        len,
        arrays,
    } = inputs(cx, handle, &plan, buffers)?;
    // A fresh Buffer is zero-filled: fields no column covers stay zero.
    let mut out = JsBuffer::new(cx, len)?;
    let result = {
        let lock = cx.lock();
        let inputs: Result<Vec<_>, _> = arrays.iter().map(|a| a.try_borrow(&lock)).collect();
        let done = match (inputs, out.try_borrow_mut(&lock)) {
            (Ok(inputs), Ok(mut records)) => {
                let slices: Vec<&[u8]> = inputs.iter().map(|r| &r[..]).collect();
                Ok(encode_columns_into(&schema, &plan, &slices, &mut records))
            }
            (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
        };
        done
    };
    match result {
        Ok(Ok(())) => Ok(out),
        Ok(Err(e)) => throw_encode(cx, &e),
        Err(m) => throw_coded(cx, "ERR_ENCODE_ARROW_SHAPE", &m),
    }
}

/// `encodeArrowColumns` as a Neon task off the event loop; the input buffers are copied first.
#[neon::export(name = "encodeArrowColumnsAsync")]
fn encode_arrow_columns_async<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    plan: String,
    buffers: Handle<'cx, JsArray>,
) -> JsResult<'cx, JsPromise> {
    let Inputs {
        schema,
        plan,
        arrays,
        ..
    } = inputs(cx, handle, &plan, buffers)?;
    let copies: Vec<Vec<u8>> = arrays.iter().map(|a| a.as_slice(cx).to_vec()).collect();
    let promise = cx
        .task(move || {
            let slices: Vec<&[u8]> = copies.iter().map(Vec::as_slice).collect();
            encode_columns(&schema, &plan, &slices)
        })
        .promise(move |mut cx, result| match result {
            Ok(records) => JsBuffer::from_slice(&mut cx, &records),
            Err(e) => throw_encode(&mut cx, &e),
        });
    Ok(promise)
}
