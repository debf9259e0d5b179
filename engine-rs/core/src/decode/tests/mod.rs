//! Unit tests of the decoder: every type's edge values in both byte orders, errors, and blocks.
//! Helpers here; the cases in one file per type family.

mod chess;
mod numbers;
mod projection;
mod structure;
mod text;

use std::collections::HashMap;

pub(super) use super::*;
pub(super) use crate::schema::{
    ArraySpec, ByteOrder, EnumDef, Field, FieldType, TimeReference, TimeUnit,
};

pub(super) fn field(name: &str, offset: usize, size: usize, ty: FieldType) -> Field {
    Field {
        name: name.into(),
        offset,
        size,
        ty,
        enumeration: None,
        time_reference: None,
        array: None,
    }
}

pub(super) fn schema(
    record_size: usize,
    byte_order: ByteOrder,
    fields: Vec<Field>,
    enums: Vec<EnumDef>,
) -> Schema {
    let by_name: HashMap<String, usize> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.clone(), i))
        .collect();
    Schema {
        id: "t".into(),
        name: "test".into(),
        record_size,
        byte_order,
        time_field: 0,
        time_index_interval: 60,
        enums,
        fields,
        by_name,
    }
}

/// One-field schema whose record is exactly the field.
pub(super) fn one(ty: FieldType, size: usize, order: ByteOrder) -> Schema {
    schema(size, order, vec![field("v", 0, size, ty)], vec![])
}

pub(super) fn decode1(s: &Schema, records: &[u8]) -> Column {
    let mut cols = decode_columns(s, records).expect("decode");
    assert_eq!(cols.columns.len(), 1);
    cols.columns.remove(0)
}

pub(super) fn vals<const N: usize>(c: &Column) -> Vec<[u8; N]> {
    c.data.chunks_exact(N).map(buf::arr::<N>).collect()
}
pub(super) fn i16s(c: &Column) -> Vec<i16> {
    vals::<2>(c).into_iter().map(i16::from_ne_bytes).collect()
}
pub(super) fn i32s(c: &Column) -> Vec<i32> {
    vals::<4>(c).into_iter().map(i32::from_ne_bytes).collect()
}
pub(super) fn i64s(c: &Column) -> Vec<i64> {
    vals::<8>(c).into_iter().map(i64::from_ne_bytes).collect()
}
pub(super) fn strs(c: &Column) -> Vec<String> {
    let offs: Vec<usize> = vals::<4>(&Column {
        data: c.offsets.clone().unwrap_or_default(),
        ..c.clone()
    })
    .into_iter()
    .map(|o| i32::from_ne_bytes(o) as usize)
    .collect();
    offs.windows(2)
        .map(|w| String::from_utf8(c.data[w[0]..w[1]].to_vec()).expect("utf8"))
        .collect()
}
pub(super) fn valid(c: &Column, i: usize) -> bool {
    c.validity
        .as_ref()
        .is_none_or(|b| b[i / 8] >> (i % 8) & 1 == 1)
}

/// Records of a one-field schema from per-value byte strings.
pub(super) fn cat(values: &[Vec<u8>]) -> Vec<u8> {
    values.concat()
}

pub(super) const ORDERS: [ByteOrder; 2] = [ByteOrder::Little, ByteOrder::Big];

pub(super) fn enc<const N: usize>(le: [u8; N], order: ByteOrder) -> Vec<u8> {
    let mut v = le.to_vec();
    if order == ByteOrder::Big {
        v.reverse();
    }
    v
}

pub(super) fn proto_enum() -> EnumDef {
    EnumDef {
        name: "proto".into(),
        labels: vec![(17, "udp".into()), (1, "icmp".into()), (6, "tcp".into())],
        default_label: "other".into(),
    }
}
