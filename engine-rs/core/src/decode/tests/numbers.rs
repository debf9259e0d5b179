//! Integers, wide integers, numerics, floats, booleans, delta time.

use super::*;

#[test]
fn small_ints_widen_to_int16_and_int32() {
    for o in ORDERS {
        let c = decode1(&one(FieldType::UInt(8), 1, o), &[0, 255, 7]);
        assert_eq!(i16s(&c), vec![0, 255, 7]);
        let c = decode1(&one(FieldType::Int(8), 1, o), &[0x80, 0x7f, 0xff]);
        assert_eq!(i16s(&c), vec![-128, 127, -1]);
        let r = cat(&[
            enc(i16::MIN.to_le_bytes(), o),
            enc(i16::MAX.to_le_bytes(), o),
        ]);
        assert_eq!(
            i16s(&decode1(&one(FieldType::Int(16), 2, o), &r)),
            vec![i16::MIN, i16::MAX]
        );
        let r = cat(&[enc(u16::MAX.to_le_bytes(), o), enc(1u16.to_le_bytes(), o)]);
        assert_eq!(
            i32s(&decode1(&one(FieldType::UInt(16), 2, o), &r)),
            vec![65535, 1]
        );
        let r = cat(&[
            enc(i32::MIN.to_le_bytes(), o),
            enc(i32::MAX.to_le_bytes(), o),
        ]);
        assert_eq!(
            i32s(&decode1(&one(FieldType::Int(32), 4, o), &r)),
            vec![i32::MIN, i32::MAX]
        );
    }
}

#[test]
fn wide_ints_widen_to_int64_and_uint64() {
    for o in ORDERS {
        let r = cat(&[enc(u32::MAX.to_le_bytes(), o), enc(0u32.to_le_bytes(), o)]);
        assert_eq!(
            i64s(&decode1(&one(FieldType::UInt(32), 4, o), &r)),
            vec![4_294_967_295, 0]
        );
        let r = cat(&[
            enc(i64::MIN.to_le_bytes(), o),
            enc(i64::MAX.to_le_bytes(), o),
        ]);
        assert_eq!(
            i64s(&decode1(&one(FieldType::Int(64), 8, o), &r)),
            vec![i64::MIN, i64::MAX]
        );
        let r = cat(&[enc(u64::MAX.to_le_bytes(), o), enc(1u64.to_le_bytes(), o)]);
        let got: Vec<u64> = vals::<8>(&decode1(&one(FieldType::UInt(64), 8, o), &r))
            .into_iter()
            .map(u64::from_ne_bytes)
            .collect();
        assert_eq!(got, vec![u64::MAX, 1]);
        let r = cat(&[enc(u32::MAX.to_le_bytes(), o)]);
        assert_eq!(
            i64s(&decode1(&one(FieldType::Timestamp, 4, o), &r)),
            vec![4_294_967_295]
        );
        let r = cat(&[enc((-5i64).to_le_bytes(), o)]);
        assert_eq!(
            i64s(&decode1(&one(FieldType::Timestamp, 8, o), &r)),
            vec![-5]
        );
    }
}

#[test]
fn int128_is_exact_decimal256() {
    for o in ORDERS {
        let r = cat(&[enc(u128::MAX.to_le_bytes(), o), enc(0u128.to_le_bytes(), o)]);
        let c = decode1(&one(FieldType::UInt(128), 16, o), &r);
        assert_eq!(c.data.len(), 64);
        assert_eq!(
            wide::decimal_text(&c.data[..32], true),
            u128::MAX.to_string()
        );
        assert_eq!(wide::decimal_text(&c.data[32..], true), "0");
        let r = cat(&[
            enc(i128::MIN.to_le_bytes(), o),
            enc(i128::MAX.to_le_bytes(), o),
            enc((-1i128).to_le_bytes(), o),
        ]);
        let c = decode1(&one(FieldType::Int(128), 16, o), &r);
        let got: Vec<String> = c
            .data
            .chunks_exact(32)
            .map(|d| wide::decimal_text(d, true))
            .collect();
        assert_eq!(
            got,
            vec![i128::MIN.to_string(), i128::MAX.to_string(), "-1".into()]
        );
    }
    let p = plan(
        &one(FieldType::UInt(128), 16, ByteOrder::Little),
        &DecodeOptions::default(),
    )
    .expect("plan");
    assert_eq!(
        p[0].ty,
        ArrowType::Decimal {
            precision: 39,
            scale: 0,
            bit_width: 256
        }
    );
}

#[test]
fn int256_is_decimal_text() {
    let max_u = [0xffu8; 32];
    let mut min_i = [0u8; 32];
    min_i[31] = 0x80;
    let mut max_i = [0xffu8; 32];
    max_i[31] = 0x7f;
    let mut ten19 = [0u8; 32];
    ten19[..8].copy_from_slice(&10_000_000_000_000_000_000u64.to_le_bytes());
    for o in ORDERS {
        let r = cat(&[enc(max_u, o), enc([0u8; 32], o), enc(ten19, o)]);
        assert_eq!(
            strs(&decode1(&one(FieldType::UInt(256), 32, o), &r)),
            vec![
                "115792089237316195423570985008687907853269984665640564039457584007913129639935",
                "0",
                "10000000000000000000"
            ]
        );
        let r = cat(&[enc(min_i, o), enc(max_i, o), enc(max_u, o)]);
        assert_eq!(
            strs(&decode1(&one(FieldType::Int(256), 32, o), &r)),
            vec![
                "-57896044618658097711785492504343953926634992332820282019728792003956564819968",
                "57896044618658097711785492504343953926634992332820282019728792003956564819967",
                "-1"
            ]
        );
    }
}

#[test]
fn numeric_is_decimal_with_out_of_precision_as_null() {
    for o in ORDERS {
        let ty = FieldType::Numeric {
            precision: 9,
            scale: 4,
        };
        let r = cat(&[
            enc((-123_456i64).to_le_bytes(), o),
            enc(999_999_999i64.to_le_bytes(), o),
            enc(1_000_000_000i64.to_le_bytes(), o),
        ]);
        let c = decode1(&one(ty, 8, o), &r);
        assert_eq!(c.data.len(), 3 * 16);
        let got: Vec<i128> = vals::<16>(&c)
            .into_iter()
            .map(i128::from_ne_bytes)
            .collect();
        assert_eq!(&got[..2], &[-123_456, 999_999_999]);
        assert_eq!(
            (valid(&c, 0), valid(&c, 1), valid(&c, 2), c.null_count),
            (true, true, false, 1)
        );
        // 256-bit storage, precision 76: Decimal256, words little-endian.
        let ty = FieldType::Numeric {
            precision: 76,
            scale: 2,
        };
        let mut over = [0xffu8; 32];
        over[31] = 0x7f; // 2^255 - 1 > 10^76
        let r = cat(&[enc([0xffu8; 32], o), enc(over, o)]);
        let c = decode1(&one(ty, 32, o), &r);
        assert_eq!(wide::decimal_text(&c.data[..32], true), "-1");
        assert_eq!(
            (valid(&c, 0), valid(&c, 1)),
            (true, false),
            "2^255-1 exceeds 10^76"
        );
        // 4-byte storage, precision 38 → Decimal128, negative sign-extended.
        let c = decode1(
            &one(
                FieldType::Numeric {
                    precision: 38,
                    scale: 0,
                },
                4,
                o,
            ),
            &enc((-7i32).to_le_bytes(), o),
        );
        assert_eq!(i128::from_ne_bytes(buf::arr(&c.data)), -7);
    }
}

#[test]
fn floats_keep_nan_and_signed_zero() {
    for o in ORDERS {
        let r = cat(&[
            enc(f32::NAN.to_le_bytes(), o),
            enc((-0.0f32).to_le_bytes(), o),
            enc(f32::INFINITY.to_le_bytes(), o),
        ]);
        let got: Vec<f32> = vals::<4>(&decode1(&one(FieldType::Float, 4, o), &r))
            .into_iter()
            .map(f32::from_ne_bytes)
            .collect();
        assert!(got[0].is_nan());
        assert!(got[1] == 0.0 && got[1].is_sign_negative());
        assert_eq!(got[2], f32::INFINITY);
        let r = cat(&[
            enc(f64::MIN.to_le_bytes(), o),
            enc(f64::NAN.to_le_bytes(), o),
        ]);
        let got: Vec<f64> = vals::<8>(&decode1(&one(FieldType::Double, 8, o), &r))
            .into_iter()
            .map(f64::from_ne_bytes)
            .collect();
        assert_eq!(got[0], f64::MIN);
        assert!(got[1].is_nan());
    }
}

#[test]
fn booleans_are_bit_packed() {
    let r = [1u8, 0, 0, 1, 1, 1, 0, 0, 2, 0];
    let c = decode1(&one(FieldType::Boolean, 1, ByteOrder::Little), &r);
    assert_eq!(c.len, 10);
    assert_eq!(c.data, vec![0b0011_1001, 0b0000_0001]);
}

#[test]
fn delta_time_is_absolute_in_each_unit() {
    for o in ORDERS {
        for (unit, factor) in [
            (TimeUnit::Seconds, 1i64),
            (TimeUnit::Milliseconds, 1_000),
            (TimeUnit::Microseconds, 1_000_000),
            (TimeUnit::Nanoseconds, 1_000_000_000),
        ] {
            let mut dt = field("dt", 8, 4, FieldType::UInt(32));
            dt.time_reference = Some(TimeReference { field: 0, unit });
            let mut sdt = field("sdt", 12, 2, FieldType::Int(16));
            sdt.time_reference = Some(TimeReference { field: 0, unit });
            let s = schema(
                14,
                o,
                vec![field("ts", 0, 8, FieldType::Timestamp), dt, sdt],
                vec![],
            );
            let rec = |ts: i64, d: u32, sd: i16| {
                cat(&[
                    enc(ts.to_le_bytes(), o),
                    enc(d.to_le_bytes(), o),
                    enc(sd.to_le_bytes(), o),
                ])
            };
            let r = cat(&[
                rec(1_700_000_000, 1234, -5),
                rec(0, u32::MAX, i16::MIN),
                rec(i64::MAX / 2, 0, 0),
            ]);
            let cols = decode_columns(&s, &r).expect("decode");
            let d = &cols.columns[1];
            assert_eq!(
                i64s(d)[..2],
                [1_700_000_000 * factor + 1234, u32::MAX as i64]
            );
            assert_eq!(
                i64s(&cols.columns[2])[..2],
                [1_700_000_000 * factor - 5, i16::MIN as i64]
            );
            // i64::MAX / 2 seconds overflows Int64 in every unit but seconds.
            assert_eq!(valid(d, 2), unit == TimeUnit::Seconds, "{unit:?}");
        }
    }
}
