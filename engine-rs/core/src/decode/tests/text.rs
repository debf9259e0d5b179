//! Strings, blobs, bytes, addresses.

use std::net::Ipv6Addr;

use super::*;

#[test]
fn strings_strip_padding_and_replace_invalid_utf8() {
    let mut r = Vec::new();
    r.extend_from_slice(&[0u8; 6]);
    r.extend_from_slice(b"abcdef");
    r.extend_from_slice(b"ab\0\0\0\0");
    r.extend_from_slice(b"a\0b\0\0\0");
    r.extend_from_slice(&[b'x', 0xff, b'y', 0xc3, 0, 0]);
    r.extend_from_slice("é€\0".as_bytes());
    for ty in [FieldType::String, FieldType::Blob] {
        let c = decode1(&one(ty, 6, ByteOrder::Little), &r);
        assert_eq!(
            strs(&c),
            vec!["", "abcdef", "ab", "a\0b", "x\u{fffd}y\u{fffd}", "é€"]
        );
    }
}

#[test]
fn bytes_are_binary_as_stored() {
    let r = [0u8, 1, 0, 0xff, 0, 0];
    let c = decode1(&one(FieldType::Bytes, 3, ByteOrder::Little), &r);
    assert_eq!(c.offsets.as_deref().map(|o| o.len()), Some(12));
    assert_eq!(c.data, r.to_vec());
}

#[test]
fn ipv4_text_and_raw() {
    for o in ORDERS {
        let r = cat(&[
            enc(0x0102_0304u32.to_le_bytes(), o),
            enc(u32::MAX.to_le_bytes(), o),
            enc(0u32.to_le_bytes(), o),
        ]);
        let s = one(FieldType::Ipv4, 4, o);
        assert_eq!(
            strs(&decode1(&s, &r)),
            vec!["1.2.3.4", "255.255.255.255", "0.0.0.0"]
        );
        let raw = decode_columns_with(
            &s,
            &r,
            &DecodeOptions {
                addresses: Addresses::Raw,
            },
        )
        .expect("raw");
        let got: Vec<u32> = vals::<4>(&raw.columns[0])
            .into_iter()
            .map(u32::from_ne_bytes)
            .collect();
        assert_eq!(got, vec![0x0102_0304, u32::MAX, 0]);
    }
}

#[test]
fn ipv4_text_matches_std_for_every_octet_value() {
    // Each octet value in each position, so every table entry and text length is written.
    let addrs: Vec<u32> = (0..=255u32)
        .flat_map(|v| [v << 24 | 0x0a_0000, v << 16 | 7, v << 8 | 0xc8_000000, v])
        .collect();
    let r: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
    let got = strs(&decode1(&one(FieldType::Ipv4, 4, ByteOrder::Little), &r));
    let want: Vec<String> = addrs
        .iter()
        .map(|&a| std::net::Ipv4Addr::from(a).to_string())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn ipv6_text_is_rfc5952() {
    let cases = [
        "::",
        "::1",
        "::ffff:1.2.3.4",
        "2001:db8::1",
        "1::",
        "1:0:0:2::3",
        "1:0:1:0:1:0:1:0",
        "fe80::1:0:0:0",
        "0:2:3:4:5:6:7:8",
        "1::2:0:0:3:4",
        "1:2:3:4:5:6:7:8",
    ];
    let mut r = Vec::new();
    for c in cases {
        r.extend_from_slice(&c.parse::<Ipv6Addr>().expect("addr").octets());
    }
    let s = one(FieldType::Ipv6, 16, ByteOrder::Big);
    let got = strs(&decode1(&s, &r));
    assert_eq!(got, cases.map(String::from).to_vec());
    // Agrees with the standard library on a spread of addresses with zero runs in every place.
    let mut r = Vec::new();
    let mut want = Vec::new();
    for mask in 0u32..256 {
        let mut a = [0u8; 16];
        for g in 0..8 {
            if mask >> g & 1 == 1 {
                a[2 * g] = (g as u8) * 17;
                a[2 * g + 1] = 0x0a;
            }
        }
        r.extend_from_slice(&a);
        want.push(Ipv6Addr::from(a).to_string());
    }
    assert_eq!(strs(&decode1(&s, &r)), want);
    let raw = decode_columns_with(
        &s,
        &r[..32],
        &DecodeOptions {
            addresses: Addresses::Raw,
        },
    )
    .expect("raw");
    assert_eq!(raw.columns[0].data, r[..32].to_vec());
}
