//! float (IEEE 754 binary32, 4 bytes) and double (binary64, 8 bytes) in the dataset's byte order.
//! Text is anything Rust's float parser takes: `1.5`, `-2e-3`, `inf`, `NaN`.

use super::quote;
use crate::schema::ByteOrder;

/// Encodes a float (`out.len() == 4`) or a double (`out.len() == 8`).
pub fn encode_float(text: &str, out: &mut [u8], order: ByteOrder) -> Result<(), String> {
    let bad = || format!("expected a number, got {}", quote(text));
    if out.len() == 4 {
        let v: f32 = text.parse().map_err(|_| bad())?;
        let bytes = match order {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        };
        out.copy_from_slice(&bytes);
    } else {
        let v: f64 = text.parse().map_err(|_| bad())?;
        let bytes = match order {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        };
        out.copy_from_slice(&bytes);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats() {
        let mut o4 = [0u8; 4];
        encode_float("1.5", &mut o4, ByteOrder::Little).unwrap();
        assert_eq!(f32::from_le_bytes(o4), 1.5);
        let mut o8 = [0u8; 8];
        encode_float("-2e-3", &mut o8, ByteOrder::Big).unwrap();
        assert_eq!(f64::from_be_bytes(o8), -2e-3);
        encode_float("NaN", &mut o8, ByteOrder::Little).unwrap();
        assert!(f64::from_le_bytes(o8).is_nan());
        assert!(encode_float("1,5", &mut o8, ByteOrder::Little)
            .unwrap_err()
            .contains("expected a number"));
    }
}
