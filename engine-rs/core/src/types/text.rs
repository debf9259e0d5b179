//! string and blob: UTF-8 zero-padded on the right; text longer than the field is an error (never
//! cut, so no value is silently changed). bytes: hex digits (optional `0x`), or base64 after a
//! `base64:` prefix; shorter input is zero-padded on the right.

use super::quote;

/// Encodes UTF-8 text (string, blob) into the field, zero padding the rest.
pub fn encode_text(text: &str, out: &mut [u8]) -> Result<(), String> {
    let b = text.as_bytes();
    if b.len() > out.len() {
        return Err(format!(
            "text is {} bytes, the field holds {}",
            b.len(),
            out.len()
        ));
    }
    out[..b.len()].copy_from_slice(b);
    out[b.len()..].fill(0);
    Ok(())
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn b64_val(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

/// Encodes raw bytes given as hex (`0a1b`, `0x0A1B`) or `base64:...` (standard or URL alphabet,
/// padding optional).
pub fn encode_bytes(text: &str, out: &mut [u8]) -> Result<(), String> {
    out.fill(0);
    if let Some(b64) = text.strip_prefix("base64:") {
        let src = b64.trim_end_matches('=').as_bytes();
        let mut n = 0;
        let mut acc: u32 = 0;
        let mut bits = 0;
        for &c in src {
            let v = b64_val(c).ok_or_else(|| format!("expected base64, got {}", quote(text)))?;
            acc = (acc << 6) | v as u32;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                if n >= out.len() {
                    return Err(format!(
                        "value holds more than the field's {} bytes",
                        out.len()
                    ));
                }
                out[n] = (acc >> bits) as u8;
                n += 1;
            }
        }
        if src.len() % 4 == 1 {
            return Err(format!("expected base64, got {}", quote(text)));
        }
        return Ok(());
    }
    let hex = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text)
        .as_bytes();
    if !hex.len().is_multiple_of(2) {
        return Err(format!("expected hex digits in pairs, got {}", quote(text)));
    }
    if hex.len() / 2 > out.len() {
        return Err(format!(
            "value is {} bytes, the field holds {}",
            hex.len() / 2,
            out.len()
        ));
    }
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        match (hex_val(pair[0]), hex_val(pair[1])) {
            (Some(h), Some(l)) => out[i] = h << 4 | l,
            _ => return Err(format!("expected hex digits, got {}", quote(text))),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_pads_and_refuses_overflow() {
        let mut o = [9u8; 6];
        encode_text("héllo", &mut o).unwrap();
        assert_eq!(&o, b"h\xc3\xa9llo");
        encode_text("ab", &mut o).unwrap();
        assert_eq!(&o, b"ab\0\0\0\0");
        assert!(encode_text("toolong!", &mut o)
            .unwrap_err()
            .contains("8 bytes, the field holds 6"));
    }

    #[test]
    fn bytes_hex_and_base64() {
        let mut o = [9u8; 4];
        encode_bytes("0xA0b1", &mut o).unwrap();
        assert_eq!(o, [0xa0, 0xb1, 0, 0]);
        encode_bytes("base64:3q2+7w==", &mut o).unwrap();
        assert_eq!(o, [0xde, 0xad, 0xbe, 0xef]);
        encode_bytes("base64:3q2-7w", &mut o).unwrap();
        assert_eq!(o, [0xde, 0xad, 0xbe, 0xef]);
        assert!(encode_bytes("abc", &mut o).is_err());
        assert!(encode_bytes("zz", &mut o).is_err());
        assert!(encode_bytes("0102030405", &mut o).is_err());
        assert!(encode_bytes("base64:AAAAAAAA", &mut o).is_err());
        assert!(encode_bytes("base64:A", &mut o).is_err());
        assert!(encode_bytes("base64:@@", &mut o).is_err());
    }
}
