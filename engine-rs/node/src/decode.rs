//! Decode exports: one native call turns a buffer of records into column buffers.
//!
//! Each column comes back as `{ length, nullCount, data, offsets?, validity?, child? }` with
//! every buffer a fresh `ArrayBuffer` (offset 0, so any typed array can view it aligned);
//! `decodePlan` returns the columns' Arrow types as JSON. TypeScript (`engine-rs/decode.ts`)
//! turns both into apache-arrow vectors without touching a value.

use std::sync::Arc;

use hd_engine_core::decode::{
    decode_columns_projected, plan_json, projection, Addresses, Column, Columns, DecodeError,
    DecodeOptions,
};
use hd_engine_core::schema::Schema;
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::util::throw_coded;

pub(crate) fn options(raw_addresses: bool) -> DecodeOptions {
    DecodeOptions {
        addresses: if raw_addresses {
            Addresses::Raw
        } else {
            Addresses::Text
        },
    }
}

/// The projection argument: `undefined` / `null` for every field, else an array of field names
/// (resolved here, so an unknown name fails with the core's message).
fn fields_arg<'cx, C: Context<'cx>>(
    cx: &mut C,
    schema: &Schema,
    fields: Option<Handle<'cx, JsValue>>,
) -> NeonResult<Option<Vec<usize>>> {
    let Some(v) = fields else { return Ok(None) };
    if v.is_a::<JsUndefined, _>(cx) || v.is_a::<JsNull, _>(cx) {
        return Ok(None);
    }
    let Ok(arr) = v.downcast::<JsArray, _>(cx) else {
        return cx.throw_type_error("fields must be an array of field names");
    };
    let items = arr.to_vec(cx)?;
    let mut names = Vec::with_capacity(items.len());
    for item in items {
        let Ok(s) = item.downcast::<JsString, _>(cx) else {
            return cx.throw_type_error("fields must be an array of field names");
        };
        names.push(s.value(cx));
    }
    match projection(schema, &names) {
        Ok(ix) => Ok(Some(ix)),
        Err(e) => throw_decode(cx, &e),
    }
}

pub(crate) fn throw_decode<'cx, C: Context<'cx>, T>(cx: &mut C, e: &DecodeError) -> NeonResult<T> {
    let code = match e {
        DecodeError::RecordLength { .. } => "ERR_DECODE_LENGTH",
        DecodeError::Schema { .. } => "ERR_DECODE_SCHEMA",
        DecodeError::TooLarge { .. } => "ERR_DECODE_TOO_LARGE",
    };
    throw_coded(cx, code, &e.to_string())
}

fn array_buffer<'cx, C: Context<'cx>>(cx: &mut C, bytes: &[u8]) -> JsResult<'cx, JsArrayBuffer> {
    JsArrayBuffer::from_slice(cx, bytes)
}

fn column<'cx, C: Context<'cx>>(cx: &mut C, c: &Column) -> JsResult<'cx, JsObject> {
    let obj = cx.empty_object();
    let length = cx.number(c.len as f64);
    obj.set(cx, "length", length)?;
    let nulls = cx.number(c.null_count as f64);
    obj.set(cx, "nullCount", nulls)?;
    let data = array_buffer(cx, &c.data)?;
    obj.set(cx, "data", data)?;
    if let Some(o) = &c.offsets {
        let offsets = array_buffer(cx, o)?;
        obj.set(cx, "offsets", offsets)?;
    }
    if let Some(v) = &c.validity {
        let validity = array_buffer(cx, v)?;
        obj.set(cx, "validity", validity)?;
    }
    if let Some(child) = &c.child {
        let child = column(cx, child)?;
        obj.set(cx, "child", child)?;
    }
    Ok(obj)
}

pub(crate) fn columns<'cx, C: Context<'cx>>(cx: &mut C, cols: &Columns) -> JsResult<'cx, JsObject> {
    let obj = cx.empty_object();
    let rows = cx.number(cols.rows as f64);
    obj.set(cx, "rows", rows)?;
    let arr = JsArray::new(cx, cols.columns.len());
    for (i, c) in cols.columns.iter().enumerate() {
        let col = column(cx, c)?;
        arr.set(cx, i as u32, col)?;
    }
    obj.set(cx, "columns", arr)?;
    Ok(obj)
}

/// The Arrow columns a dataset decodes to (JSON array of `ColumnPlan`).
#[neon::export(name = "decodePlan")]
fn decode_plan<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    raw_addresses: bool,
) -> JsResult<'cx, JsString> {
    let schema: Arc<Schema> = crate::schema::unbox(cx, handle)?;
    match plan_json(&schema, &options(raw_addresses)) {
        Ok(json) => Ok(cx.string(json)),
        Err(e) => throw_decode(cx, &e),
    }
}

/// Decodes `records` on the calling thread (for small buffers); `fields` (optional array of
/// names) decodes only those columns, in that order.
#[neon::export(name = "decodeRecords")]
fn decode_records<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    records: Handle<'cx, JsBuffer>,
    raw_addresses: bool,
    fields: Option<Handle<'cx, JsValue>>,
) -> JsResult<'cx, JsObject> {
    let schema: Arc<Schema> = crate::schema::unbox(cx, handle)?;
    let ix = fields_arg(cx, &schema, fields)?;
    let result = decode_columns_projected(
        &schema,
        records.as_slice(cx),
        &options(raw_addresses),
        ix.as_deref(),
    );
    match result {
        Ok(cols) => columns(cx, &cols),
        Err(e) => throw_decode(cx, &e),
    }
}

/// Decodes `records` off the event loop; resolves to the same object as `decodeRecords`. The
/// records are copied first (a JS buffer cannot be read from another thread).
#[neon::export(name = "decodeRecordsAsync")]
fn decode_records_async<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    records: Handle<'cx, JsBuffer>,
    raw_addresses: bool,
    fields: Option<Handle<'cx, JsValue>>,
) -> JsResult<'cx, JsPromise> {
    let schema: Arc<Schema> = crate::schema::unbox(cx, handle)?;
    let ix = fields_arg(cx, &schema, fields)?;
    let bytes = records.as_slice(cx).to_vec();
    let opts = options(raw_addresses);
    let promise = cx
        .task(move || decode_columns_projected(&schema, &bytes, &opts, ix.as_deref()))
        .promise(move |mut cx, result| match result {
            Ok(cols) => columns(&mut cx, &cols),
            Err(e) => throw_decode(&mut cx, &e),
        });
    Ok(promise)
}
