//! Errors, enums, arrays, blocks and chunking, the plan.

use super::*;

#[test]
fn wrong_length_is_a_clear_error() {
    let s = one(FieldType::UInt(32), 4, ByteOrder::Little);
    let err = decode_columns(&s, &[0u8; 10]).unwrap_err();
    assert_eq!(
        err,
        DecodeError::RecordLength {
            dataset: "t".into(),
            len: 10,
            record_size: 4,
            rest: 2
        }
    );
    assert!(
        err.to_string()
            .contains("not a whole number of 4-byte records"),
        "{err}"
    );
    assert_eq!(decode_columns(&s, &[]).map(|c| c.rows), Ok(0));
}

#[test]
fn field_outside_record_is_rejected() {
    let s = schema(
        4,
        ByteOrder::Little,
        vec![field("v", 2, 4, FieldType::UInt(32))],
        vec![],
    );
    assert!(matches!(
        decode_columns(&s, &[0; 4]),
        Err(DecodeError::Schema { .. })
    ));
    let s = schema(
        4,
        ByteOrder::Little,
        vec![field("v", 0, 2, FieldType::UInt(32))],
        vec![],
    );
    assert!(matches!(
        decode_columns(&s, &[0; 4]),
        Err(DecodeError::Schema { .. })
    ));
}

#[test]
fn enums_are_dictionary_indices_with_default_for_unknown() {
    for o in ORDERS {
        for (ty, size) in [
            (FieldType::UInt(8), 1),
            (FieldType::UInt(16), 2),
            (FieldType::UInt(64), 8),
            (FieldType::UInt(128), 16),
        ] {
            let mut f = field("p", 0, size, ty);
            f.enumeration = Some(0);
            let s = schema(size, o, vec![f], vec![proto_enum()]);
            let code = |c: u8| {
                let mut v = vec![0u8; size];
                v[if o == ByteOrder::Big { size - 1 } else { 0 }] = c;
                v
            };
            let mut high = vec![0u8; size];
            high[if o == ByteOrder::Big { 0 } else { size - 1 }] = 1;
            let r = cat(&[code(6), code(1), code(17), code(0), code(200), high.clone()]);
            let p = plan(&s, &DecodeOptions::default()).expect("plan");
            assert_eq!(
                p[0].ty,
                ArrowType::Dictionary {
                    labels: vec!["icmp".into(), "tcp".into(), "udp".into(), "other".into()]
                }
            );
            let c = decode1(&s, &r);
            // For one byte the "high" byte is the code itself (1, icmp); wider, it is a code beyond the labels.
            let want = if size == 1 {
                vec![1, 0, 2, 3, 3, 0]
            } else {
                vec![1, 0, 2, 3, 3, 3]
            };
            assert_eq!(i32s(&c), want, "{size} bytes");
        }
    }
    // A default label that is also a code's label appears once; a sparse (large) code space works.
    let def = EnumDef {
        name: "e".into(),
        labels: vec![(1 << 40, "big".into()), (2, "none".into())],
        default_label: "none".into(),
    };
    let mut f = field("p", 0, 8, FieldType::UInt(64));
    f.enumeration = Some(0);
    let s = schema(8, ByteOrder::Little, vec![f], vec![def]);
    let r = cat(&[
        (1u64 << 40).to_le_bytes().to_vec(),
        3u64.to_le_bytes().to_vec(),
        2u64.to_le_bytes().to_vec(),
    ]);
    assert_eq!(
        plan(&s, &DecodeOptions::default()).expect("plan")[0].ty,
        ArrowType::Dictionary {
            labels: vec!["none".into(), "big".into()]
        }
    );
    assert_eq!(i32s(&decode1(&s, &r)), vec![1, 0, 0]);
}

#[test]
fn arrays_are_lists_with_enum_labels() {
    for o in ORDERS {
        let mut ports = field("ports", 0, 8, FieldType::Bytes);
        ports.array = Some(ArraySpec {
            element: FieldType::UInt(16),
            element_size: 2,
            count: 3,
            enumeration: None,
        });
        let mut tags = field("tags", 8, 4, FieldType::Bytes);
        tags.array = Some(ArraySpec {
            element: FieldType::UInt(8),
            element_size: 1,
            count: 4,
            enumeration: Some(0),
        });
        let s = schema(12, o, vec![ports, tags], vec![proto_enum()]);
        let rec = |p: [u16; 3], t: [u8; 4]| {
            let mut v: Vec<u8> = p.iter().flat_map(|x| enc(x.to_le_bytes(), o)).collect();
            v.extend_from_slice(&[0, 0]);
            v.extend_from_slice(&t);
            v
        };
        let r = cat(&[
            rec([80, 443, 65535], [6, 17, 99, 1]),
            rec([0, 0, 0], [0, 0, 0, 0]),
        ]);
        let cols = decode_columns(&s, &r).expect("decode");
        let ports = &cols.columns[0];
        assert_eq!(ports.len, 2);
        assert_eq!(
            i32s(&Column {
                data: ports.offsets.clone().unwrap_or_default(),
                ..ports.clone()
            }),
            vec![0, 3, 6]
        );
        let child = ports.child.as_deref().expect("child");
        assert_eq!(i32s(child), vec![80, 443, 65535, 0, 0, 0]);
        let tags = cols.columns[1].child.as_deref().expect("child");
        assert_eq!(i32s(tags), vec![1, 2, 3, 0, 3, 3, 3, 3]);
        let p = plan(&s, &DecodeOptions::default()).expect("plan");
        assert_eq!(
            p[0].ty,
            ArrowType::List {
                element: Box::new(ArrowType::Int {
                    bit_width: 32,
                    signed: true
                })
            }
        );
        assert_eq!(
            p[1].metadata.get("hd.enum").map(String::as_str),
            Some("proto")
        );
    }
}

/// A mixed record of every non-chess family, used to check blocks and chunking.
fn mixed() -> (Schema, Vec<u8>) {
    let mut e = field("e", 4, 1, FieldType::UInt(8));
    e.enumeration = Some(0);
    let fields = vec![
        field("ts", 0, 4, FieldType::Timestamp),
        e,
        field("s", 5, 7, FieldType::String),
        field("ip", 12, 16, FieldType::Ipv6),
        field(
            "n",
            28,
            8,
            FieldType::Numeric {
                precision: 18,
                scale: 3,
            },
        ),
        field("b", 36, 1, FieldType::Boolean),
    ];
    let s = schema(37, ByteOrder::Little, fields, vec![proto_enum()]);
    let mut r = Vec::new();
    for i in 0..20_000u32 {
        let mut rec = vec![0u8; 37];
        rec[..4].copy_from_slice(&i.to_le_bytes());
        rec[4] = (i % 20) as u8;
        let txt = format!("r{}", i % 1000);
        rec[5..5 + txt.len()].copy_from_slice(txt.as_bytes());
        rec[12 + (i % 16) as usize] = i as u8;
        rec[28..36].copy_from_slice(&(i as i64 * -7).to_le_bytes());
        rec[36] = (i % 3 == 0) as u8;
        r.extend_from_slice(&rec);
    }
    (s, r)
}

#[test]
fn many_blocks_match_chunked_decodes() {
    let (s, r) = mixed();
    let whole = decode_columns(&s, &r).expect("whole");
    assert_eq!(whole.rows, 20_000);
    assert!(
        r.len() > 2 * BLOCK_BYTES,
        "the test must cross block boundaries"
    );
    let cols = &whole.columns;
    assert_eq!(i64s(&cols[0])[19_999], 19_999);
    assert_eq!(i32s(&cols[1])[..7], [3, 0, 3, 3, 3, 3, 1]);
    assert_eq!(strs(&cols[2])[1234], "r234");
    assert_eq!(strs(&cols[3])[17], "11::");
    let bits = |c: &Column| -> Vec<bool> {
        (0..c.len)
            .map(|i| c.data[i / 8] >> (i % 8) & 1 == 1)
            .collect()
    };
    let render = |c: &[Column]| {
        (
            i64s(&c[0]),
            i32s(&c[1]),
            strs(&c[2]),
            strs(&c[3]),
            vals::<16>(&c[4]),
            bits(&c[5]),
        )
    };
    let want = render(cols);
    for records_per_chunk in [1usize, 7, 1000, 7001] {
        let mut got = (vec![], vec![], vec![], vec![], vec![], vec![]);
        for part in r.chunks(records_per_chunk * 37) {
            let c = render(&decode_columns(&s, part).expect("chunk").columns);
            got.0.extend(c.0);
            got.1.extend(c.1);
            got.2.extend(c.2);
            got.3.extend(c.3);
            got.4.extend(c.4);
            got.5.extend(c.5);
        }
        assert!(got == want, "{records_per_chunk} records per chunk");
    }
}

#[test]
fn plan_metadata_names_the_hd_type() {
    let mut dt = field("dt", 8, 4, FieldType::UInt(32));
    dt.time_reference = Some(TimeReference {
        field: 0,
        unit: TimeUnit::Milliseconds,
    });
    let s = schema(
        28,
        ByteOrder::Little,
        vec![
            field("ts", 0, 8, FieldType::Timestamp),
            dt,
            field("a", 12, 16, FieldType::Ipv6),
        ],
        vec![],
    );
    let p = plan(
        &s,
        &DecodeOptions {
            addresses: Addresses::Raw,
        },
    )
    .expect("plan");
    assert_eq!(
        p[0].metadata.get("hd.type").map(String::as_str),
        Some("timestamp")
    );
    assert_eq!(
        p[1].metadata.get("hd.time_reference").map(String::as_str),
        Some("ts")
    );
    assert_eq!(
        p[1].metadata.get("hd.time_unit").map(String::as_str),
        Some("ms")
    );
    assert_eq!(p[2].ty, ArrowType::FixedSizeBinary { byte_width: 16 });
    assert_eq!(
        p[2].metadata.get("hd.addresses").map(String::as_str),
        Some("raw")
    );
    let json = serde_json::to_string(&p[2]).expect("json");
    assert!(
        json.contains(r#""type":{"kind":"fixedSizeBinary","byteWidth":16}"#),
        "{json}"
    );
}
