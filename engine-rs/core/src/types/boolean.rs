//! boolean: one byte, 0 or 1. Text: true/false, t/f, yes/no, y/n, on/off, 1/0 (any letter case).

use super::quote;

/// Encodes a boolean into one byte.
pub fn encode_bool(text: &str, out: &mut [u8]) -> Result<(), String> {
    let v = match text {
        "true" | "1" => 1,
        "false" | "0" => 0,
        _ => match text.to_ascii_lowercase().as_str() {
            "true" | "t" | "yes" | "y" | "on" => 1,
            "false" | "f" | "no" | "n" | "off" => 0,
            _ => {
                return Err(format!(
                    "expected a boolean (true/false), got {}",
                    quote(text)
                ))
            }
        },
    };
    out[0] = v;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans() {
        let mut o = [9u8];
        for (t, v) in [
            ("true", 1),
            ("FALSE", 0),
            ("Yes", 1),
            ("0", 0),
            ("1", 1),
            ("off", 0),
        ] {
            encode_bool(t, &mut o).unwrap();
            assert_eq!(o[0], v, "{t}");
        }
        assert!(encode_bool("2", &mut o).is_err());
        assert!(encode_bool("maybe", &mut o)
            .unwrap_err()
            .contains("boolean"));
    }
}
