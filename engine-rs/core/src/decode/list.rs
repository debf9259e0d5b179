//! Array fields → List<element>: every row holds the array's `count` element slots, so the
//! offsets are `row * count`; the element column is built by the element type's own builder.

use super::{Builder, Column, DecodeError};

pub(crate) struct List {
    child: Box<dyn Builder>,
    count: usize,
    rows: usize,
}

impl List {
    pub fn new(
        name: &str,
        child: Box<dyn Builder>,
        count: usize,
        rows: usize,
    ) -> Result<Self, DecodeError> {
        if rows
            .checked_mul(count)
            .is_none_or(|n| n > i32::MAX as usize)
        {
            return Err(DecodeError::TooLarge {
                column: name.to_string(),
            });
        }
        Ok(List { child, count, rows })
    }
}

impl Builder for List {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        self.child.extend(records)
    }

    fn finish(self: Box<Self>) -> Column {
        let mut offsets = Vec::with_capacity((self.rows + 1) * 4);
        for r in 0..=self.rows {
            // Fits: `new` checked rows * count <= i32::MAX.
            offsets.extend_from_slice(&((r * self.count) as i32).to_ne_bytes());
        }
        let child = self.child.finish();
        Column {
            len: self.rows,
            null_count: 0,
            validity: None,
            offsets: Some(offsets),
            data: Vec::new(),
            child: Some(Box::new(child)),
        }
    }
}
