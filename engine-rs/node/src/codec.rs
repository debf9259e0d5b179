//! Record codec exports: map → record, NDJSON / CSV blocks → records (sync, and as Neon tasks off
//! the event loop for large blocks), and records → per-time-window buffers.

use std::sync::Arc;

use hd_engine_core::encode::csv::{parse_csv, CsvOptions};
use hd_engine_core::encode::ndjson::parse_ndjson;
use hd_engine_core::encode::windows::time_windows;
use hd_engine_core::encode::{Parsed, RecordEncoder};
use hd_engine_core::schema::Schema;
use neon::prelude::*;
use neon::types::buffer::TypedArray;
use neon::types::extract::{self, Buffer, TryIntoJs};

use crate::schema::unbox;
use crate::util::throw_coded;

/// `{ records: Buffer, count, errors: [{ line, field?, reason }], lines, header? }`.
fn parsed_to_js<'cx, C: Context<'cx>>(cx: &mut C, p: Parsed) -> JsResult<'cx, JsObject> {
    let obj = cx.empty_object();
    let records = JsBuffer::from_slice(cx, &p.records)?;
    obj.set(cx, "records", records)?;
    let count = cx.number(p.count as f64);
    obj.set(cx, "count", count)?;
    let errors = cx.empty_array();
    for (k, e) in p.errors.iter().enumerate() {
        let o = cx.empty_object();
        let line = cx.number(e.line as f64);
        o.set(cx, "line", line)?;
        if let Some(f) = &e.field {
            let f = cx.string(f);
            o.set(cx, "field", f)?;
        }
        let reason = cx.string(&e.reason);
        o.set(cx, "reason", reason)?;
        errors.set(cx, k as u32, o)?;
    }
    obj.set(cx, "errors", errors)?;
    let lines = cx.number(p.lines as f64);
    obj.set(cx, "lines", lines)?;
    if let Some(names) = &p.header {
        let header = cx.empty_array();
        for (k, n) in names.iter().enumerate() {
            let n = cx.string(n);
            header.set(cx, k as u32, n)?;
        }
        obj.set(cx, "header", header)?;
    }
    Ok(obj)
}

fn line_number(first_line: f64) -> u64 {
    if first_line.is_finite() && first_line >= 0.0 {
        first_line as u64
    } else {
        1
    }
}

/// Reference `convert_record_to_binary`: `{ record, errors: [{ field, reason }] }`. Values that are
/// not strings are reported, like values a field refuses.
#[neon::export(name = "codecConvertRecord")]
fn codec_convert_record<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    map: Handle<'cx, JsObject>,
) -> JsResult<'cx, JsObject> {
    let schema = unbox(cx, handle)?;
    let enc = RecordEncoder::new(&schema);
    let keys = map.get_own_property_names(cx)?.to_vec(cx)?;
    let mut pairs: Vec<(String, String)> = Vec::with_capacity(keys.len());
    let mut bad: Vec<String> = Vec::new();
    for k in keys {
        let key = k.to_string(cx)?.value(cx);
        let v: Handle<JsValue> = map.get(cx, key.as_str())?;
        match v.downcast::<JsString, _>(cx) {
            Ok(s) => pairs.push((key, s.value(cx))),
            Err(_) => {
                if enc.field_index(key.as_bytes()).is_some() {
                    bad.push(key);
                }
            }
        }
    }
    let (record, errors) =
        enc.convert_record_to_binary(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let obj = cx.empty_object();
    let buf = JsBuffer::from_slice(cx, &record)?;
    obj.set(cx, "record", buf)?;
    let list = cx.empty_array();
    let reasons = errors.into_iter().map(|e| (e.field, e.reason)).chain(
        bad.into_iter()
            .map(|f| (f, "value must be a string".to_string())),
    );
    for (k, (field, reason)) in reasons.enumerate() {
        let o = cx.empty_object();
        let f = cx.string(field);
        o.set(cx, "field", f)?;
        let r = cx.string(reason);
        o.set(cx, "reason", r)?;
        list.set(cx, k as u32, o)?;
    }
    obj.set(cx, "errors", list)?;
    Ok(obj)
}

/// NDJSON block → records on the calling thread (for small blocks).
#[neon::export(name = "codecParseNdjson")]
fn codec_parse_ndjson<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    buf: Handle<'cx, JsBuffer>,
    first_line: f64,
) -> JsResult<'cx, JsObject> {
    let schema = unbox(cx, handle)?;
    let parsed = parse_ndjson(
        &RecordEncoder::new(&schema),
        buf.as_slice(cx),
        line_number(first_line),
    );
    parsed_to_js(cx, parsed)
}

/// NDJSON block → records off the event loop (the block is copied first).
#[neon::export(task, name = "codecParseNdjsonAsync")]
fn codec_parse_ndjson_async(
    schema: Arc<Schema>,
    Buffer(buf): Buffer<Vec<u8>>,
    first_line: f64,
) -> impl for<'cx> TryIntoJs<'cx> {
    let parsed = parse_ndjson(&RecordEncoder::new(&schema), &buf, line_number(first_line));
    extract::with(move |cx| parsed_to_js(cx, parsed))
}

/// CSV options from the bridge's plain arguments: the header joined by `\n` (null: read from the
/// block) and a one-byte delimiter.
fn csv_options(header: Option<String>, delimiter: &str) -> Result<CsvOptions, String> {
    let d = match delimiter.as_bytes() {
        [d] if !matches!(d, b'"' | b'\r' | b'\n') && d.is_ascii() => *d,
        _ => return Err(format!("delimiter must be one ASCII character other than a quote or line break, got {delimiter:?}")),
    };
    Ok(CsvOptions {
        header: header.map(|h| h.split('\n').map(str::to_string).collect()),
        delimiter: d,
    })
}

/// CSV block → records on the calling thread.
#[neon::export(name = "codecParseCsv")]
fn codec_parse_csv<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    buf: Handle<'cx, JsBuffer>,
    first_line: f64,
    header: Option<String>,
    delimiter: String,
) -> JsResult<'cx, JsObject> {
    let schema = unbox(cx, handle)?;
    let opts = match csv_options(header, &delimiter) {
        Ok(o) => o,
        Err(m) => return throw_coded(cx, "ERR_CSV_OPTIONS", &m),
    };
    let parsed = parse_csv(
        &RecordEncoder::new(&schema),
        buf.as_slice(cx),
        line_number(first_line),
        &opts,
    );
    parsed_to_js(cx, parsed)
}

/// CSV block → records off the event loop.
#[neon::export(task, name = "codecParseCsvAsync")]
fn codec_parse_csv_async(
    schema: Arc<Schema>,
    Buffer(buf): Buffer<Vec<u8>>,
    first_line: f64,
    header: Option<String>,
    delimiter: String,
) -> impl for<'cx> TryIntoJs<'cx> {
    let result = csv_options(header, &delimiter).map(|opts| {
        parse_csv(
            &RecordEncoder::new(&schema),
            &buf,
            line_number(first_line),
            &opts,
        )
    });
    extract::with(move |cx| match result {
        Ok(parsed) => parsed_to_js(cx, parsed),
        Err(m) => throw_coded(cx, "ERR_CSV_OPTIONS", &m),
    })
}

/// Records → `[{ start, count, records }]` per time window, in order of first appearance.
#[neon::export(name = "codecTimeWindows")]
fn codec_time_windows<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    records: Handle<'cx, JsBuffer>,
    interval: f64,
) -> JsResult<'cx, JsArray> {
    let schema = unbox(cx, handle)?;
    if !(interval.is_finite()
        && (0.0..=u32::MAX as f64).contains(&interval)
        && interval.fract() == 0.0)
    {
        return throw_coded(
            cx,
            "ERR_RANGE",
            "interval must be a whole number of seconds 0..2^32-1 (0: the schema's)",
        );
    }
    let windows = match time_windows(&schema, records.as_slice(cx), interval as u32) {
        Ok(w) => w,
        Err(m) => return throw_coded(cx, "ERR_RANGE", &m),
    };
    let out = cx.empty_array();
    for (k, w) in windows.into_iter().enumerate() {
        let o = cx.empty_object();
        let start = cx.number(w.start as f64);
        o.set(cx, "start", start)?;
        let count = cx.number(w.count as f64);
        o.set(cx, "count", count)?;
        let buf = JsBuffer::from_slice(cx, &w.records)?;
        o.set(cx, "records", buf)?;
        out.set(cx, k as u32, o)?;
    }
    Ok(out)
}
