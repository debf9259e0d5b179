//! Columnar result exports (docs/hdwp.md, "columns"): a Storage Node turns a step's matching
//! records into a columnar body off the event loop; a client checks a received body against the
//! columns it asked for and gets the same column object `decodeRecords` returns.

use std::sync::Arc;

use hd_engine_core::columnar::{encode_columnar, read_columnar, ColumnarError};
use hd_engine_core::schema::Schema;
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::decode::{columns, options, throw_decode};
use crate::util::throw_coded;

/// The dataset's schema (from its boxed handle) and the field indices of `fields`.
fn schema_fields<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    fields: Handle<'cx, JsArray>,
) -> NeonResult<(Arc<Schema>, Vec<usize>)> {
    let schema: Arc<Schema> = crate::schema::unbox(cx, handle)?;
    let ix = field_indices(cx, &schema, fields)?;
    Ok((schema, ix))
}

/// The row count a body must hold; negative: any.
fn expected_rows(rows: f64) -> Option<usize> {
    if rows < 0.0 {
        None
    } else {
        Some(rows as usize)
    }
}

/// Field indices from a JS array of numbers, each a field of `schema`, none twice.
fn field_indices<'cx, C: Context<'cx>>(
    cx: &mut C,
    schema: &Schema,
    arr: Handle<'cx, JsArray>,
) -> NeonResult<Vec<usize>> {
    let items = arr.to_vec(cx)?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Ok(n) = item.downcast::<JsNumber, _>(cx) else {
            return cx.throw_type_error("fields must be an array of field indices");
        };
        let v = n.value(cx);
        if v.fract() != 0.0 || v < 0.0 || v as usize >= schema.fields.len() {
            return cx
                .throw_range_error(format!("field index {v} is not a field of '{}'", schema.id));
        }
        if out.contains(&(v as usize)) {
            return cx.throw_range_error(format!("field index {v} is named twice"));
        }
        out.push(v as usize);
    }
    Ok(out)
}

/// The field mask's bytes, copied (a task may run after JavaScript changed the buffer).
fn mask_of<'cx>(
    cx: &mut FunctionContext<'cx>,
    mask: Option<Handle<'cx, JsBuffer>>,
) -> Option<Vec<u8>> {
    mask.map(|m| m.as_slice(cx).to_vec())
}

fn throw_columnar<'cx, C: Context<'cx>, T>(cx: &mut C, e: &ColumnarError) -> NeonResult<T> {
    throw_coded(cx, e.code(), &e.to_string())
}

/// Decodes `records` (after ANDing `mask` into a copy, when given) to the columns of `fields`
/// and resolves to the columnar body, off the event loop.
#[neon::export(name = "columnarEncodeAsync")]
fn columnar_encode_async<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    records: Handle<'cx, JsBuffer>,
    fields: Handle<'cx, JsArray>,
    raw_addresses: bool,
    mask: Option<Handle<'cx, JsBuffer>>,
) -> JsResult<'cx, JsPromise> {
    let (schema, ix) = schema_fields(cx, handle, fields)?;
    let bytes = records.as_slice(cx).to_vec();
    let mask = mask_of(cx, mask);
    let opts = options(raw_addresses);
    let promise = cx
        .task(move || encode_columnar(&schema, &bytes, &ix, &opts, mask.as_deref()))
        .promise(move |mut cx, result| match result {
            Ok(body) => JsBuffer::from_slice(&mut cx, &body),
            Err(e) => throw_decode(&mut cx, &e),
        });
    Ok(promise)
}

/// `columnarEncodeAsync` on the calling thread, for a few records (the task's hop costs more).
#[neon::export(name = "columnarEncode")]
fn columnar_encode<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    records: Handle<'cx, JsBuffer>,
    fields: Handle<'cx, JsArray>,
    raw_addresses: bool,
    mask: Option<Handle<'cx, JsBuffer>>,
) -> JsResult<'cx, JsBuffer> {
    let (schema, ix) = schema_fields(cx, handle, fields)?;
    let mask = mask_of(cx, mask);
    let result = encode_columnar(
        &schema,
        records.as_slice(cx),
        &ix,
        &options(raw_addresses),
        mask.as_deref(),
    );
    match result {
        Ok(body) => JsBuffer::from_slice(cx, &body),
        Err(e) => throw_decode(cx, &e),
    }
}

/// Checks a columnar body against the columns of `fields` and `rows` (negative: any) and returns
/// the columns as `decodeRecords` does; a malformed body throws with an `ERR_COLUMNAR_*` code.
#[neon::export(name = "columnarRead")]
fn columnar_read<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    fields: Handle<'cx, JsArray>,
    raw_addresses: bool,
    rows: f64,
    body: Handle<'cx, JsTypedArray<u8>>,
) -> JsResult<'cx, JsObject> {
    let (schema, ix) = schema_fields(cx, handle, fields)?;
    let rows = expected_rows(rows);
    let result = read_columnar(
        &schema,
        &ix,
        &options(raw_addresses),
        rows,
        body.as_slice(cx),
    );
    match result {
        Ok(cols) => columns(cx, &cols),
        Err(e) => throw_columnar(cx, &e),
    }
}

/// `columnarRead` off the event loop (the body is copied first).
#[neon::export(name = "columnarReadAsync")]
fn columnar_read_async<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    fields: Handle<'cx, JsArray>,
    raw_addresses: bool,
    rows: f64,
    body: Handle<'cx, JsTypedArray<u8>>,
) -> JsResult<'cx, JsPromise> {
    let (schema, ix) = schema_fields(cx, handle, fields)?;
    let rows = expected_rows(rows);
    let bytes = body.as_slice(cx).to_vec();
    let opts = options(raw_addresses);
    let promise = cx
        .task(move || read_columnar(&schema, &ix, &opts, rows, &bytes))
        .promise(move |mut cx, result| match result {
            Ok(cols) => columns(&mut cx, &cols),
            Err(e) => throw_columnar(&mut cx, &e),
        });
    Ok(promise)
}
