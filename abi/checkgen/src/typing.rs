//! What a sub-expression of a condition is, given the entry point's
//! parameters and the header's types: shared by the Rust emitter and the C
//! test's evaluator.

use std::collections::BTreeSet;

use crate::expr::Expr;
use crate::header::{CType, Function, Spec, TypeDef};

/// The kind of a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A data pointer (or handle), with its C type.
    Ptr(CType),
    /// A function pointer (`Option<fn>` in Rust).
    FnPtr,
    /// An integer of a C scalar type (bool included).
    Int,
    /// An enumeration's value (a newtype in Rust).
    Enum(String),
    /// A struct or union by value.
    Aggregate(String),
    /// The result of a comparison or logical operator.
    Bool,
    /// `NULL`.
    Null,
}

/// The kind of a value of C type `ty`.
pub fn kind_of(spec: &Spec, ty: &CType) -> Kind {
    if !ty.ptrs.is_empty() {
        return Kind::Ptr(ty.clone());
    }
    match spec.types.get(&ty.base) {
        Some(TypeDef::Handle) => Kind::Ptr(ty.clone()),
        Some(TypeDef::FnPtr) => Kind::FnPtr,
        Some(TypeDef::Enum(_)) => Kind::Enum(ty.base.clone()),
        Some(TypeDef::Aggregate(_)) => Kind::Aggregate(ty.base.clone()),
        _ => Kind::Int,
    }
}

/// The C type of field `name` of aggregate `agg`.
pub fn field_type(spec: &Spec, agg: &str, name: &str) -> Result<CType, String> {
    match spec.types.get(agg) {
        Some(TypeDef::Aggregate(fields)) => fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.ty.clone())
            .ok_or_else(|| format!("{agg} has no field {name}")),
        _ => Err(format!("{agg} is not a struct")),
    }
}

/// The C type of an lvalue expression (a parameter, a field, an element).
pub fn lvalue_type(spec: &Spec, f: &Function, e: &Expr) -> Result<CType, String> {
    match e {
        Expr::Name(n) => f
            .params
            .iter()
            .find(|p| &p.name == n)
            .map(|p| p.ty.clone())
            .ok_or_else(|| format!("{n} is not a parameter")),
        Expr::Arrow(p, field) => {
            let pt = lvalue_type(spec, f, p)?;
            if pt.ptrs.len() != 1 {
                return Err(format!("{p} is not a pointer to a struct"));
            }
            field_type(spec, &pt.base, field)
        }
        Expr::Dot(s, field) => {
            let st = lvalue_type(spec, f, s)?;
            if !st.ptrs.is_empty() {
                return Err(format!("{s} is a pointer"));
            }
            field_type(spec, &st.base, field)
        }
        Expr::Index(p, _) => {
            let pt = lvalue_type(spec, f, p)?;
            if pt.ptrs.is_empty() {
                return Err(format!("{p} is not a pointer"));
            }
            Ok(pt.pointee())
        }
        other => Err(format!("{other} is not an lvalue")),
    }
}

/// Whether `name` is a constant the header defines.
pub fn constant(spec: &Spec, name: &str) -> Option<(Option<String>, Option<i128>)> {
    if let Some(v) = spec.defines.get(name) {
        return Some((None, Some(*v)));
    }
    let owner = spec.enumerators.get(name)?;
    let value = match spec.types.get(owner) {
        Some(TypeDef::Enum(members)) => members.iter().find(|(m, _)| m == name).and_then(|(_, v)| *v),
        _ => None,
    };
    Some((Some(owner.clone()), value))
}

/// The pointers that are non-null wherever `e` is true (`p != NULL`, `p`,
/// `a && b`) or false (`p == NULL`, `!p`, `a || b`), by canonical text.
pub fn nonnull_if(e: &Expr, truth: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    match e {
        Expr::Binary(op @ ("==" | "!="), a, b) => {
            let other = match (&**a, &**b) {
                (Expr::Null, x) | (x, Expr::Null) => Some(x),
                _ => None,
            };
            if let Some(x) = other
                && ((*op == "!=") == truth)
            {
                out.insert(x.to_string());
            }
        }
        Expr::Binary("&&", a, b) if truth => {
            out.extend(nonnull_if(a, true));
            out.extend(nonnull_if(b, true));
        }
        Expr::Binary("||", a, b) if !truth => {
            out.extend(nonnull_if(a, false));
            out.extend(nonnull_if(b, false));
        }
        Expr::Unary('!', x) => out.extend(nonnull_if(x, !truth)),
        Expr::Name(_) | Expr::Arrow(..) | Expr::Dot(..) if truth => {
            out.insert(e.to_string());
        }
        _ => {}
    }
    out
}
