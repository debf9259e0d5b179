//! PostgreSQL text rows (`hd-engine-core::pg_text`): hd_sql's PostgreSQL door hands a block of a
//! result's column buffers and gets the block's DataRow (or COPY CopyData) messages back in one Buffer.

use hd_engine_core::pg_text::{write_copy_rows, write_data_rows, Cells, PgTextError, TextColumn};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::util::throw_coded;

/// Column kinds, as `engine-rs/pgTextRows.ts` numbers them.
const INT: f64 = 0.0;
const FLOAT: f64 = 1.0;
const BOOL: f64 = 2.0;
const TEXT: f64 = 3.0;
const LABELS: f64 = 4.0;

/// One column descriptor's handles, read before any buffer is borrowed.
struct Desc<'cx> {
    kind: f64,
    width: u8,
    signed: bool,
    offset: usize,
    data: Handle<'cx, JsTypedArray<u8>>,
    offsets: Option<Handle<'cx, JsTypedArray<u8>>>,
    labels: Option<Handle<'cx, JsTypedArray<u8>>>,
    label_offsets: Option<Handle<'cx, JsTypedArray<u8>>>,
    validity: Option<(Handle<'cx, JsTypedArray<u8>>, usize)>,
}

fn bytes_prop<'cx>(
    cx: &mut FunctionContext<'cx>,
    o: Handle<'cx, JsObject>,
    key: &str,
) -> NeonResult<Option<Handle<'cx, JsTypedArray<u8>>>> {
    let v: Handle<JsValue> = o.get_value(cx, key)?;
    if v.is_a::<JsUndefined, _>(cx) || v.is_a::<JsNull, _>(cx) {
        return Ok(None);
    }
    match v.downcast::<JsTypedArray<u8>, _>(cx) {
        Ok(b) => Ok(Some(b)),
        Err(_) => cx.throw_type_error(format!("column property '{key}' must be a Uint8Array")),
    }
}

fn count_prop<'cx>(
    cx: &mut FunctionContext<'cx>,
    o: Handle<'cx, JsObject>,
    key: &str,
) -> NeonResult<f64> {
    let v: Handle<JsValue> = o.get_value(cx, key)?;
    match v.downcast::<JsNumber, _>(cx) {
        Ok(n) if n.value(cx) >= 0.0 && n.value(cx).fract() == 0.0 => Ok(n.value(cx)),
        _ => cx.throw_type_error(format!(
            "column property '{key}' must be a whole number ≥ 0"
        )),
    }
}

fn desc<'cx>(cx: &mut FunctionContext<'cx>, v: Handle<'cx, JsValue>) -> NeonResult<Desc<'cx>> {
    let Ok(o) = v.downcast::<JsObject, _>(cx) else {
        return cx.throw_type_error("each column must be an object");
    };
    let kind = count_prop(cx, o, "kind")?;
    let width = count_prop(cx, o, "width")?.min(255.0) as u8;
    let signed: Handle<JsValue> = o.get_value(cx, "signed")?;
    let signed = signed
        .downcast::<JsBoolean, _>(cx)
        .map(|b| b.value(cx))
        .unwrap_or(false);
    let offset = count_prop(cx, o, "offset")? as usize;
    let Some(data) = bytes_prop(cx, o, "data")? else {
        return cx.throw_type_error("column property 'data' must be a Uint8Array");
    };
    let offsets = bytes_prop(cx, o, "offsets")?;
    let labels = bytes_prop(cx, o, "labels")?;
    let label_offsets = bytes_prop(cx, o, "labelOffsets")?;
    let validity = match bytes_prop(cx, o, "validity")? {
        Some(b) => Some((b, count_prop(cx, o, "validityOffset")? as usize)),
        None => None,
    };
    Ok(Desc {
        kind,
        width,
        signed,
        offset,
        data,
        offsets,
        labels,
        label_offsets,
        validity,
    })
}

/// Labels `data[lo[k]..lo[k + 1]]` from i32 offsets; None when an offset is out of range.
fn labels_of<'a>(data: &'a [u8], offsets: &[u8]) -> Option<Vec<&'a [u8]>> {
    let at = |k: usize| -> Option<usize> {
        let b = offsets.get(k * 4..k * 4 + 4)?;
        usize::try_from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok()
    };
    let n = (offsets.len() / 4).checked_sub(1)?;
    (0..n).map(|k| data.get(at(k)?..at(k + 1)?)).collect()
}

/// A writer of rows `from..to` of columns as messages (`write_data_rows`, `write_copy_rows`).
type RowsWriter = fn(&[TextColumn<'_>], usize, usize, &mut Vec<u8>) -> Result<(), PgTextError>;

/// The messages `write` makes of rows `from..to` of the columns described by `columns`.
fn rows_of<'cx>(
    cx: &mut FunctionContext<'cx>,
    columns: Handle<'cx, JsArray>,
    from: f64,
    to: f64,
    write: RowsWriter,
) -> JsResult<'cx, JsBuffer> {
    if !(from >= 0.0 && to >= from && to.fract() == 0.0 && from.fract() == 0.0) {
        return cx.throw_range_error(format!("row range {from}..{to} is not a range of rows"));
    }
    let items = columns.to_vec(cx)?;
    let mut descs = Vec::with_capacity(items.len());
    for item in items {
        descs.push(desc(cx, item)?);
    }
    let mut cols = Vec::with_capacity(descs.len());
    for (c, d) in descs.iter().enumerate() {
        let data = d.data.as_slice(&*cx);
        let cells = match d.kind {
            INT => Cells::Int {
                data,
                width: d.width,
                signed: d.signed,
            },
            FLOAT => Cells::Float {
                data,
                width: d.width,
            },
            BOOL => Cells::Bool {
                bits: data,
                offset: d.offset,
            },
            TEXT => {
                let Some(offsets) = d.offsets.as_ref().map(|o| o.as_slice(&*cx)) else {
                    return cx.throw_type_error(format!("column {c}: 'offsets' is missing"));
                };
                Cells::Text { offsets, data }
            }
            LABELS => {
                let label_bytes = d.labels.as_ref().map(|o| o.as_slice(&*cx)).unwrap_or(&[]);
                let bounds = d
                    .label_offsets
                    .as_ref()
                    .map(|o| o.as_slice(&*cx))
                    .unwrap_or(&[]);
                let Some(labels) = labels_of(label_bytes, bounds) else {
                    return cx.throw_range_error(format!(
                        "column {c}: label offsets outside the label bytes"
                    ));
                };
                Cells::Labels {
                    codes: data,
                    width: d.width,
                    signed: d.signed,
                    labels,
                }
            }
            k => return cx.throw_type_error(format!("column {c}: unknown kind {k}")),
        };
        let validity = d.validity.as_ref().map(|(b, off)| (b.as_slice(&*cx), *off));
        cols.push(TextColumn { cells, validity });
    }
    let mut out = Vec::new();
    if let Err(e) = write(&cols, from as usize, to as usize, &mut out) {
        return throw_coded(cx, e.code(), &e.to_string());
    }
    JsBuffer::from_slice(cx, &out)
}

/// DataRow messages, text format, for rows `from..to` of the columns described by `columns`
/// (see `engine-rs/pgTextRows.ts`).
#[neon::export(name = "pgTextDataRows")]
fn pg_text_data_rows<'cx>(
    cx: &mut FunctionContext<'cx>,
    columns: Handle<'cx, JsArray>,
    from: f64,
    to: f64,
) -> JsResult<'cx, JsBuffer> {
    rows_of(cx, columns, from, to, write_data_rows)
}

/// `COPY ... TO STDOUT` text rows (CopyData messages) for rows `from..to` of the described columns.
#[neon::export(name = "pgTextCopyRows")]
fn pg_text_copy_rows<'cx>(
    cx: &mut FunctionContext<'cx>,
    columns: Handle<'cx, JsArray>,
    from: f64,
    to: f64,
) -> JsResult<'cx, JsBuffer> {
    rows_of(cx, columns, from, to, write_copy_rows)
}
