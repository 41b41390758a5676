//! Evaluates conditions over a model of an entry point's arguments, and
//! searches the argument values under which exactly one condition's code
//! is due: the C test's cases.

use std::collections::BTreeMap;

use crate::expr::Expr;
use crate::header::{CType, Function, Spec, TypeDef};
use crate::typing::{Kind, constant, kind_of, lvalue_type};

/// A value in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val {
    /// An integer, enumeration or bool.
    Int(i128),
    /// A null pointer.
    Null,
    /// A valid pointer (a real or stand-in handle, storage for data).
    NonNull,
}

/// The arguments of one call: values of lvalues (parameters, fields,
/// elements) by canonical text, over defaults.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// The values set, with their lvalue.
    pub set: BTreeMap<String, (Expr, Val)>,
}

/// Why an expression has no value.
#[derive(Debug)]
pub struct NoValue;

/// Whether a type's integers default to 1 (sizes and counts) rather than 0
/// (flags, enumerations, bools, characters).
pub fn defaults_to_one(spec: &Spec, ty: &CType) -> bool {
    ty.ptrs.is_empty()
        && !ty.base.ends_with("_flags_t")
        && !matches!(ty.base.as_str(), "bool" | "ur_bool_t" | "char" | "uint8_t" | "void")
        && !matches!(spec.types.get(&ty.base), Some(TypeDef::Enum(_)) | Some(TypeDef::Handle) | Some(TypeDef::FnPtr))
}

/// The `UR_STRUCTURE_TYPE_*` a struct's `stype` must hold, from its doc.
pub fn stype_of(spec: &Spec, agg: &str) -> Option<String> {
    let Some(TypeDef::Aggregate(fields)) = spec.types.get(agg) else { return None };
    let f = fields.iter().find(|f| f.name == "stype")?;
    let at = f.doc.find("UR_STRUCTURE_TYPE_")?;
    let name: String = f.doc[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    spec.enumerators.contains_key(&name).then_some(name)
}

/// The default of an lvalue: parameters point somewhere valid and hold
/// sizes of 1; fields are zero (a zeroed struct) but for `stype`;
/// elements of integer arrays are 1.
pub fn default(spec: &Spec, f: &Function, e: &Expr) -> Result<Val, NoValue> {
    let ty = lvalue_type(spec, f, e).map_err(|_| NoValue)?;
    // Fields of a struct passed by value are like parameters.
    let by_value = matches!(e, Expr::Dot(s, _) if matches!(**s, Expr::Name(_)));
    let is_field = matches!(e, Expr::Arrow(..) | Expr::Dot(..)) && !by_value;
    Ok(match kind_of(spec, &ty) {
        Kind::Ptr(_) | Kind::FnPtr if is_field => Val::Null,
        Kind::Ptr(_) | Kind::FnPtr => Val::NonNull,
        _ if is_field => {
            let (Expr::Arrow(p, field) | Expr::Dot(p, field)) = e else { return Ok(Val::Int(0)) };
            if field == "stype"
                && let Ok(pt) = lvalue_type(spec, f, p)
                && let Some(st) = stype_of(spec, &pt.base)
                && let Some((_, Some(v))) = constant(spec, &st)
            {
                return Ok(Val::Int(v));
            }
            Val::Int(0)
        }
        _ => Val::Int(if defaults_to_one(spec, &ty) { 1 } else { 0 }),
    })
}

/// Evaluates `e` in `m`: `Err` where it would read through a null pointer.
pub fn eval(spec: &Spec, f: &Function, m: &Model, e: &Expr) -> Result<Val, NoValue> {
    let lookup = |e: &Expr| match m.set.get(&e.to_string()) {
        Some((_, v)) => Ok(*v),
        None => default(spec, f, e),
    };
    let truth = |v: Val| match v {
        Val::Int(i) => i != 0,
        Val::Null => false,
        Val::NonNull => true,
    };
    let int = |v: Val| match v {
        Val::Int(i) => Ok(i),
        _ => Err(NoValue),
    };
    let b = |x: bool| Val::Int(x as i128);
    match e {
        Expr::Null => Ok(Val::Null),
        Expr::Int(v) => Ok(Val::Int(*v)),
        Expr::Name(n) => {
            if f.params.iter().any(|p| &p.name == n) {
                lookup(e)
            } else {
                match constant(spec, n) {
                    Some((_, Some(v))) => Ok(Val::Int(v)),
                    _ => Err(NoValue),
                }
            }
        }
        Expr::Arrow(p, _) | Expr::Index(p, _) => match eval(spec, f, m, p)? {
            Val::NonNull => lookup(e),
            _ => Err(NoValue),
        },
        Expr::Dot(..) => lookup(e),
        Expr::Unary('!', x) => Ok(b(!truth(eval(spec, f, m, x)?))),
        Expr::Unary('-', x) => Ok(Val::Int(-int(eval(spec, f, m, x)?)?)),
        Expr::Unary(_, x) => Ok(Val::Int(!int(eval(spec, f, m, x)?)?)),
        Expr::Cond(c, x, y) => {
            if truth(eval(spec, f, m, c)?) {
                eval(spec, f, m, x)
            } else {
                eval(spec, f, m, y)
            }
        }
        Expr::Binary("&&", x, y) => Ok(b(truth(eval(spec, f, m, x)?) && truth(eval(spec, f, m, y)?))),
        Expr::Binary("||", x, y) => Ok(b(truth(eval(spec, f, m, x)?) || truth(eval(spec, f, m, y)?))),
        Expr::Binary(op, x, y) => {
            let (l, r) = (eval(spec, f, m, x)?, eval(spec, f, m, y)?);
            if matches!(*op, "==" | "!=")
                && (matches!(l, Val::Null | Val::NonNull) || matches!(r, Val::Null | Val::NonNull))
            {
                return Ok(b((l == r) == (*op == "==")));
            }
            let (l, r) = (int(l)?, int(r)?);
            Ok(match *op {
                "==" => b(l == r),
                "!=" => b(l != r),
                "<" => b(l < r),
                ">" => b(l > r),
                "<=" => b(l <= r),
                ">=" => b(l >= r),
                "+" => Val::Int(l.wrapping_add(r)),
                "-" => Val::Int(l.wrapping_sub(r)),
                "*" => Val::Int(l.wrapping_mul(r)),
                "/" => Val::Int(if r == 0 { 0 } else { l / r }),
                "%" => Val::Int(if r == 0 { 0 } else { l % r }),
                "&" => Val::Int(l & r),
                "|" => Val::Int(l | r),
                "^" => Val::Int(l ^ r),
                "<<" => Val::Int(l.wrapping_shl(r as u32)),
                ">>" => Val::Int(l.wrapping_shr(r as u32)),
                _ => return Err(NoValue),
            })
        }
    }
}

/// The lvalues a condition reads, pointers it reads through included.
pub fn lvalues(spec: &Spec, f: &Function, e: &Expr, out: &mut Vec<Expr>) {
    let push = |x: &Expr, out: &mut Vec<Expr>| {
        if !out.contains(x) && lvalue_type(spec, f, x).is_ok() {
            out.push(x.clone());
        }
    };
    match e {
        Expr::Name(_) => push(e, out),
        Expr::Arrow(p, _) | Expr::Dot(p, _) => {
            lvalues(spec, f, p, out);
            push(e, out);
        }
        Expr::Index(p, i) => {
            lvalues(spec, f, p, out);
            lvalues(spec, f, i, out);
            push(e, out);
        }
        Expr::Unary(_, x) => lvalues(spec, f, x, out),
        Expr::Binary(_, x, y) => {
            lvalues(spec, f, x, out);
            lvalues(spec, f, y, out);
        }
        Expr::Cond(c, x, y) => {
            lvalues(spec, f, c, out);
            lvalues(spec, f, x, out);
            lvalues(spec, f, y, out);
        }
        Expr::Null | Expr::Int(_) => {}
    }
}

fn constants(spec: &Spec, e: &Expr, out: &mut Vec<i128>) {
    match e {
        Expr::Int(v) => out.push(*v),
        Expr::Name(n) => {
            if let Some((_, Some(v))) = constant(spec, n) {
                out.push(v);
            }
        }
        Expr::Unary(_, x) | Expr::Arrow(x, _) | Expr::Dot(x, _) => constants(spec, x, out),
        Expr::Binary(_, x, y) | Expr::Index(x, y) => {
            constants(spec, x, out);
            constants(spec, y, out);
        }
        Expr::Cond(c, x, y) => {
            constants(spec, c, out);
            constants(spec, x, out);
            constants(spec, y, out);
        }
        Expr::Null => {}
    }
}

/// The values tried for an lvalue: null and valid for pointers; for
/// integers small numbers, the constants of the entry point's conditions
/// and their neighbours, and the lowest bit of each mask among them.
fn candidates(spec: &Spec, f: &Function, e: &Expr, conds: &[&Expr]) -> Vec<Val> {
    let Ok(ty) = lvalue_type(spec, f, e) else { return Vec::new() };
    match kind_of(spec, &ty) {
        Kind::Ptr(_) | Kind::FnPtr => vec![Val::Null, Val::NonNull],
        Kind::Aggregate(_) => Vec::new(),
        _ => {
            let mut nums: Vec<i128> = vec![0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 64, 256, 4096];
            let mut consts = Vec::new();
            for c in conds {
                constants(spec, c, &mut consts);
            }
            let bits: i128 = consts.iter().filter(|c| **c > 0 && (**c & (**c - 1)) == 0).fold(0, |a, c| a | c);
            for c in consts {
                nums.extend([c - 1, c, c + 1]);
                if c > 0 {
                    nums.push(c & -c);
                }
            }
            // Flags that must not be set together: all the single bits at once.
            nums.push(bits);
            let max = match ty.base.as_str() {
                "bool" | "ur_bool_t" | "uint8_t" => 1,
                "uint64_t" | "size_t" | "uintptr_t" => i128::from(u64::MAX),
                _ => i128::from(u32::MAX),
            };
            nums.retain(|n| (0..=max).contains(n));
            nums.sort();
            nums.dedup();
            nums.into_iter().map(Val::Int).collect()
        }
    }
}

/// The codes due in `m`, one per true condition, in check order (a
/// condition that would read through a null pointer is not due: an
/// earlier null check answers first).
pub fn due(spec: &Spec, f: &Function, conds: &[(&str, &Expr)], m: &Model) -> Vec<usize> {
    conds
        .iter()
        .enumerate()
        .filter(|(_, (_, e))| matches!(eval(spec, f, m, e), Ok(v) if v != Val::Int(0) && v != Val::Null))
        .map(|(i, _)| i)
        .collect()
}

/// Tries changing one, then two of `vars` until `accept` holds.
fn search(
    spec: &Spec,
    f: &Function,
    base: &Model,
    vars: &[Expr],
    all: &[&Expr],
    accept: &dyn Fn(&Model) -> bool,
) -> Option<Model> {
    let with = |m: &Model, e: &Expr, v: Val| {
        let mut m = m.clone();
        m.set.insert(e.to_string(), (e.clone(), v));
        m
    };
    for a in vars {
        for va in candidates(spec, f, a, all) {
            let m = with(base, a, va);
            if accept(&m) {
                return Some(m);
            }
        }
    }
    for (i, a) in vars.iter().enumerate() {
        for b in &vars[i + 1..] {
            for va in candidates(spec, f, a, all) {
                let ma = with(base, a, va);
                for vb in candidates(spec, f, b, all) {
                    let m = with(&ma, b, vb);
                    if accept(&m) {
                        return Some(m);
                    }
                }
            }
        }
    }
    None
}

/// Arguments under which no condition is due, from the defaults.
pub fn baseline(spec: &Spec, f: &Function, conds: &[(&str, &Expr)]) -> Result<Model, String> {
    let all: Vec<&Expr> = conds.iter().map(|(_, e)| *e).collect();
    let mut m = Model::default();
    for _ in 0..32 {
        let now = due(spec, f, conds, &m);
        let Some(&first) = now.first() else { return Ok(m) };
        let mut vars = Vec::new();
        lvalues(spec, f, conds[first].1, &mut vars);
        let n = now.len();
        let fixed = search(spec, f, &m, &vars, &all, &|c| {
            let d = due(spec, f, conds, c);
            !d.contains(&first) && d.len() < n
        });
        match fixed {
            Some(next) => m = next,
            None => return Err(format!("no arguments satisfy `{}`'s opposite", conds[first].1)),
        }
    }
    Err("no arguments satisfy every condition".into())
}

/// Arguments, from `base`, under which condition `k` is due and every due
/// condition has its code.
pub fn violation(spec: &Spec, f: &Function, conds: &[(&str, &Expr)], base: &Model, k: usize) -> Option<Model> {
    let all: Vec<&Expr> = conds.iter().map(|(_, e)| *e).collect();
    let mut vars = Vec::new();
    lvalues(spec, f, conds[k].1, &mut vars);
    search(spec, f, base, &vars, &all, &|m| {
        let d = due(spec, f, conds, m);
        d.contains(&k) && d.iter().all(|i| conds[*i].0 == conds[k].0)
    })
}
