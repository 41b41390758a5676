//! The C expressions of `@returns` conditions: a tokenizer and a
//! precedence-climbing parser for the subset the header uses (comparisons,
//! logic, arithmetic and bit operators, `?:`, member access, indexing).

use std::fmt;

/// A parsed condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// `NULL` or `nullptr`.
    Null,
    /// An integer literal.
    Int(i128),
    /// A name: a parameter, or a constant (`::UR_X`, `UR_X`).
    Name(String),
    /// `!e`, `~e`, `-e`.
    Unary(char, Box<Expr>),
    /// `a op b`.
    Binary(&'static str, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `p->field`.
    Arrow(Box<Expr>, String),
    /// `s.field`.
    Dot(Box<Expr>, String),
    /// `p[i]`.
    Index(Box<Expr>, Box<Expr>),
}

impl fmt::Display for Expr {
    /// The canonical C text, fully parenthesised where it matters for
    /// comparing two lvalues.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Null => f.write_str("NULL"),
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Name(n) => f.write_str(n),
            Expr::Unary(op, e) => write!(f, "{op}({e})"),
            Expr::Binary(op, a, b) => write!(f, "({a} {op} {b})"),
            Expr::Cond(c, a, b) => write!(f, "({c} ? {a} : {b})"),
            Expr::Arrow(p, field) => write!(f, "{p}->{field}"),
            Expr::Dot(s, field) => write!(f, "{s}.{field}"),
            Expr::Index(p, i) => write!(f, "{p}[{i}]"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Name(String),
    Int(i128),
    Op(&'static str),
}

const OPS: [&str; 29] = [
    "->", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "::", "<", ">", "!", "&", "|", "^", "%", "*", "/", "+", "-",
    "?", ":", "(", ")", "[", "]", ".", "~",
];

fn tokenize(text: &str) -> Result<Vec<Tok>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    'outer: while i < bytes.len() {
        let c = bytes[i] as char;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < bytes.len() && ((bytes[i] as char).is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(text[start..i].to_string()));
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i] as char).is_ascii_alphanumeric() {
                i += 1;
            }
            let lit = text[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let value = match lit.strip_prefix("0x").or_else(|| lit.strip_prefix("0X")) {
                Some(hex) => i128::from_str_radix(hex, 16),
                None => lit.parse::<i128>(),
            }
            .map_err(|_| format!("bad number {:?}", &text[start..i]))?;
            out.push(Tok::Int(value));
            continue;
        }
        for op in OPS {
            if text[i..].starts_with(op) {
                i += op.len();
                // `::UR_X` names a constant of the namespace: the prefix adds nothing.
                if op != "::" {
                    out.push(Tok::Op(op));
                }
                continue 'outer;
            }
        }
        return Err(format!("unexpected {c:?}"));
    }
    Ok(out)
}

/// Parses a condition's C text.
pub fn parse(text: &str) -> Result<Expr, String> {
    let toks = tokenize(text)?;
    let mut p = Parser { toks, pos: 0 };
    let e = p.ternary()?;
    if p.pos != p.toks.len() {
        return Err(format!("trailing {:?}", p.toks[p.pos]));
    }
    Ok(e)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

/// Binary operators by precedence, loosest first (C's table).
const LEVELS: [&[&str]; 10] = [
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Parser {
    fn peek_op(&self) -> Option<&'static str> {
        match self.toks.get(self.pos) {
            Some(Tok::Op(op)) => Some(op),
            _ => None,
        }
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.peek_op() == Some(op) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected {op:?} at token {}", self.pos))
        }
    }

    fn ternary(&mut self) -> Result<Expr, String> {
        let cond = self.binary(0)?;
        if self.peek_op() == Some("?") {
            self.pos += 1;
            let a = self.ternary()?;
            self.expect(":")?;
            let b = self.ternary()?;
            return Ok(Expr::Cond(Box::new(cond), Box::new(a), Box::new(b)));
        }
        Ok(cond)
    }

    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        while let Some(op) = self.peek_op().filter(|op| LEVELS[level].contains(op)) {
            self.pos += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        match self.peek_op() {
            Some(op @ ("!" | "~" | "-")) => {
                self.pos += 1;
                let e = self.unary()?;
                Ok(Expr::Unary(op.chars().next().unwrap_or('!'), Box::new(e)))
            }
            _ => self.postfix(),
        }
    }

    fn postfix(&mut self) -> Result<Expr, String> {
        let mut e = self.primary()?;
        loop {
            match self.peek_op() {
                Some("->") => {
                    self.pos += 1;
                    e = Expr::Arrow(Box::new(e), self.name()?);
                }
                Some(".") => {
                    self.pos += 1;
                    e = Expr::Dot(Box::new(e), self.name()?);
                }
                Some("[") => {
                    self.pos += 1;
                    let i = self.ternary()?;
                    self.expect("]")?;
                    e = Expr::Index(Box::new(e), Box::new(i));
                }
                _ => return Ok(e),
            }
        }
    }

    fn name(&mut self) -> Result<String, String> {
        match self.toks.get(self.pos) {
            Some(Tok::Name(n)) => {
                self.pos += 1;
                Ok(n.clone())
            }
            other => Err(format!("expected a name, found {other:?}")),
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(Expr::Int(v))
            }
            Some(Tok::Name(n)) => {
                self.pos += 1;
                Ok(match n.as_str() {
                    "NULL" | "nullptr" => Expr::Null,
                    _ => Expr::Name(n),
                })
            }
            Some(Tok::Op("(")) => {
                self.pos += 1;
                let e = self.ternary()?;
                self.expect(")")?;
                Ok(e)
            }
            other => Err(format!("unexpected {other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_header_forms() {
        let e = parse("NULL != pProperties && ::UR_CONTEXT_FLAGS_MASK & pProperties->flags").unwrap();
        assert_eq!(e.to_string(), "((NULL != pProperties) && (UR_CONTEXT_FLAGS_MASK & pProperties->flags))");
        let e = parse("hostSlicePitch != 0 && hostSlicePitch % (hostRowPitch != 0 ? hostRowPitch : region.width) != 0")
            .unwrap();
        assert_eq!(
            e.to_string(),
            "((hostSlicePitch != 0) && ((hostSlicePitch % ((hostRowPitch != 0) ? hostRowPitch : region.width)) != 0))"
        );
        let e = parse("pGlobalWorkSize[0] == 0 || (workDim >= 2 && pGlobalWorkSize[1] == 0)").unwrap();
        assert_eq!(e.to_string(), "((pGlobalWorkSize[0] == 0) || ((workDim >= 2) && (pGlobalWorkSize[1] == 0)))");
        assert_eq!(parse("x == nullptr").unwrap().to_string(), "(x == NULL)");
        assert!(parse("`size` is greater").is_err());
        assert!(parse("a b").is_err());
    }
}
