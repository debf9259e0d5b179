//! Group keys read as their bytes (bytes, arrays, strings, blobs, chess moves of 1, 2, 4 or 8
//! bytes; ipv4 as its address): what they compile to, what stays refused, and the kernel against a
//! naive reference over random records, masks and filters, through one state, the direct index,
//! and merged batches.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::scan::aggregate::state::Index;
use crate::scan::aggregate::{AggregateAccumulator, AggregatePlan, AggregateState, ReadKind};
use crate::scan::key::Load64;
use crate::scan::ScanFilter;
use crate::schema::{parse, Schema};

const RS: usize = 96;

/// (name, offset, size): the fields the random plans group by; `port` (uint16) is the measure.
const KEYS: [(&str, usize, usize); 8] = [
    ("b1", 8, 1),
    ("b2", 10, 2),
    ("s4", 12, 4),
    ("arr", 16, 8),
    ("blob8", 24, 8),
    ("ip", 32, 4),
    ("mv", 36, 2),
    ("port", 38, 2),
];

fn schema(big: bool) -> Schema {
    let order = if big { "big" } else { "little" };
    parse(&format!(
        r#"{{ "id": "k", "record_size": {RS}, "byte_order": "{order}", "time_field": "ts",
        "fields": [
          {{ "name": "ts", "offset": 0, "size": 8, "type": "timestamp" }},
          {{ "name": "b1", "offset": 8, "size": 1, "type": "bytes" }},
          {{ "name": "b2", "offset": 10, "size": 2, "type": "bytes" }},
          {{ "name": "s4", "offset": 12, "size": 4, "type": "string" }},
          {{ "name": "arr", "offset": 16, "size": 8, "type": "bytes", "array": {{ "element": "uint16", "count": 4 }} }},
          {{ "name": "blob8", "offset": 24, "size": 8, "type": "blob" }},
          {{ "name": "ip", "offset": 32, "size": 4, "type": "ipv4" }},
          {{ "name": "mv", "offset": 36, "size": 2, "type": "chess_move" }},
          {{ "name": "port", "offset": 38, "size": 2, "type": "uint16" }},
          {{ "name": "f4", "offset": 40, "size": 4, "type": "float" }},
          {{ "name": "dt", "offset": 44, "size": 4, "type": "uint32", "time_reference": {{ "field": "ts", "unit": "ms" }} }},
          {{ "name": "n8", "offset": 48, "size": 8, "type": "numeric", "precision": 18 }},
          {{ "name": "s16", "offset": 56, "size": 16, "type": "string" }},
          {{ "name": "b3", "offset": 72, "size": 3, "type": "bytes" }},
          {{ "name": "d8", "offset": 76, "size": 8, "type": "double" }},
          {{ "name": "farr", "offset": 84, "size": 8, "type": "bytes", "array": {{ "element": "float", "count": 2 }} }},
          {{ "name": "raw_port", "offset": 38, "size": 2, "type": "bytes", "overlay": true }}
        ] }}"#
    ))
    .expect("schema")
}

fn plan(s: &Schema, keys: &[&str], mask: Option<&[u8]>) -> Result<AggregatePlan, String> {
    let keys: Vec<String> = keys
        .iter()
        .map(|k| format!(r#"{{"field":"{k}"}}"#))
        .collect();
    let json = format!(
        r#"{{"version":1,"group_by":[{}],"measures":[{{"fn":"count"}},{{"fn":"sum","field":"port"}},{{"fn":"max","field":"port"}}]}}"#,
        keys.join(",")
    );
    AggregatePlan::compile(s, &json, mask).map_err(|e| format!("{}: {}", e.path, e.message))
}

fn load_of(p: &AggregatePlan) -> Load64 {
    match p.keys[0].read.kind {
        ReadKind::K64 {
            load,
            signed: false,
            float: None,
        } => load,
        other => panic!("not an unsigned K64 key: {other:?}"),
    }
}

#[test]
fn byte_keys_compile_to_big_endian_loads_and_ipv4_to_its_address() {
    for big in [false, true] {
        let s = schema(big);
        let ip = if big { Load64::U32Be } else { Load64::U32Le };
        for (name, load) in [
            ("b1", Load64::U8),
            ("b2", Load64::U16Be),
            ("s4", Load64::U32Be),
            ("arr", Load64::U64Be),
            ("blob8", Load64::U64Be),
            ("mv", Load64::U16Be),
            ("raw_port", Load64::U16Be),
            ("farr", Load64::U64Be),
            ("ip", ip),
        ] {
            let p = plan(&s, &[name], None).expect(name);
            assert_eq!(load_of(&p), load, "{name}");
            let f = s.field(name).expect("field");
            assert_eq!(
                (p.keys[0].read.off, p.keys[0].read.size),
                (f.offset, f.size)
            );
            assert!(p.keys[0].read.visible() && p.keys[0].bucket.is_none());
        }
        // Integer keys are unchanged: the value in the dataset's byte order.
        let port = plan(&s, &["port"], None).expect("port");
        assert_eq!(
            load_of(&port),
            if big { Load64::U16Be } else { Load64::U16Le }
        );
    }
    // A mask hiding some of the key's bits is kept with the read (its bytes only).
    let mut mask = vec![0xff; RS];
    mask[17] = 0x0f;
    let p = plan(&schema(false), &["arr"], Some(&mask)).expect("arr");
    assert_eq!(
        p.keys[0].read.mask.as_deref(),
        Some(&[0xff, 0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff][..])
    );
}

#[test]
fn numbers_wide_or_odd_fields_and_delta_times_stay_refused() {
    let s = schema(false);
    for name in ["f4", "d8", "n8", "dt", "s16", "b3"] {
        let e = plan(&s, &[name], None).expect_err(name);
        assert!(
            e.starts_with("aggregate.group_by[0].field: cannot group by"),
            "{e}"
        );
    }
    let e = AggregatePlan::compile(
        &s,
        r#"{"version":1,"group_by":[{"field":"b2","bucket":5}],"measures":[{"fn":"count"}]}"#,
        None,
    )
    .expect_err("bucket");
    assert_eq!(e.path, "aggregate.group_by[0].bucket");
}

/// xorshift64*
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Records whose key bytes come from a few values (zero bytes often), so that groups repeat.
fn records(r: &mut Rng, n: usize) -> Vec<u8> {
    const BYTES: [u8; 5] = [0, 0, 1, 0x41, 0xff];
    let mut out = vec![0u8; n * RS];
    for rec in out.chunks_exact_mut(RS) {
        rec[..8].copy_from_slice(&(1_700_000_000 + r.below(600) as i64).to_le_bytes());
        for (_, off, size) in KEYS {
            // A field repeats one of a few whole patterns, or is bytes of the small alphabet.
            let pattern = r.below(4);
            for (i, b) in rec[off..off + size].iter_mut().enumerate() {
                *b = if pattern < 2 {
                    (pattern as u8 + 1).wrapping_mul(i as u8 + 7)
                } else {
                    BYTES[r.below(5) as usize]
                };
            }
        }
    }
    out
}

/// The key of `name` as the contract says: the visible bytes big-endian, ipv4 as its address.
fn naive_key(s: &Schema, name: &str, rec: &[u8], mask: Option<&[u8]>) -> u64 {
    let f = s.field(name).expect("field");
    let bytes: Vec<u8> = (f.offset..f.offset + f.size)
        .map(|i| rec[i] & mask.map_or(0xff, |m| m[i]))
        .collect();
    let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
    let little = s.byte_order == crate::schema::ByteOrder::Little;
    if name == "port" || (name == "ip" && little) {
        let mut b = bytes.clone();
        if little {
            b.reverse();
        }
        return be(&b);
    }
    be(&bytes)
}

/// The partial JSON of `keys` over the records whose stored port is at most `max_port` (all when
/// `None`): counted, summed and maxed here record by record.
fn naive(
    s: &Schema,
    keys: &[&str],
    data: &[u8],
    mask: Option<&[u8]>,
    max_port: Option<u64>,
) -> String {
    let mut groups: BTreeMap<Vec<u64>, (u64, u64, u64)> = BTreeMap::new();
    for rec in data.chunks_exact(RS) {
        if max_port.is_some_and(|m| naive_key(s, "port", rec, None) > m) {
            continue;
        }
        let k: Vec<u64> = keys.iter().map(|n| naive_key(s, n, rec, mask)).collect();
        let port = naive_key(s, "port", rec, mask);
        let g = groups.entry(k).or_insert((0, 0, 0));
        *g = (g.0 + 1, g.1 + port, g.2.max(port));
    }
    let body: Vec<String> = groups
        .iter()
        .map(|(k, (c, sum, max))| {
            let k: Vec<String> = k.iter().map(|v| format!(r#""{v}""#)).collect();
            format!(r#"{{"k":[{}],"m":["{c}","{sum}","{max}"]}}"#, k.join(","))
        })
        .collect();
    format!(r#"{{"v":1,"groups":[{}]}}"#, body.join(","))
}

fn state_over(p: &Arc<AggregatePlan>, f: &ScanFilter, data: &[u8]) -> AggregateState {
    let mut st = AggregateState::new(Arc::clone(p));
    f.select_chunks(data, |c, sel| st.add(c, sel));
    st
}

#[test]
fn byte_keys_group_as_the_naive_reference_through_one_state_and_merged_batches() {
    let names: Vec<&str> = KEYS.iter().map(|k| k.0).collect();
    let mut direct = 0;
    for seed in 1..=200u64 {
        let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let s = schema(seed % 2 == 0);
        let nk = 1 + r.below(4) as usize;
        let keys: Vec<&str> = (0..nk)
            .map(|_| names[r.below(names.len() as u64) as usize])
            .collect();
        let mask: Option<Vec<u8>> = (r.below(3) == 0).then(|| {
            (0..RS)
                .map(|_| [0xff, 0xff, 0x0f, 0x00, 0xf0][r.below(5) as usize])
                .collect()
        });
        let max_port = (r.below(3) == 0).then(|| r.below(1 << 16));
        let filter = max_port.map_or("[]".to_string(), |m| {
            format!(r#"[{{"filters":[{{"field":"port","op":"le","value":"{m}"}}]}}]"#)
        });
        let f = ScanFilter::compile(&s, &filter).expect("filter");
        let p = Arc::new(plan(&s, &keys, mask.as_deref()).expect("plan"));
        let n = r.below(2000) as usize;
        let data = records(&mut r, n);
        let ctx = format!("seed {seed}: {keys:?} mask {} {filter}", mask.is_some());
        let want = naive(&s, &keys, &data, mask.as_deref(), max_port);
        let whole = state_over(&p, &f, &data);
        direct += usize::from(matches!(whole.index, Index::Direct(_)));
        assert_eq!(whole.to_json().expect("fits"), want, "{ctx}");
        // Cut into batches and merged by an accumulator: the same partial.
        let mut acc = AggregateAccumulator::new(Arc::clone(&p));
        let cut = n / 3;
        for (a, b) in [(0, cut), (cut, cut), (cut, n)] {
            assert_eq!(
                acc.fold(&state_over(&p, &f, &data[a * RS..b * RS])),
                Ok(true)
            );
        }
        assert_eq!(
            format!(r#"{{"v":1,"groups":{}}}"#, acc.take_json()),
            want,
            "{ctx}"
        );
    }
    assert!(direct > 10, "{direct} seeds took the direct index");
}

#[test]
fn a_hidden_key_collapses_to_one_group_of_zero() {
    let s = schema(false);
    let data = records(&mut Rng(5), 500);
    let mut mask = vec![0xff; RS];
    mask[16..24].fill(0); // arr hidden
    mask[12..14].fill(0); // s4 half hidden
    let p = Arc::new(plan(&s, &["arr"], Some(&mask)).expect("plan"));
    let f = ScanFilter::compile(&s, "[]").expect("filter");
    let json = state_over(&p, &f, &data).to_json().expect("fits");
    assert!(
        json.starts_with(r#"{"v":1,"groups":[{"k":["0"],"m":["500","#),
        "{json}"
    );
    // Half of s4 hidden: keys are the visible low half only.
    let p = Arc::new(plan(&s, &["s4"], Some(&mask)).expect("plan"));
    let st = state_over(&p, &f, &data);
    assert!(st.keys.iter().all(|k| k[0] < 1 << 16));
    assert_eq!(
        st.to_json().expect("fits"),
        naive(&s, &["s4"], &data, Some(&mask), None)
    );
}
