//! `TopPlan::select` against a naive reference (values decoded from the masked bytes and compared
//! with plain Rust operators, a full sort, the k-th value, every record on its side kept) over
//! random schemas of every orderable type, both byte orders, masks, NaN, -0 and many ties; and the
//! refusals with their paths.

use std::cmp::Ordering;

use super::*;
use crate::schema::parse;

/// xorshift64*
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// How the reference reads a field.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Int { signed: bool },
    F32,
    F64,
}

/// One field of a random schema.
struct F {
    name: String,
    off: usize,
    size: usize,
    kind: Kind,
}

/// The type names the generator picks from, with their sizes and reference kinds.
const TYPES: &[(&str, usize, Kind)] = &[
    ("uint8", 1, Kind::Int { signed: false }),
    ("uint16", 2, Kind::Int { signed: false }),
    ("uint32", 4, Kind::Int { signed: false }),
    ("uint64", 8, Kind::Int { signed: false }),
    ("uint128", 16, Kind::Int { signed: false }),
    ("uint256", 32, Kind::Int { signed: false }),
    ("int8", 1, Kind::Int { signed: true }),
    ("int16", 2, Kind::Int { signed: true }),
    ("int32", 4, Kind::Int { signed: true }),
    ("int64", 8, Kind::Int { signed: true }),
    ("int128", 16, Kind::Int { signed: true }),
    ("int256", 32, Kind::Int { signed: true }),
    ("numeric", 4, Kind::Int { signed: true }),
    ("numeric", 8, Kind::Int { signed: true }),
    ("numeric", 16, Kind::Int { signed: true }),
    ("numeric", 32, Kind::Int { signed: true }),
    ("timestamp", 4, Kind::Int { signed: false }),
    ("timestamp", 8, Kind::Int { signed: true }),
    ("float", 4, Kind::F32),
    ("double", 8, Kind::F64),
];

/// A random schema of 1..=6 orderable fields, a string and the time field; its fields; big-endian.
fn random_schema(r: &mut Rng) -> (Schema, Vec<F>, bool) {
    let be = r.below(2) == 1;
    let mut fields = Vec::new();
    let mut json = Vec::new();
    let mut off = 0;
    for j in 0..1 + r.below(6) {
        let (ty, size, kind) = TYPES[r.below(TYPES.len())];
        off += r.below(3);
        let extra = match (ty, size) {
            ("numeric", 4) => r#", "precision": 9, "scale": 2"#,
            ("numeric", 8) => r#", "precision": 18, "scale": 0"#,
            ("numeric", 16) => r#", "precision": 38, "scale": 5"#,
            ("numeric", _) => r#", "precision": 76, "scale": 1"#,
            _ => "",
        };
        let name = format!("f{j}");
        json.push(format!(
            r#"{{ "name": "{name}", "offset": {off}, "size": {size}, "type": "{ty}"{extra} }}"#
        ));
        fields.push(F {
            name,
            off,
            size,
            kind,
        });
        off += size;
    }
    json.push(format!(
        r#"{{ "name": "s", "offset": {off}, "size": 5, "type": "string" }}"#
    ));
    json.push(format!(
        r#"{{ "name": "ts", "offset": {}, "size": 8, "type": "timestamp" }}"#,
        off + 5
    ));
    off += 13;
    let order = if be { "big" } else { "little" };
    let text = format!(
        r#"{{ "id": "t", "record_size": {off}, "byte_order": "{order}", "time_field": "ts", "fields": [{}] }}"#,
        json.join(",")
    );
    (parse(&text).expect("schema"), fields, be)
}

/// A float from a small set (NaNs of both signs, ±0, ±inf, repeats) or at random.
fn float_value(r: &mut Rng) -> f64 {
    const SPECIAL: [f64; 8] = [
        f64::NAN,
        -f64::NAN,
        -0.0,
        0.0,
        1.5,
        -2.25,
        f64::INFINITY,
        -1e300,
    ];
    match r.below(3) {
        0 => f64::from_bits(r.next()),
        _ => SPECIAL[r.below(SPECIAL.len())],
    }
}

/// Bytes of one field: few distinct values (ties), extremes, or random.
fn field_bytes(r: &mut Rng, f: &F, be: bool) -> Vec<u8> {
    match f.kind {
        Kind::F32 => {
            let v = float_value(r) as f32;
            if be {
                v.to_be_bytes().to_vec()
            } else {
                v.to_le_bytes().to_vec()
            }
        }
        Kind::F64 => {
            let v = float_value(r);
            if be {
                v.to_be_bytes().to_vec()
            } else {
                v.to_le_bytes().to_vec()
            }
        }
        Kind::Int { .. } => match r.below(3) {
            0 => (0..f.size).map(|_| r.next() as u8).collect(),
            1 => vec![[0u8, 0xff, 0x80, 0x7f][r.below(4)]; f.size],
            _ => {
                let mut b = vec![0u8; f.size];
                let low = r.below(4) as u8;
                if be {
                    b[f.size - 1] = low;
                } else {
                    b[0] = low;
                }
                b
            }
        },
    }
}

/// The reference value of a field: big-endian bytes with the sign bit flipped, or a float.
#[derive(Clone, Debug)]
enum V {
    Int(Vec<u8>),
    Float(f64),
}

/// SQL's order: NaN above every number (NaNs tie), -0 = 0.
fn cmp_v(a: &V, b: &V) -> Ordering {
    match (a, b) {
        (V::Int(a), V::Int(b)) => a.cmp(b),
        (V::Float(a), V::Float(b)) => match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => a.partial_cmp(b).expect("numbers"),
        },
        _ => unreachable!("one field, one kind"),
    }
}

fn value(f: &F, rec: &[u8], mask: Option<&[u8]>, be: bool) -> V {
    let mut b: Vec<u8> = rec[f.off..f.off + f.size].to_vec();
    if let Some(m) = mask {
        for (x, y) in b.iter_mut().zip(&m[f.off..f.off + f.size]) {
            *x &= y;
        }
    }
    if !be {
        b.reverse();
    }
    match f.kind {
        Kind::Int { signed } => {
            if signed {
                b[0] ^= 0x80;
            }
            V::Int(b)
        }
        Kind::F32 => V::Float(f64::from(f32::from_be_bytes(
            b.try_into().expect("4 bytes"),
        ))),
        Kind::F64 => V::Float(f64::from_be_bytes(b.try_into().expect("8 bytes"))),
    }
}

/// The naive top k: sort every value, take the k-th best, keep each record on its side.
fn reference(
    recs: &[u8],
    rs: usize,
    f: &F,
    k: usize,
    desc: bool,
    mask: Option<&[u8]>,
    be: bool,
) -> Vec<u8> {
    let n = recs.len() / rs;
    if n <= k {
        return recs.to_vec();
    }
    let vals: Vec<V> = recs.chunks(rs).map(|c| value(f, c, mask, be)).collect();
    let mut sorted = vals.clone();
    sorted.sort_by(cmp_v);
    let t = if desc { &sorted[n - k] } else { &sorted[k - 1] };
    let mut out = Vec::new();
    for (c, v) in recs.chunks(rs).zip(&vals) {
        let o = cmp_v(v, t);
        if (desc && o != Ordering::Less) || (!desc && o != Ordering::Greater) {
            out.extend_from_slice(c);
        }
    }
    out
}

#[test]
fn random_schemas_match_the_naive_reference() {
    let mut checked = 0;
    for seed in 1..=300u64 {
        let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (schema, fields, be) = random_schema(&mut r);
        let rs = schema.record_size;
        let n = [0, 1, 2, 7, 50, 300, 2000][r.below(7)];
        let mut recs = Vec::with_capacity(n * rs);
        for i in 0..n {
            let mut rec = vec![0u8; rs];
            for f in &fields {
                // Every third record repeats an earlier one's field: ties.
                let b = if i > 0 && r.below(3) == 0 {
                    let j = r.below(i);
                    recs[j * rs + f.off..j * rs + f.off + f.size].to_vec()
                } else {
                    field_bytes(&mut r, f, be)
                };
                rec[f.off..f.off + f.size].copy_from_slice(&b);
            }
            recs.extend_from_slice(&rec);
        }
        let mask: Option<Vec<u8>> = match r.below(3) {
            0 => Some((0..rs).map(|_| r.next() as u8).collect()),
            1 => Some((0..rs).map(|_| [0, 0xff, 0xf0][r.below(3)]).collect()),
            _ => None,
        };
        let f = &fields[r.below(fields.len())];
        for k in [1, 2, 1 + r.below(n.max(1) + 2), n, n + 1, 1_000_000] {
            let k = k.max(1);
            for desc in [false, true] {
                let plan = TopPlan::compile(&schema, &f.name, k as u64, desc, mask.as_deref())
                    .expect("plan");
                let got = plan.select(&recs).expect("whole records");
                let want = reference(&recs, rs, f, k, desc, mask.as_deref(), be);
                assert_eq!(got, want, "seed {seed} field {} k {k} desc {desc}", f.name);
                if n > k {
                    assert!(got.len() / rs >= k, "at least k kept");
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 300 * 12);
}

fn fixed_schema() -> Schema {
    parse(
        r#"{ "id": "t", "record_size": 25, "byte_order": "little", "time_field": "ts", "fields": [
          { "name": "u", "offset": 0, "size": 8, "type": "uint64" },
          { "name": "d", "offset": 8, "size": 8, "type": "double" },
          { "name": "b", "offset": 16, "size": 1, "type": "boolean" },
          { "name": "ts", "offset": 17, "size": 8, "type": "timestamp" }
        ] }"#,
    )
    .expect("schema")
}

fn rec(u: u64, d: f64) -> Vec<u8> {
    let mut b = u.to_le_bytes().to_vec();
    b.extend_from_slice(&d.to_le_bytes());
    b.extend_from_slice(&[0; 9]);
    b
}

fn us(out: &[u8]) -> Vec<u64> {
    out.chunks(25)
        .map(|c| u64::from_le_bytes(c[..8].try_into().expect("8")))
        .collect()
}

#[test]
fn ties_at_the_boundary_are_kept_in_order() {
    let s = fixed_schema();
    let recs: Vec<u8> = [5u64, 9, 7, 9, 1, 9, u64::MAX, 3]
        .iter()
        .flat_map(|&u| rec(u, 0.0))
        .collect();
    let top = |k, desc| {
        let p = TopPlan::compile(&s, "u", k, desc, None).expect("plan");
        us(&p.select(&recs).expect("select"))
    };
    assert_eq!(top(2, true), [9, 9, 9, u64::MAX]);
    assert_eq!(top(1, true), [u64::MAX]);
    assert_eq!(top(1, false), [1]);
    assert_eq!(top(3, false), [5, 1, 3]);
    assert_eq!(top(8, true).len(), 8);
    assert_eq!(top(100, false).len(), 8);
}

#[test]
fn nan_is_largest_and_minus_zero_ties_with_zero() {
    let s = fixed_schema();
    let ds = [0.0, f64::NAN, -0.0, 2.0, -1.0, f64::NEG_INFINITY];
    let recs: Vec<u8> = ds
        .iter()
        .enumerate()
        .flat_map(|(i, &d)| rec(i as u64, d))
        .collect();
    let top = |k, desc| {
        let p = TopPlan::compile(&s, "d", k, desc, None).expect("plan");
        us(&p.select(&recs).expect("select"))
    };
    assert_eq!(top(1, true), [1]);
    assert_eq!(top(2, true), [1, 3]);
    // -0 and 0 tie at the boundary: both kept.
    assert_eq!(top(3, true), [0, 1, 2, 3]);
    assert_eq!(top(3, false), [0, 2, 4, 5]);
}

#[test]
fn a_hidden_field_orders_as_zeros_and_empty_input_selects_nothing() {
    let s = fixed_schema();
    let recs: Vec<u8> = [3u64, 1, 2].iter().flat_map(|&u| rec(u, 0.0)).collect();
    let mut mask = vec![0xffu8; 25];
    mask[..8].fill(0);
    let p = TopPlan::compile(&s, "u", 1, true, Some(&mask)).expect("plan");
    // All keys are 0: all tie with the best, all kept (the stored bytes unmasked).
    assert_eq!(us(&p.select(&recs).expect("select")), [3, 1, 2]);
    assert_eq!(p.select(&[]).expect("empty"), Vec::<u8>::new());
    let e = p.select(&recs[..30]).expect_err("not whole");
    assert_eq!(
        e.to_string(),
        "30 bytes is not a whole number of 25-byte records (5 left over)"
    );
}

#[test]
fn refusals_name_their_paths() {
    let s = fixed_schema();
    let e = |field: &str, k: u64, mask: Option<&[u8]>| {
        TopPlan::compile(&s, field, k, false, mask).expect_err("refused")
    };
    let x = e("uu", 1, None);
    assert_eq!(x.path, "top.field");
    assert!(x.message.contains("unknown field"), "{}", x.message);
    let x = e("b", 1, None);
    assert_eq!(x.path, "top.field");
    assert!(
        x.message.contains("cannot order by 'b' (boolean)"),
        "{}",
        x.message
    );
    assert_eq!(e("u", 0, None).path, "top.k");
    assert_eq!(e("u", MAX_TOP_K + 1, None).path, "top.k");
    assert_eq!(e("u", 1, Some(&[0u8; 3])).path, "field_mask");
    let q = "a\"b";
    assert_eq!(e(q, 1, None).path, "top.field");
    assert!(TopPlan::compile(&s, "u", MAX_TOP_K, true, None).is_ok());
}
