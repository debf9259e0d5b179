//! Fuzzes schema JSON parsing and validation with arbitrary bytes. Beyond "never panics", every
//! schema that validates must describe itself as canonical JSON that parses back to the same
//! schema, and encoding an empty record with it must give a record of `record_size` bytes.

use hd_engine_core::encode::RecordEncoder;
use hd_engine_core::schema::{describe, parse};

/// The target: never panics on any input, and holds the properties above.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse(text) {
        Ok(schema) => {
            let again = parse(&describe(&schema)).expect("canonical JSON must validate");
            assert_eq!(again, schema);
            let (rec, errors) =
                RecordEncoder::new(&schema).convert_record_to_binary(std::iter::empty());
            assert_eq!(rec.len(), schema.record_size);
            assert!(errors.is_empty());
        }
        Err(issues) => assert!(
            !issues.is_empty(),
            "a refused schema names at least one problem"
        ),
    }
}
