//! Reading kernel signatures out of PTX text.
//!
//! Each `.entry name(...)` is a kernel; its `.param` declarations are its
//! arguments, in order. A parameter marked `.ptr.global` (or `.ptr` without a
//! state space, which is generic) is a global argument; every other parameter is
//! a value of its size (`.u64` is 8 bytes, `.align 4 .b8 s[16]` is 16):
//! ordinary PTX cannot tell an 8-byte pointer from an 8-byte integer, which is
//! why launches accept a pointer for any 8-byte value argument. A `.reqntid`
//! directive is the kernel's required work-group size.

use crate::types::error::Result;
use crate::types::program::{ArgKind, KernelSignature};
use crate::{ensure, err};

/// Whether `bytes` look like PTX text: a `.version` directive before any
/// other, after comments and blank space.
pub fn is_ptx(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes.strip_suffix(&[0]).unwrap_or(bytes)) else { return false };
    strip_comments(text).split_whitespace().next() == Some(".version")
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |n| &r[n..]);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |n| &r[n + 2..]);
            out.push(' ');
        } else {
            let c = rest.chars().next().expect("non-empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The size in bytes of a PTX fundamental type such as `.u32` or `.f16x2`.
fn type_size(ty: &str) -> Option<usize> {
    Some(match ty {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

/// A parameter's kind, and whether it is one 32-bit integer (which DPC++'s
/// lowering of a local accessor makes it: see
/// `KernelSignature::local_offset_args`).
fn param(kernel: &str, index: usize, decl: &str) -> Result<(ArgKind, bool)> {
    let bad = || err!(InvalidBinary, "parameter {index} of PTX kernel `{kernel}` is not understood: `{decl}`");
    let mut tokens = decl.split_whitespace().peekable();
    ensure!(tokens.next() == Some(".param"), InvalidBinary, "parameter {index} of PTX kernel `{kernel}`: `{decl}`");
    let (mut size, mut pointer, mut name, mut integer_32) = (None, None, None, false);
    while let Some(t) = tokens.next() {
        match t {
            ".align" => {
                tokens.next().ok_or_else(bad)?;
            }
            ".ptr" => pointer = Some(".generic"),
            _ if t.starts_with(".ptr.") => pointer = Some(&t[4..]),
            ".global" | ".const" | ".shared" | ".local" if pointer.is_some() => pointer = Some(t),
            _ if t.starts_with('.') => {
                size = Some(type_size(t).ok_or_else(bad)?);
                integer_32 = matches!(t, ".u32" | ".s32" | ".b32");
            }
            _ => name = Some(t),
        }
    }
    let size = size.ok_or_else(bad)?;
    let name = name.ok_or_else(bad)?;
    let count = match (name.find('['), name.strip_suffix(']')) {
        (Some(open), Some(inner)) => inner[open + 1..].trim().parse::<usize>().map_err(|_| bad())?,
        (None, None) => 1,
        _ => return Err(bad()),
    };
    Ok(match pointer {
        Some(".global" | ".generic") => (ArgKind::Global, false),
        _ => (ArgKind::Value(size.checked_mul(count).ok_or_else(bad)?), integer_32 && count == 1 && pointer.is_none()),
    })
}

/// The kernels (`.entry` functions) of a PTX module and their signatures.
/// `InvalidBinary` when the text is not PTX or a declaration is not understood.
pub fn entry_points(bytes: &[u8]) -> Result<Vec<KernelSignature>> {
    let text = std::str::from_utf8(bytes.strip_suffix(&[0]).unwrap_or(bytes))
        .map_err(|_| err!(InvalidBinary, "the PTX is not UTF-8 text"))?;
    ensure!(is_ptx(bytes), InvalidBinary, "not PTX: the text does not start with a .version directive");
    let text = strip_comments(text);
    let mut out: Vec<KernelSignature> = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = find_directive(rest, ".entry") {
        rest = &rest[at + ".entry".len()..];
        let open = rest.find('(');
        let brace = rest.find('{');
        let name_end =
            [open, brace].into_iter().flatten().min().ok_or_else(|| err!(InvalidBinary, "`.entry` has no body"))?;
        let name = rest[..name_end].trim();
        ensure!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "_$%.".contains(c)),
            InvalidBinary,
            "PTX entry name `{name}` is not an identifier"
        );
        let (mut args, mut local_offset_args) = (Vec::new(), Vec::new());
        let mut after = &rest[name_end..];
        if open == Some(name_end) {
            let close =
                after.find(')').ok_or_else(|| err!(InvalidBinary, "PTX entry `{name}`: unclosed parameter list"))?;
            for (i, decl) in after[1..close].split(',').map(str::trim).filter(|d| !d.is_empty()).enumerate() {
                let (kind, integer_32) = param(name, i, decl)?;
                args.push(kind);
                if integer_32 {
                    local_offset_args.push(i);
                }
            }
            after = &after[close + 1..];
        }
        let body = after.find('{').ok_or_else(|| err!(InvalidBinary, "PTX entry `{name}` has no body"))?;
        let mut signature = KernelSignature::new(name.to_string(), args);
        signature.local_offset_args = local_offset_args;
        signature.reqd_work_group_size = reqntid(name, &after[..body])?;
        ensure!(!out.iter().any(|k| k.name == signature.name), InvalidBinary, "PTX entry `{name}` is defined twice");
        out.push(signature);
        rest = &after[body..];
    }
    Ok(out)
}

/// The position of `directive` as a whole token in `text`.
fn find_directive(text: &str, directive: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(directive) {
        let at = from + i;
        let end = at + directive.len();
        let before_ok = at == 0 || text.as_bytes()[at - 1].is_ascii_whitespace();
        let after_ok = text.as_bytes().get(end).is_none_or(|c| c.is_ascii_whitespace());
        if before_ok && after_ok {
            return Some(at);
        }
        from = end;
    }
    None
}

/// The `.reqntid x[, y[, z]]` among an entry's performance directives.
fn reqntid(name: &str, directives: &str) -> Result<Option<[usize; 3]>> {
    let Some(at) = find_directive(directives, ".reqntid") else { return Ok(None) };
    let list = directives[at + ".reqntid".len()..].split('.').next().unwrap_or("");
    let mut size = [1usize; 3];
    let values: Vec<&str> = list.split(',').map(str::trim).filter(|v| !v.is_empty()).collect();
    ensure!((1..=3).contains(&values.len()), InvalidBinary, "PTX entry `{name}`: malformed .reqntid");
    for (s, v) in size.iter_mut().zip(values) {
        *s = v.parse().map_err(|_| err!(InvalidBinary, "PTX entry `{name}`: .reqntid value `{v}`"))?;
    }
    Ok(Some(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_entries_and_parameters() {
        let ptx = b"// comment\n.version 7.0\n.target sm_70\n.address_size 64\n\
            .visible .func helper(.param .b64 p) { ret; }\n\
            .visible .entry k1(\n .param .u64 .ptr.global .align 8 k1_param_0,\n .param .u32 k1_param_1,\n\
             .param .align 4 .b8 k1_param_2[12], /* c */ .param .u64 k1_param_3\n)\n.reqntid 64, 2\n{\n ret;\n}\n\
            .entry k2 { ret; }\n";
        let k = entry_points(ptx).unwrap();
        assert_eq!(k.len(), 2);
        assert_eq!(k[0].name, "k1");
        assert_eq!(k[0].args, vec![ArgKind::Global, ArgKind::Value(4), ArgKind::Value(12), ArgKind::Value(8)]);
        assert_eq!(k[0].reqd_work_group_size, Some([64, 2, 1]));
        assert_eq!(k[1].name, "k2");
        assert!(k[1].args.is_empty());
        assert_eq!(k[1].reqd_work_group_size, None);
    }

    #[test]
    fn only_single_32_bit_integers_may_be_local_offsets() {
        let ptx = b".version 7.0\n.entry k(.param .u64 a, .param .u32 b, .param .f32 c, .param .s32 d, \
            .param .b32 e, .param .align 4 .b8 f[4], .param .u32 .ptr.shared g, .param .u16 h) { ret; }";
        let k = entry_points(ptx).unwrap();
        assert_eq!(k[0].local_offset_args, vec![1, 3, 4]);
    }

    #[test]
    fn rejects_what_is_not_ptx() {
        assert!(!is_ptx(b"\x7fELF"));
        assert!(entry_points(b"int main() {}").is_err());
        assert!(entry_points(b".version 7.0\n.entry k(.param .weird x) {}").is_err());
        assert!(entry_points(b".version 7.0\n.entry k(.param .u32 x").is_err());
    }

    #[test]
    fn reads_plain_kernels() {
        let k = entry_points(include_bytes!("../../../conformance/src/kernels/programs/cuda.ptx")).unwrap();
        assert_eq!(k[0].name, "scale_add");
        assert_eq!(
            k[0].args,
            vec![ArgKind::Value(8), ArgKind::Value(8), ArgKind::Value(4), ArgKind::Value(8), ArgKind::Value(8)]
        );
        assert_eq!(k[1].name, "fixed_size");
        assert_eq!(k[1].reqd_work_group_size, Some([4, 1, 1]));
    }

    /// Corrupted PTX is an error or a reading, never a panic.
    #[test]
    fn corrupt_ptx_does_not_panic() {
        let text = include_bytes!("../../../conformance/src/kernels/programs/cuda.ptx");
        let alphabet = b"().,[]{}/* \n.param.entry.reqntid0123456789x\xc3\xa9";
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as usize
        };
        for _ in 0..5000 {
            let mut bytes = text.to_vec();
            for _ in 0..(next() % 6 + 1) {
                let at = next() % bytes.len();
                bytes[at] = alphabet[next() % alphabet.len()];
            }
            let _ = entry_points(&bytes);
            let _ = entry_points(&bytes[..next() % bytes.len()]);
        }
    }

    #[test]
    fn reads_the_committed_library() {
        let k = entry_points(include_bytes!("../../../conformance/src/kernels/library.ptx")).unwrap();
        let saxpy = k.iter().find(|k| k.name == "saxpy").expect("saxpy");
        // Three pointers and a float in the source, then the hidden launch record.
        assert_eq!(
            saxpy.args,
            vec![ArgKind::Value(8), ArgKind::Value(4), ArgKind::Value(8), ArgKind::Value(8), ArgKind::Value(32)]
        );
    }
}
