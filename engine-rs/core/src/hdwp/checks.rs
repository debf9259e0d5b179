//! The value checks shared by [`Frame::validate`](super::Frame::validate) and the batched
//! encoder: bounds, tokens, 2^53 - 1 counts and JSON objects.

use super::error::HdwpError;
use super::frame::QueryAuth;
use super::{MAX_EXACT_INT, MAX_JSON_DEPTH};

/// Record sizes are 1..=65535; zero would make `count` unbounded by the payload length.
pub(crate) fn check_record_size(record_size: u16) -> Result<(), HdwpError> {
    if record_size == 0 {
        return Err(HdwpError::invalid(
            "record size",
            "must be 1..=65535, got 0",
        ));
    }
    Ok(())
}

/// An all-zero token is what an uninitialised buffer holds; it is never issued, so never accepted.
pub(crate) fn check_token(auth: &QueryAuth) -> Result<(), HdwpError> {
    if auth.token.iter().all(|&b| b == 0) {
        return Err(HdwpError::invalid(
            "token",
            "an all-zero token is never issued",
        ));
    }
    Ok(())
}

pub(crate) fn check_len(what: &'static str, len: usize, max: usize) -> Result<(), HdwpError> {
    if len > max {
        return Err(HdwpError::TooLarge {
            what,
            len: len as u64,
            max: max as u64,
        });
    }
    Ok(())
}

pub(crate) fn check_exact(field: &'static str, v: u64) -> Result<(), HdwpError> {
    if v > MAX_EXACT_INT {
        return Err(HdwpError::invalid(field, format!("{v} is over 2^53 - 1")));
    }
    Ok(())
}

/// Checks syntax without building a tree (`IgnoredAny`), then that the top level is an object
/// nested at most [`MAX_JSON_DEPTH`] deep, so whoever parses it into a tree later (serde_json,
/// `JSON.parse`) has a bounded amount of work and stack.
pub(crate) fn check_json_object(json: &str) -> Result<(), HdwpError> {
    serde_json::from_str::<serde::de::IgnoredAny>(json).map_err(|e| HdwpError::BadJson {
        detail: e.to_string(),
    })?;
    if !json.trim_start().starts_with('{') {
        return Err(HdwpError::BadJson {
            detail: "the top-level value must be an object".into(),
        });
    }
    let depth = json_depth(json.as_bytes());
    if depth > MAX_JSON_DEPTH {
        return Err(HdwpError::BadJson {
            detail: format!("nested {depth} deep, over the limit of {MAX_JSON_DEPTH}"),
        });
    }
    Ok(())
}

/// Deepest nesting of objects and arrays in syntactically valid JSON.
fn json_depth(json: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in json {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}
