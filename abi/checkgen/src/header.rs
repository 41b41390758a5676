//! What the generators need of `ur_api.h` and `ur_ddi.h`: types, constants,
//! entry points with their parameters and `@returns` lists, and the slot of
//! each entry point in the dispatch tables. A text reader, not a C parser:
//! it relies on the layout UR's own generator writes (one declaration per
//! statement, doc comments in `///` lines).

use std::collections::BTreeMap;

use crate::expr::{self, Expr};

/// A C type as written in a declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CType {
    /// The base type name (`uint32_t`, `ur_device_handle_t`, `void`).
    pub base: String,
    /// Whether the base is `const`.
    pub base_const: bool,
    /// One entry per `*`, innermost first: whether that pointer is `const`.
    pub ptrs: Vec<bool>,
}

impl CType {
    /// Parses `const ur_device_handle_t *`, `void **`, `size_t`.
    pub fn parse(text: &str) -> CType {
        let spaced = text.replace('*', " * ");
        let mut ty = CType { base: String::new(), base_const: false, ptrs: Vec::new() };
        for word in spaced.split_whitespace() {
            match word {
                "const" if ty.base.is_empty() => ty.base_const = true,
                "const" => {
                    if let Some(last) = ty.ptrs.last_mut() {
                        *last = true;
                    } else {
                        ty.base_const = true;
                    }
                }
                "*" => ty.ptrs.push(false),
                "struct" | "enum" | "union" => {}
                name => ty.base = name.to_string(),
            }
        }
        ty
    }

    /// The type one level of pointer down.
    pub fn pointee(&self) -> CType {
        let mut t = self.clone();
        t.ptrs.pop();
        t
    }

    /// The C spelling.
    pub fn c(&self) -> String {
        let mut s = format!("{}{}", if self.base_const { "const " } else { "" }, self.base);
        for c in &self.ptrs {
            s.push_str(if *c { " *const" } else { " *" });
        }
        s
    }

    /// The Rust spelling of bindgen's translation.
    pub fn rust(&self) -> String {
        let mut s = match self.base.as_str() {
            "uint8_t" => "u8",
            "int8_t" => "i8",
            "uint16_t" => "u16",
            "int16_t" => "i16",
            "uint32_t" => "u32",
            "int32_t" => "i32",
            "uint64_t" => "u64",
            "int64_t" => "i64",
            "size_t" | "uintptr_t" => "usize",
            "intptr_t" => "isize",
            "bool" => "bool",
            "char" => "::std::ffi::c_char",
            "int" => "::std::ffi::c_int",
            "void" => "::std::ffi::c_void",
            "double" => "f64",
            "float" => "f32",
            other => other,
        }
        .to_string();
        for (i, _) in self.ptrs.iter().enumerate() {
            let pointee_const = if i == 0 { self.base_const } else { self.ptrs[i - 1] };
            s = format!("*{} {s}", if pointee_const { "const" } else { "mut" });
        }
        s
    }
}

/// A struct or union field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Its type.
    pub ty: CType,
    /// Its name.
    pub name: String,
    /// Its doc comment, joined.
    pub doc: String,
}

/// A parameter of an entry point.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its type.
    pub ty: CType,
    /// Its name.
    pub name: String,
    /// Its doc comment (`[in][optional] ...`).
    pub doc: String,
}

/// One item of an `@returns` list under a result code.
#[derive(Clone, Debug)]
pub struct Condition {
    /// `UR_RESULT_ERROR_...`.
    pub code: String,
    /// The item's text as the header writes it (without the backticks).
    pub text: String,
    /// The parsed expression when the item is one C expression.
    pub expr: Option<Expr>,
}

/// An entry point.
#[derive(Clone, Debug)]
pub struct Function {
    /// `urContextCreate`.
    pub name: String,
    /// Its parameters.
    pub params: Vec<Param>,
    /// Every condition of its `@returns` list, in the header's order.
    pub conditions: Vec<Condition>,
    /// Where the dispatch table holds it: (`Context`, `pfnCreate`).
    pub slot: Option<(String, String)>,
}

/// What kind of C type a type name is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeDef {
    /// An opaque handle (a pointer).
    Handle,
    /// An integer typedef (`ur_bool_t`, `*_flags_t`, `ur_native_handle_t`).
    Integer,
    /// A function pointer typedef.
    FnPtr,
    /// An enumeration and its members' values (`None` where not a plain number).
    Enum(Vec<(String, Option<i128>)>),
    /// A struct or union and its fields.
    Aggregate(Vec<Field>),
}

/// A dispatch table of `ur_dditable_t`.
#[derive(Clone, Debug)]
pub struct Table {
    /// Its field in `ur_dditable_t` (`Context`).
    pub field: String,
    /// Its struct type (`ur_context_dditable_t`).
    pub ty: String,
    /// Its getter (`urGetContextProcAddrTable`).
    pub getter: String,
    /// Its slots: (`pfnCreate`, `urContextCreate`).
    pub slots: Vec<(String, String)>,
}

/// The headers, read.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    /// Named types.
    pub types: BTreeMap<String, TypeDef>,
    /// `#define`d integer constants (the flag masks).
    pub defines: BTreeMap<String, i128>,
    /// For each enumerator, its enumeration.
    pub enumerators: BTreeMap<String, String>,
    /// Every entry point of `ur_api.h`, in order.
    pub functions: Vec<Function>,
    /// The dispatch tables, in `ur_dditable_t`'s order.
    pub tables: Vec<Table>,
}

/// Removes `//` comments and joins everything into one line of code.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or_default();
        if line.trim_start().starts_with('#') {
            continue;
        }
        out.push_str(line);
        out.push(' ');
    }
    out
}

/// The statements of `code` that start with `typedef`.
fn typedefs(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("typedef ") {
        let stmt = &rest[at..];
        // A statement ends at the `;` outside braces.
        let mut depth = 0i32;
        let mut end = stmt.len();
        for (i, c) in stmt.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ';' if depth == 0 => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        out.push(&stmt[..end]);
        rest = &stmt[end..];
    }
    out
}

fn enum_value(text: &str, known: &BTreeMap<String, i128>) -> Option<i128> {
    let text = text.trim();
    if let Some(bit) = text.strip_prefix("UR_BIT(").and_then(|r| r.strip_suffix(')')) {
        return bit.trim().parse::<u32>().ok().map(|b| 1i128 << b);
    }
    match expr::parse(text).ok()? {
        Expr::Int(v) => Some(v),
        Expr::Name(n) => known.get(&n).copied(),
        Expr::Binary("<<", a, b) => match (*a, *b) {
            (Expr::Int(a), Expr::Int(b)) => Some(a << b),
            _ => None,
        },
        _ => None,
    }
}

/// The declarations of a struct body or parameter list, each with the doc
/// comment above it: a declaration may be wrapped over lines and ends at
/// `end` (`;` for fields, `,` for parameters) or at the text's end.
fn declarations(text: &str, end: char) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut doc = String::new();
    let mut pending = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(d) = t.strip_prefix("///") {
            doc.push_str(d.trim());
            doc.push(' ');
            continue;
        }
        pending.push_str(t.split("//").next().unwrap_or_default());
        pending.push(' ');
        if pending.trim_end().ends_with(end) {
            out.push((std::mem::take(&mut doc).trim().to_string(), std::mem::take(&mut pending)));
        }
    }
    out.push((doc.trim().to_string(), pending));
    out.retain_mut(|(_, decl)| {
        *decl = decl.trim().trim_end_matches(end).trim().to_string();
        !decl.is_empty() && decl != "void" && !decl.starts_with('}')
    });
    out
}

/// A declaration's type and name (`const T *name`; `T name[N]` keeps its
/// array out of the type: the checks never index fields).
fn split_declaration(decl: &str) -> (CType, String) {
    let decl = decl.split('[').next().unwrap_or(decl).trim();
    let split = decl.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    (CType::parse(&decl[..split]), decl[split..].to_string())
}

/// The fields of a struct body, with their docs.
fn fields(body_with_docs: &str) -> Vec<Field> {
    declarations(body_with_docs, ';')
        .into_iter()
        .map(|(doc, decl)| {
            let (ty, name) = split_declaration(&decl);
            Field { ty, name, doc }
        })
        .collect()
}

/// Reads `ur_api.h` and `ur_ddi.h`.
pub fn read(api: &str, ddi: &str) -> Spec {
    let mut spec = Spec::default();
    for line in api.lines() {
        let mut words = line.split_whitespace();
        if words.next() == Some("#define")
            && let (Some(name), Some(value), None) = (words.next(), words.next(), words.next())
            && let Some(v) = enum_value(value, &spec.defines)
            && name.starts_with("UR_")
        {
            spec.defines.insert(name.to_string(), v);
        }
    }
    let code = code_only(api);
    for stmt in typedefs(&code) {
        let body = stmt.trim_start_matches("typedef ").trim();
        let last_name = body
            .trim_end()
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .find(|s| !s.is_empty())
            .unwrap_or_default()
            .to_string();
        if let Some(rest) = body.strip_prefix("enum ") {
            let Some((_, inner)) = rest.split_once('{') else { continue };
            let inner = inner.rsplit_once('}').map_or(inner, |(i, _)| i);
            let mut members = Vec::new();
            let mut known = spec.defines.clone();
            for item in inner.split(',') {
                let item = item.replace("[[deprecated]]", "");
                let Some((name, value)) = item.split_once('=') else { continue };
                let name = name.trim().to_string();
                let value = enum_value(value, &known);
                if let Some(v) = value {
                    known.insert(name.clone(), v);
                }
                spec.enumerators.insert(name.clone(), last_name.clone());
                members.push((name, value));
            }
            spec.types.insert(last_name, TypeDef::Enum(members));
        } else if body.starts_with("struct ") && !body.contains('{') {
            spec.types.insert(last_name, TypeDef::Handle);
        } else if body.starts_with("struct ") || body.starts_with("union ") {
            // The fields with their docs: from the original text.
            let Some(head) = body.split('{').next() else { continue };
            let tag = head.split_whitespace().nth(1).unwrap_or_default();
            let decl = format!("typedef {} {tag} {{", head.split_whitespace().next().unwrap_or_default());
            let fields = api
                .split_once(&decl)
                .and_then(|(_, rest)| rest.split_once(&format!("}} {last_name};")))
                .map(|(body, _)| fields(body))
                .unwrap_or_default();
            spec.types.insert(last_name, TypeDef::Aggregate(fields));
        } else if body.contains("(*") || body.contains("( *") {
            let name = body.split("(*").nth(1).or_else(|| body.split("( *").nth(1)).unwrap_or_default();
            let name = name.split(')').next().unwrap_or_default().trim().to_string();
            spec.types.insert(name, TypeDef::FnPtr);
        } else {
            spec.types.insert(last_name, TypeDef::Integer);
        }
    }
    spec.functions = functions(api);
    spec.tables = tables(ddi);
    let slots: BTreeMap<String, (String, String)> = spec
        .tables
        .iter()
        .flat_map(|t| t.slots.iter().map(|(pfn, f)| (f.clone(), (t.field.clone(), pfn.clone()))))
        .collect();
    for f in &mut spec.functions {
        f.slot = slots.get(&f.name).cloned();
    }
    spec
}

fn functions(api: &str) -> Vec<Function> {
    const MARK: &str = "UR_APIEXPORT ur_result_t UR_APICALL";
    let mut out = Vec::new();
    let mut rest = api;
    while let Some(at) = rest.find(MARK) {
        let before = &rest[..at];
        let after = &rest[at + MARK.len()..];
        rest = after;
        let Some((name, tail)) = after.trim_start().split_once('(') else { continue };
        let Some((params_text, _)) = tail.split_once(");") else { continue };
        // The doc block: the `///` lines right above.
        let doc: Vec<&str> = before
            .lines()
            .rev()
            .skip_while(|l| l.trim().is_empty())
            .take_while(|l| l.trim_start().starts_with("///"))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .map(|l| l.trim_start().trim_start_matches("///"))
            .collect();
        let params = declarations(params_text, ',')
            .into_iter()
            .map(|(doc, decl)| {
                let (ty, name) = split_declaration(&decl);
                Param { ty, name, doc }
            })
            .collect();
        out.push(Function { name: name.trim().to_string(), params, conditions: returns(&doc), slot: None });
    }
    out
}

/// The `@returns` list: `- ::CODE` items, each with `+ condition` items;
/// lines that continue an item are joined to it.
fn returns(doc: &[&str]) -> Vec<Condition> {
    let Some(start) = doc.iter().position(|l| l.trim() == "@returns") else { return Vec::new() };
    let mut items: Vec<(char, String)> = Vec::new();
    for line in &doc[start + 1..] {
        let t = line.trim();
        if t.starts_with('@') {
            break;
        }
        if let Some(rest) = t.strip_prefix("- ") {
            items.push(('-', rest.to_string()));
        } else if let Some(rest) = t.strip_prefix("+ ") {
            items.push(('+', rest.to_string()));
        } else if let Some(last) = items.last_mut()
            && !t.is_empty()
        {
            last.1.push(' ');
            last.1.push_str(t);
        }
    }
    let mut out = Vec::new();
    let mut code = String::new();
    for (kind, text) in items {
        if kind == '-' {
            code = text.split_whitespace().next().unwrap_or_default().trim_start_matches("::").to_string();
            continue;
        }
        let text = text.trim().to_string();
        // One C expression in backticks, nothing else: UR's own generator
        // turns exactly these into its validation layer's checks.
        let inner = text.strip_prefix('`').and_then(|t| t.strip_suffix('`')).filter(|t| !t.contains('`'));
        let expr = inner.and_then(|t| expr::parse(t).ok());
        out.push(Condition { code: code.clone(), text: inner.unwrap_or(&text).to_string(), expr });
    }
    out
}

fn tables(ddi: &str) -> Vec<Table> {
    let code = code_only(ddi);
    let mut structs: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut order = Vec::new();
    for stmt in typedefs(&code) {
        let body = stmt.trim_start_matches("typedef ").trim();
        let Some(rest) = body.strip_prefix("struct ") else { continue };
        let Some((tag, inner)) = rest.split_once('{') else { continue };
        let inner = inner.rsplit_once('}').map_or(inner, |(i, _)| i);
        let members: Vec<(String, String)> = inner
            .split(';')
            .filter_map(|m| {
                let mut w = m.split_whitespace();
                Some((w.next()?.to_string(), w.next()?.to_string()))
            })
            .collect();
        if tag.trim() == "ur_dditable_t" {
            order = members;
        } else {
            structs.insert(tag.trim().to_string(), members);
        }
    }
    order
        .into_iter()
        .map(|(ty, field)| {
            let slots = structs
                .get(&ty)
                .map(|m| {
                    m.iter()
                        .map(|(pfn_ty, pfn)| {
                            // ur_pfnContextCreate_t -> urContextCreate
                            let f = pfn_ty.trim_start_matches("ur_pfn").trim_end_matches("_t");
                            (pfn.clone(), format!("ur{f}"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let getter = format!("urGet{field}ProcAddrTable");
            Table { field, ty, getter, slots }
        })
        .collect()
}
