//! The fast paths against the general path: random columns of every shape a fast path takes
//! (values in and out of range, nulls, bit offsets, too-long text, bad dictionary entries), encoded
//! with the fast paths on and off, must give the same bytes or the same error.

use serde_json::{json, Value};

use super::Batch;
use crate::encode::columns::fast::ENABLED;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Encodes both ways, checks they agree, and says whether they succeeded.
fn both_ways(b: &Batch, rows: usize, cols: Vec<(&str, Vec<Value>)>) -> bool {
    let fast = b.encode(rows, cols.clone());
    ENABLED.with(|e| e.set(false));
    let general = b.encode(rows, cols.clone());
    ENABLED.with(|e| e.set(true));
    let names: Vec<&str> = cols.iter().map(|c| c.0).collect();
    assert_eq!(fast, general, "{names:?}");
    fast.is_ok()
}

fn range(bits: u32, signed: bool) -> (i128, i128) {
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// A value a `src` column can hold for a `dst` field: in the field's range, its edges often, and
/// with `out` now and then one the column holds but the field does not.
fn value(r: &mut Rng, src: (i128, i128), dst: (i128, i128), out: bool) -> i128 {
    let (lo, hi) = (src.0.max(dst.0), src.1.min(dst.1));
    match r.below(if out { 40 } else { 20 }) {
        0 => lo,
        1 => hi,
        20 if src.1 > dst.1 => dst.1 + 1,
        21 if src.0 < dst.0 => dst.0 - 1,
        _ => lo + (r.next() as i128).rem_euclid(hi - lo + 1),
    }
}

/// A dictionary chunk over dictionary 0 with these indices.
fn indices(b: &mut Batch, idx: &[i128], bits: u8, valid: Option<&[bool]>) -> Value {
    let mut c = b.ints(idx, bits, true, valid);
    c["type"]["kind"] = json!("dictionary");
    c["dictionary"] = json!(0);
    c
}

#[test]
fn fast_paths_write_what_the_general_path_writes() {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let targets: [(&str, u32, bool); 7] = [
        ("u8", 8, false),
        ("i16", 16, true),
        ("u32", 32, false),
        ("ts", 64, true),
        ("ts4", 32, false),
        ("v4", 32, false),
        ("proto", 8, false),
    ];
    let sources: [(u8, bool); 5] = [(8, true), (16, false), (32, true), (64, false), (64, true)];
    let (mut oks, mut runs) = (0usize, 0usize);
    let mut check = |b: &Batch, rows: usize, cols: Vec<(&str, Vec<Value>)>| {
        runs += 1;
        oks += usize::from(both_ways(b, rows, cols));
    };
    for round in 0..40 {
        let rows = 1 + r.below(300) as usize;
        let out = round % 4 == 3;
        let mut b = Batch::default();
        let valid: Vec<bool> = (0..rows).map(|_| r.below(7) != 0).collect();
        let nulls = (round % 2 == 0).then_some(valid.as_slice());
        for (field, bits, signed) in targets {
            for (src_bits, src_signed) in sources {
                let (src, dst) = (range(src_bits.into(), src_signed), range(bits, signed));
                let vals: Vec<i128> = (0..rows).map(|_| value(&mut r, src, dst, out)).collect();
                let c = b.ints(&vals, src_bits, src_signed, nulls);
                check(&b, rows, vec![(field, vec![c])]);
            }
        }
        // Floats into float and double, booleans at a bit offset.
        let bits: Vec<i128> = (0..rows).map(|_| i128::from(r.next() as u32)).collect();
        let mut f = b.ints(&bits, 32, false, nulls);
        f["type"] = json!({ "kind": "float", "bitWidth": 32 });
        let wide: Vec<i128> = (0..rows).map(|_| i128::from(r.next())).collect();
        let mut d = b.ints(&wide, 64, false, nulls);
        d["type"] = json!({ "kind": "float", "bitWidth": 64 });
        let offset = r.below(8) as usize;
        let bytes = (0..(rows + offset).div_ceil(8))
            .map(|_| r.next() as u8)
            .collect();
        let values = b.buf(bytes);
        let validity = b.validity(nulls, offset);
        let ok = json!({ "type": { "kind": "bool" }, "length": rows, "offset": offset,
            "values": values, "validity": validity });
        check(
            &b,
            rows,
            vec![("f", vec![f]), ("d", vec![d]), ("ok", vec![ok])],
        );
        // Text up to a little past the field, decimals at the precision's edge.
        let words: &[&str] = if out {
            &["", "a", "héllo", "12345678", "123456789"]
        } else {
            &["", "a", "héllo", "12345678"]
        };
        let texts: Vec<Option<&str>> = (0..rows)
            .map(|i| {
                nulls
                    .is_none_or(|v| v[i])
                    .then(|| words[r.below(words.len() as u64) as usize])
            })
            .collect();
        let host = b.utf8(&texts);
        let limit = 10_000_000_000i128;
        let decs: Vec<i128> = (0..rows)
            .map(|_| value(&mut r, (-limit, limit), (1 - limit, limit - 1), out))
            .collect();
        let num = b.decimal(&decs, 128, 10, 2);
        check(&b, rows, vec![("host", vec![host]), ("num", vec![num])]);
        // Labels (one unknown in some rounds) through a dictionary, for a scalar and for elements.
        let last = if out { "sctp" } else { "tcp" };
        let labels = b.utf8(&[Some("icmp"), Some("tcp"), None, Some("udp"), Some(last)]);
        b.dictionaries.push(json!([labels]));
        let n = if out { 6 } else { 5 };
        let idx: Vec<i128> = (0..rows * 3).map(|_| r.below(n) as i128).collect();
        let proto = indices(&mut b, &idx[..rows], 16, nulls);
        check(&b, rows, vec![("proto", vec![proto])]);
        let elems = indices(&mut b, &idx, 32, None);
        let tags = json!({ "type": { "kind": "fixedSizeList", "listSize": 3 }, "length": rows, "child": elems });
        check(&b, rows, vec![("tags", vec![tags])]);
    }
    // Most encodes succeed, so the fast paths wrote them; rounds with bad values fail both ways.
    assert!(oks * 10 >= runs * 6, "{oks} of {runs} encodes succeeded");
}
