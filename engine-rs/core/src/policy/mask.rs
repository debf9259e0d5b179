//! The record field mask: one byte per record byte, 0xff where the identity may see the byte and
//! 0x00 where a hidden field lies. Applying it ANDs every record with the mask in place, so a
//! hidden field reaches the client as zeros whatever the query asked.

/// The mask does not fit the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskError(pub String);

impl std::fmt::Display for MaskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MaskError {}

/// ANDs every `mask.len()`-byte record of `records` with `mask`, in place.
pub fn apply_field_mask(records: &mut [u8], mask: &[u8]) -> Result<(), MaskError> {
    if mask.is_empty() {
        return Err(MaskError("the field mask is empty".to_string()));
    }
    if !records.len().is_multiple_of(mask.len()) {
        return Err(MaskError(format!(
            "{} bytes are not whole records of {} bytes (the mask's length)",
            records.len(),
            mask.len()
        )));
    }
    for record in records.chunks_exact_mut(mask.len()) {
        for (b, m) in record.iter_mut().zip(mask) {
            *b &= *m;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroes_hidden_bytes_of_every_record() {
        let mut r = vec![0xabu8; 12];
        apply_field_mask(&mut r, &[0xff, 0x00, 0x00, 0xff]).expect("fits");
        assert_eq!(r, [0xab, 0, 0, 0xab].repeat(3));
    }

    #[test]
    fn refuses_a_mask_that_does_not_fit() {
        assert!(apply_field_mask(&mut [0u8; 10], &[0xff; 4]).is_err());
        assert!(apply_field_mask(&mut [0u8; 10], &[]).is_err());
    }
}
