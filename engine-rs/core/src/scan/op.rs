//! FilterOp: the operators of a Filter, their operands, and which field types take them
//! (docs/query.md, "FilterOp").

use crate::schema::{Field, FieldType};

/// One filter operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Between,
    In,
    IsNull,
    IsNotNull,
    Prefix,
    MaskedEq,
    ListContains,
    NotListContains,
}

/// Which operand keys an operator takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operands {
    /// `value`
    Value,
    /// `value` and `mask`
    ValueMask,
    /// `values`: exactly two (`between`)
    Pair,
    /// `values`: 1 ..= MAX_IN_VALUES (`in`)
    List,
    /// none
    Nothing,
}

impl FilterOp {
    /// Every operator, in the order of the docs table.
    pub const ALL: [FilterOp; 14] = [
        FilterOp::Eq,
        FilterOp::Ne,
        FilterOp::Lt,
        FilterOp::Le,
        FilterOp::Gt,
        FilterOp::Ge,
        FilterOp::Between,
        FilterOp::In,
        FilterOp::IsNull,
        FilterOp::IsNotNull,
        FilterOp::Prefix,
        FilterOp::MaskedEq,
        FilterOp::ListContains,
        FilterOp::NotListContains,
    ];

    /// The operator's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            FilterOp::Eq => "eq",
            FilterOp::Ne => "ne",
            FilterOp::Lt => "lt",
            FilterOp::Le => "le",
            FilterOp::Gt => "gt",
            FilterOp::Ge => "ge",
            FilterOp::Between => "between",
            FilterOp::In => "in",
            FilterOp::IsNull => "is_null",
            FilterOp::IsNotNull => "is_not_null",
            FilterOp::Prefix => "prefix",
            FilterOp::MaskedEq => "masked_eq",
            FilterOp::ListContains => "list_contains",
            FilterOp::NotListContains => "not_list_contains",
        }
    }

    /// The operator of a wire name.
    pub fn from_name(name: &str) -> Option<FilterOp> {
        FilterOp::ALL.into_iter().find(|op| op.name() == name)
    }

    /// The operand keys the operator takes.
    pub fn operands(self) -> Operands {
        match self {
            FilterOp::Between => Operands::Pair,
            FilterOp::In => Operands::List,
            FilterOp::IsNull | FilterOp::IsNotNull => Operands::Nothing,
            FilterOp::MaskedEq => Operands::ValueMask,
            _ => Operands::Value,
        }
    }

    /// Why the operator cannot apply to `field`, if it cannot.
    pub fn refusal(self, field: &Field) -> Option<String> {
        let ty = &field.ty;
        let ok = match self {
            FilterOp::Eq | FilterOp::Ne | FilterOp::In | FilterOp::MaskedEq => true,
            FilterOp::Lt | FilterOp::Le | FilterOp::Gt | FilterOp::Ge | FilterOp::Between => {
                !matches!(
                    ty,
                    FieldType::Boolean | FieldType::Blob | FieldType::ChessFen
                )
            }
            FilterOp::IsNull | FilterOp::IsNotNull => matches!(
                ty,
                FieldType::String
                    | FieldType::Bytes
                    | FieldType::Blob
                    | FieldType::Ipv4
                    | FieldType::Ipv6
                    | FieldType::ChessFen
            ),
            FilterOp::Prefix => {
                matches!(ty, FieldType::String | FieldType::Bytes | FieldType::Blob)
            }
            FilterOp::ListContains | FilterOp::NotListContains => field.array.is_some(),
        };
        if ok {
            return None;
        }
        let what = match self {
            FilterOp::IsNull | FilterOp::IsNotNull => format!(
                "{} is refused on {} field \"{}\": zero is a value there, not null",
                self.name(),
                ty.name(),
                field.name
            ),
            FilterOp::ListContains | FilterOp::NotListContains => format!(
                "{} needs an array field; \"{}\" is a plain {}",
                self.name(),
                field.name,
                ty.name()
            ),
            _ => format!(
                "{} is not allowed on {} field \"{}\"",
                self.name(),
                ty.name(),
                field.name
            ),
        };
        Some(what)
    }
}
