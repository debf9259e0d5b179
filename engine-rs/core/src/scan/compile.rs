//! One filter spec + the dataset schema → a compiled filter (docs/query.md, "FilterOp" and the
//! value table). Values are encoded into the field's stored bytes first (`value`), then read back
//! with the same key functions the kernel applies to records (`key`), so both sides agree.

use super::compile_bytes::mask_words;
use super::error::QueryError;
use super::json::FilterSpec;
use super::key::{shape_of, OrderKey, Shape, K256};
use super::op::FilterOp;
use super::pred::{CompiledFilter, Elem, Pred, Test, ZoneCheck, ZoneHint};
use super::ranges::{covers, float_range, load_big_endian, range, set, zone_kind, KNEG0, KPOS0};
use super::value::{encode, hex};
use crate::schema::issue::suggest;
use crate::schema::{ByteOrder, Field, FieldType, Schema};
use crate::segment::ZoneKind;

/// Compiles one filter against `schema`.
pub fn compile_filter(schema: &Schema, spec: &FilterSpec) -> Result<CompiledFilter, QueryError> {
    let Some(field) = schema.field(&spec.field) else {
        let hint = suggest(&spec.field, schema.fields.iter().map(|f| f.name.as_str()));
        return Err(QueryError::new(
            format!("{}.field", spec.path),
            format!(
                "no field {} in dataset \"{}\"{hint}",
                crate::types::quote(&spec.field),
                schema.id
            ),
        ));
    };
    if let Some(why) = spec.op.refusal(field) {
        return Err(QueryError::new(format!("{}.op", spec.path), why));
    }
    let c = Ctx {
        spec,
        field,
        order: schema.byte_order,
        record_size: schema.record_size,
    };
    match spec.op {
        FilterOp::MaskedEq => c.masked_eq(),
        FilterOp::ListContains | FilterOp::NotListContains => c.list(),
        _ => c.scalar(),
    }
}

/// What compiling one filter needs: its spec, its field and the record layout.
pub(super) struct Ctx<'a> {
    pub(super) spec: &'a FilterSpec,
    pub(super) field: &'a Field,
    pub(super) order: ByteOrder,
    pub(super) record_size: usize,
}

impl Ctx<'_> {
    pub(super) fn err(&self, path: String, message: String) -> QueryError {
        QueryError::new(path, message)
    }

    /// Every operand encoded as the field stores it.
    fn values(&self) -> Result<Vec<Vec<u8>>, QueryError> {
        let f = self.field;
        self.spec
            .values
            .iter()
            .enumerate()
            .map(|(i, text)| {
                encode(&f.ty, f.size, self.order, text)
                    .map_err(|m| self.err(self.spec.value_path(i), m))
            })
            .collect()
    }

    pub(super) fn hint(
        &self,
        kind: ZoneKind,
        big_endian: bool,
        check: ZoneCheck,
    ) -> Option<ZoneHint> {
        Some(ZoneHint {
            offset: u32::try_from(self.field.offset).ok()?,
            size: u16::try_from(self.field.size).ok()?,
            kind,
            big_endian,
            check,
            exact: false,
        })
    }

    pub(super) fn done(pred: Pred, zone: Option<ZoneHint>) -> Result<CompiledFilter, QueryError> {
        Ok(CompiledFilter { pred, zone })
    }

    fn scalar(&self) -> Result<CompiledFilter, QueryError> {
        let op = self.spec.op;
        let negate = matches!(op, FilterOp::Ne | FilterOp::IsNotNull);
        let f = self.field;
        let mut vals = self.values()?;
        if matches!(op, FilterOp::IsNull | FilterOp::IsNotNull) {
            vals = vec![vec![0u8; f.size]];
        }
        let off = f.offset;
        match shape_of(&f.ty, f.size, self.order) {
            Shape::K64(load) => {
                let keys: Vec<u64> = vals.iter().map(|v| load.key(v, 0)).collect();
                let test = if f.ty == FieldType::Boolean {
                    let (t, fa) = (keys.iter().any(|&k| k != 0), keys.contains(&0));
                    match (t, fa) {
                        (true, true) => return Self::done(Pred::Const(!negate), None),
                        (true, false) => Test::Range { lo: 1, hi: 255 },
                        _ => Test::Range { lo: 0, hi: 0 },
                    }
                } else if op == FilterOp::In {
                    let mut all = Vec::with_capacity(keys.len() + 1);
                    for k in keys {
                        all.push(k);
                        if load.is_float() && (k == KNEG0 || k == KPOS0) {
                            all.extend([KNEG0, KPOS0]);
                        }
                    }
                    set(all)
                } else {
                    let r = if load.is_float() {
                        float_range(op, &keys)
                    } else {
                        range(op, &keys)
                    };
                    match r {
                        Some((lo, hi)) if covers(load, lo, hi) => {
                            return Self::done(Pred::Const(!negate), None)
                        }
                        Some((lo, hi)) => Test::Range { lo, hi },
                        None => return Self::done(Pred::Const(negate), None),
                    }
                };
                let check = match (&test, negate) {
                    (Test::Range { lo, hi }, false) => Some(ZoneCheck::Within { lo: *lo, hi: *hi }),
                    (Test::Range { lo, hi }, true) if !load.is_float() => {
                        Some(ZoneCheck::Outside { lo: *lo, hi: *hi })
                    }
                    (Test::Set(keys), false) => Some(ZoneCheck::AnyOf(keys.clone())),
                    _ => None,
                };
                // For integers the kernel tests exactly the zone's keys, so the zone check is the
                // filter itself; float zones skip NaN, so they prove nothing about every record.
                let exact = !load.is_float();
                let zone = check
                    .and_then(|c| self.hint(zone_kind(load), load_big_endian(load), c))
                    .map(|h| ZoneHint { exact, ..h });
                Self::done(
                    Pred::K64 {
                        off,
                        load,
                        test,
                        negate,
                    },
                    zone,
                )
            }
            Shape::K128 { big_endian, signed } => {
                let keys: Vec<u128> = vals
                    .iter()
                    .map(|v| super::key::with_wide!(key128, big_endian, signed, k => k(v, 0)))
                    .collect();
                let test = match self.wide_test(keys) {
                    Ok(t) => t,
                    Err(always) => return Self::done(Pred::Const(always != negate), None),
                };
                Self::done(
                    Pred::K128 {
                        off,
                        big_endian,
                        signed,
                        test,
                        negate,
                    },
                    None,
                )
            }
            Shape::K256 { big_endian, signed } => {
                let keys: Vec<K256> = vals
                    .iter()
                    .map(|v| super::key::with_wide!(key256, big_endian, signed, k => k(v, 0)))
                    .collect();
                let test = match self.wide_test(keys) {
                    Ok(t) => t,
                    Err(always) => return Self::done(Pred::Const(always != negate), None),
                };
                Self::done(
                    Pred::K256 {
                        off,
                        big_endian,
                        signed,
                        test,
                        negate,
                    },
                    None,
                )
            }
            Shape::Bytes => self.bytes(vals, negate),
        }
    }

    /// The test of a 128- or 256-bit key; `Err(always)` when the range is empty or holds every key
    /// (`Pred::Const` then, false or true).
    fn wide_test<K: OrderKey>(&self, keys: Vec<K>) -> Result<Test<K>, bool> {
        if self.spec.op == FilterOp::In {
            return Ok(set(keys));
        }
        match range(self.spec.op, &keys) {
            Some((lo, hi)) if lo == K::MIN && hi == K::MAX => Err(true),
            Some((lo, hi)) => Ok(Test::Range { lo, hi }),
            None => Err(false),
        }
    }

    fn masked_eq(&self) -> Result<CompiledFilter, QueryError> {
        let f = self.field;
        let label = format!("the {}-byte field \"{}\"", f.size, f.name);
        let value = hex(&self.spec.values[0], f.size, &label)
            .map_err(|m| self.err(format!("{}.value", self.spec.path), m))?;
        let text = self.spec.mask.as_deref().unwrap_or_default();
        let mask = hex(text, f.size, &label)
            .map_err(|m| self.err(format!("{}.mask", self.spec.path), m))?;
        let words = mask_words(f.offset, &value, &mask, self.record_size);
        if words.is_empty() {
            return Self::done(Pred::Const(true), None);
        }
        Self::done(
            Pred::Masked {
                words,
                negate: false,
            },
            None,
        )
    }

    fn list(&self) -> Result<CompiledFilter, QueryError> {
        let f = self.field;
        let negate = self.spec.op == FilterOp::NotListContains;
        let Some(a) = &f.array else {
            return Err(self.err(
                format!("{}.op", self.spec.path),
                "needs an array field".into(),
            ));
        };
        let v = encode(&a.element, a.element_size, self.order, &self.spec.values[0])
            .map_err(|m| self.err(format!("{}.value", self.spec.path), m))?;
        let elem = match shape_of(&a.element, a.element_size, self.order) {
            Shape::K64(load) => {
                let k = load.key(&v, 0);
                let (lo, hi) = if a.element == FieldType::Boolean {
                    if k != 0 {
                        (1, 255)
                    } else {
                        (0, 0)
                    }
                } else if load.is_float() {
                    float_range(FilterOp::Eq, &[k]).unwrap_or((k, k))
                } else {
                    (k, k)
                };
                Elem::K64 { load, lo, hi }
            }
            Shape::K128 { big_endian, signed } => Elem::K128 {
                big_endian,
                signed,
                key: super::key::with_wide!(key128, big_endian, signed, k => k(&v, 0)),
            },
            Shape::K256 { big_endian, signed } => Elem::K256 {
                big_endian,
                signed,
                key: super::key::with_wide!(key256, big_endian, signed, k => k(&v, 0)),
            },
            Shape::Bytes => {
                return Err(self.err(
                    format!("{}.op", self.spec.path),
                    format!("arrays of {} are not supported", a.element.name()),
                ))
            }
        };
        Self::done(
            Pred::List {
                off: f.offset,
                stride: a.element_size,
                count: a.count,
                elem,
                negate,
            },
            None,
        )
    }
}
