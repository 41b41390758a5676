//! The Rust checks: one checking wrapper per dispatch-table slot, which
//! tests the entry point's mechanical conditions in UR's order and then
//! calls the implementation, and the table of those wrappers.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::expr::Expr;
use crate::header::{Function, Spec};
use crate::typing::{Kind, constant, kind_of, lvalue_type, nonnull_if};
use crate::{Check, Plan};

/// Rust code for one condition: the boolean expression and whether it
/// dereferences a pointer (needs `unsafe`).
struct Emitted {
    code: String,
    kind: Kind,
    derefs: bool,
    /// Already an `i128`.
    wide: bool,
}

struct Emitter<'a> {
    spec: &'a Spec,
    f: &'a Function,
}

impl Emitter<'_> {
    fn emit(&self, e: &Expr, facts: &BTreeSet<String>) -> Result<Emitted, String> {
        let leaf = |code: String, kind: Kind| {
            Ok(Emitted { wide: code.ends_with("i128") || code.ends_with("as i128)"), code, kind, derefs: false })
        };
        match e {
            Expr::Null => leaf("NULL".into(), Kind::Null),
            Expr::Int(v) => leaf(format!("{v}i128"), Kind::Int),
            Expr::Name(n) => {
                if let Some(p) = self.f.params.iter().find(|p| &p.name == n) {
                    return leaf(ident(&p.name), kind_of(self.spec, &p.ty));
                }
                match constant(self.spec, n) {
                    Some((None, _)) => leaf(format!("({n} as i128)"), Kind::Int),
                    Some((Some(owner), _)) => leaf(format!("({owner}::{n}.0 as i128)"), Kind::Int),
                    None => Err(format!("`{n}` is neither a parameter nor a constant")),
                }
            }
            Expr::Arrow(p, field) => {
                if !facts.contains(&p.to_string()) {
                    return Err(format!("reads `{p}->{field}` where `{p}` may be null"));
                }
                let inner = self.emit(p, facts)?;
                let ty = lvalue_type(self.spec, self.f, e)?;
                Ok(Emitted {
                    wide: false,
                    code: format!("(*{}).{}", inner.code, field_ident(field)),
                    kind: kind_of(self.spec, &ty),
                    derefs: true,
                })
            }
            Expr::Dot(s, field) => {
                let inner = self.emit(s, facts)?;
                let ty = lvalue_type(self.spec, self.f, e)?;
                Ok(Emitted {
                    wide: false,
                    code: format!("{}.{}", inner.code, field_ident(field)),
                    kind: kind_of(self.spec, &ty),
                    derefs: inner.derefs,
                })
            }
            Expr::Index(p, i) => {
                if !facts.contains(&p.to_string()) {
                    return Err(format!("reads `{p}[{i}]` where `{p}` may be null"));
                }
                let inner = self.emit(p, facts)?;
                let index = self.emit(i, facts)?;
                let ty = lvalue_type(self.spec, self.f, e)?;
                Ok(Emitted {
                    wide: false,
                    code: format!("(*{}.add({} as usize))", inner.code, self.int(&index)?),
                    kind: kind_of(self.spec, &ty),
                    derefs: true,
                })
            }
            Expr::Unary('!', x) => {
                let x = self.emit(x, facts)?;
                Ok(Emitted { code: format!("!{}", self.boolean(&x)?), kind: Kind::Bool, derefs: x.derefs, wide: false })
            }
            Expr::Unary(op, x) => {
                let x = self.emit(x, facts)?;
                let code = match op {
                    '-' => format!("(0i128).wrapping_sub({})", self.int(&x)?),
                    _ => format!("(!{})", self.int(&x)?),
                };
                Ok(Emitted { code, kind: Kind::Int, derefs: x.derefs, wide: true })
            }
            Expr::Cond(c, a, b) => {
                let cc = self.emit(c, facts)?;
                let a = self.emit(a, &union(facts, nonnull_if(c, true)))?;
                let b = self.emit(b, &union(facts, nonnull_if(c, false)))?;
                Ok(Emitted {
                    code: format!("(if {} {{ {} }} else {{ {} }})", self.boolean(&cc)?, self.int(&a)?, self.int(&b)?),
                    kind: Kind::Int,
                    derefs: cc.derefs || a.derefs || b.derefs,
                    wide: true,
                })
            }
            Expr::Binary(op, a, b) => self.binary(op, a, b, facts),
        }
    }

    fn binary(&self, op: &str, a: &Expr, b: &Expr, facts: &BTreeSet<String>) -> Result<Emitted, String> {
        if op == "&&" || op == "||" {
            let l = self.emit(a, facts)?;
            let r = self.emit(b, &union(facts, nonnull_if(a, op == "&&")))?;
            return Ok(Emitted {
                code: format!("({} {op} {})", self.boolean(&l)?, self.boolean(&r)?),
                kind: Kind::Bool,
                derefs: l.derefs || r.derefs,
                wide: false,
            });
        }
        let l = self.emit(a, facts)?;
        let r = self.emit(b, facts)?;
        let derefs = l.derefs || r.derefs;
        if op == "==" || op == "!=" {
            let null_test = match (&l.kind, &r.kind) {
                (Kind::Null, _) => Some(&r),
                (_, Kind::Null) => Some(&l),
                _ => None,
            };
            if let Some(x) = null_test {
                let test = match x.kind {
                    Kind::Ptr(_) => format!("{}.is_null()", x.code),
                    Kind::FnPtr => format!("{}.is_none()", x.code),
                    _ => return Err(format!("compares a non-pointer with NULL ({})", x.code)),
                };
                let code = if op == "==" { test } else { format!("!{test}") };
                return Ok(Emitted { code, kind: Kind::Bool, derefs, wide: false });
            }
        }
        let (li, ri) = (self.int(&l)?, self.int(&r)?);
        let (code, kind) = match op {
            "==" | "!=" | "<" | ">" | "<=" | ">=" => (format!("({li} {op} {ri})"), Kind::Bool),
            "+" => (format!("{li}.wrapping_add({ri})"), Kind::Int),
            "-" => (format!("{li}.wrapping_sub({ri})"), Kind::Int),
            "*" => (format!("{li}.wrapping_mul({ri})"), Kind::Int),
            "/" => (format!("c_div({li}, {ri})"), Kind::Int),
            "%" => (format!("c_rem({li}, {ri})"), Kind::Int),
            "&" | "|" | "^" => (format!("({li} {op} {ri})"), Kind::Int),
            "<<" => (format!("{li}.wrapping_shl({ri} as u32)"), Kind::Int),
            ">>" => (format!("{li}.wrapping_shr({ri} as u32)"), Kind::Int),
            other => return Err(format!("operator {other}")),
        };
        let wide = kind == Kind::Int;
        Ok(Emitted { code, kind, derefs, wide })
    }

    fn int(&self, x: &Emitted) -> Result<String, String> {
        match &x.kind {
            Kind::Int if x.wide => Ok(x.code.clone()),
            Kind::Int => Ok(format!("({} as i128)", x.code)),
            Kind::Bool => Ok(format!("({} as i128)", x.code)),
            Kind::Enum(_) => Ok(format!("({}.0 as i128)", x.code)),
            other => Err(format!("{other:?} used as a number ({})", x.code)),
        }
    }

    fn boolean(&self, x: &Emitted) -> Result<String, String> {
        match &x.kind {
            Kind::Bool => Ok(x.code.clone()),
            Kind::Ptr(_) => Ok(format!("!{}.is_null()", x.code)),
            Kind::FnPtr => Ok(format!("{}.is_some()", x.code)),
            Kind::Int | Kind::Enum(_) => Ok(format!("({} != 0)", self.int(x)?)),
            other => Err(format!("{other:?} used as a truth value")),
        }
    }
}

fn union(a: &BTreeSet<String>, b: BTreeSet<String>) -> BTreeSet<String> {
    let mut out = a.clone();
    out.extend(b);
    out
}

/// Rust's keywords among C parameter names.
fn ident(name: &str) -> String {
    match name {
        "type" | "ref" | "fn" | "loop" | "match" | "in" | "mod" | "move" | "use" | "where" | "impl" | "self"
        | "crate" | "box" | "async" | "await" | "dyn" | "gen" => format!("r#{name}"),
        other => other.to_string(),
    }
}

/// A field's name in bindgen's structs: keywords get a `_` suffix.
fn field_ident(name: &str) -> String {
    if ident(name).starts_with("r#") { format!("{name}_") } else { name.to_string() }
}

/// Conditions of the header that cmdbuf deliberately leaves unchecked: entry
/// point, the start of the condition's text, and why (docs/abi.md, "Where
/// the answers differ from the header"). They are listed as skipped.
pub const NOT_ENFORCED: &[(&str, &str, &str)] = &[(
    "urEnqueueKernelLaunchWithArgsExp",
    "pGlobalWorkSize[0] == 0",
    "deliberately not enforced: a zero global size is an empty launch, as in OpenCL 2.1 and later; \
     libsycl submits such launches for empty arrays (dpnp's all/any of one) and UR's own adapters run them",
)];

/// Why the condition `text` of `function` is deliberately not checked, if it is not.
fn not_enforced(function: &str, text: &str) -> Option<&'static str> {
    NOT_ENFORCED.iter().find(|(f, start, _)| *f == function && text.starts_with(start)).map(|(_, _, why)| *why)
}

/// Orders `f`'s mechanical conditions as UR's validation layer does (null
/// pointers, then null handles, then the other codes in the header's order,
/// each code's conditions in the header's order) and emits each as Rust;
/// a condition that cannot be emitted is kept with the reason.
/// So is a condition in [`NOT_ENFORCED`].
pub fn plan(spec: &Spec, f: &Function) -> Plan {
    let mut codes: Vec<&str> = Vec::new();
    for c in &f.conditions {
        if c.expr.is_some() && !codes.contains(&c.code.as_str()) {
            codes.push(&c.code);
        }
    }
    let first = ["UR_RESULT_ERROR_INVALID_NULL_POINTER", "UR_RESULT_ERROR_INVALID_NULL_HANDLE"];
    codes.sort_by_key(|c| first.iter().position(|x| x == c).unwrap_or(first.len()));
    let emitter = Emitter { spec, f };
    let mut facts = BTreeSet::new();
    let mut checks = Vec::new();
    let mut skipped = Vec::new();
    for code in codes {
        for c in f.conditions.iter().filter(|c| c.code == code) {
            let Some(e) = &c.expr else { continue };
            if let Some(why) = not_enforced(&f.name, &c.text) {
                skipped.push((c.text.clone(), why.to_string()));
                continue;
            }
            match emitter.emit(e, &facts).and_then(|x| Ok((emitter.boolean(&x)?, x.derefs))) {
                Ok((rust, derefs)) => {
                    // The wrapper returns when this holds: what follows may rely on its negation.
                    facts.extend(nonnull_if(e, false));
                    checks.push(Check { code: code.to_string(), text: c.text.clone(), expr: e.clone(), rust, derefs });
                }
                Err(why) => skipped.push((c.text.clone(), why)),
            }
        }
    }
    Plan { checks, skipped }
}

/// The generated Rust module.
pub fn module(spec: &Spec) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by cmdbuf-abi-checkgen from the `intel-sycl-rt` wheel's ur_api.h and ur_ddi.h (UR 0.12):\n\
         // the mechanical `@returns` conditions of every entry point; regenerate with\n\
         // `UR_RS_BLESS=1 cargo test -p cmdbuf-abi --test bindings`. Do not edit.\n\n\
         use crate::sys::*;\n\n\
         /// C's `/` without the panic on zero: a divisor of zero is another check's violation.\n\
         fn c_div(a: i128, b: i128) -> i128 {{\n    if b == 0 {{ 0 }} else {{ a / b }}\n}}\n\n\
         /// C's `%` without the panic on zero, as [`c_div`].\n\
         fn c_rem(a: i128, b: i128) -> i128 {{\n    if b == 0 {{ 0 }} else {{ a % b }}\n}}\n"
    );
    for f in spec.functions.iter().filter(|f| f.slot.is_some()) {
        let Some((table, pfn)) = &f.slot else { continue };
        let plan = plan(spec, f);
        let params: Vec<String> = f.params.iter().map(|p| format!("{}: {}", ident(&p.name), p.ty.rust())).collect();
        let args: Vec<String> = f.params.iter().map(|p| ident(&p.name)).collect();
        let _ = writeln!(s, "/// `{}` behind its {} generated check(s).", f.name, plan.checks.len());
        let _ = writeln!(s, "///\n/// # Safety\n/// UR's contract for `{}`.", f.name);
        let _ = writeln!(s, "pub(crate) unsafe extern \"C\" fn {}({}) -> ur_result_t {{", f.name, params.join(", "));
        for c in &plan.checks {
            let cond = if c.derefs {
                format!(
                    "{{\n        // SAFETY: each pointer read here is non-null (tested first in this\n        \
                     // condition or by an earlier check that returned), and points to what\n        \
                     // UR's contract says.\n        unsafe {{ {} }}\n    }}",
                    c.rust
                )
            } else {
                c.rust.clone()
            };
            let _ = writeln!(
                s,
                "    if {cond} {{\n        return crate::entry::reject(\"{}\", ur_result_t::{}, {:?});\n    }}",
                f.name, c.code, c.text
            );
        }
        let _ = writeln!(
            s,
            "    match crate::tables::implementations().{table}.{pfn} {{\n        \
             // SAFETY: the caller's arguments, forwarded under the same contract.\n        \
             Some(implementation) => unsafe {{ implementation({}) }},\n        \
             None => crate::entry::unsupported(),\n    }}\n}}\n",
            args.join(", ")
        );
    }
    let _ = writeln!(s, "/// The dispatch table of the checking wrappers.\npub(crate) fn table() -> ur_dditable_t {{");
    let _ = writeln!(s, "    ur_dditable_t {{");
    for t in &spec.tables {
        let _ = writeln!(s, "        {}: {} {{", t.field, t.ty);
        for (pfn, f) in &t.slots {
            let _ = writeln!(s, "            {pfn}: Some({f}),");
        }
        let _ = writeln!(s, "        }},");
    }
    let _ = writeln!(s, "    }}\n}}");
    let _ = writeln!(s, "\n// Conditions written as expressions that are not generated, and why:");
    for f in spec.functions.iter().filter(|f| f.slot.is_some()) {
        for (text, why) in plan(spec, f).skipped {
            let _ = writeln!(s, "// - {}: `{text}`: {why}", f.name);
        }
    }
    s
}
