//! # cmdbuf-abi-checkgen
//!
//! Reads the `@returns` lists of `ur_api.h` and turns every condition that
//! is one C expression over an entry point's parameters (UR's own rule for
//! its validation layer: `NULL == hContext`, `::UR_X_LAST < propName`,
//! `::UR_X_FLAGS_MASK & flags`, `propSize == 0 && pPropValue != NULL`, ...)
//! into
//! - the Rust checking wrappers of `cmdbuf-abi` ([`rust_module`]): one per
//!   dispatch-table slot, which tests the conditions in UR's order and
//!   returns the listed code before the implementation runs;
//! - a C program ([`c_test`]) that calls every entry point of a library
//!   once per condition, with that condition the only one violated, and
//!   checks the exact code.
//!
//! Both are checked in (`abi/src/checks.rs`, `abi/harness/c/checks.c`) and
//! compared with a fresh generation by `cmdbuf-abi`'s `bindings` test, beside
//! the bindings, so a new header brings its checks with it there.

pub mod ctest;
pub mod eval;
pub mod expr;
pub mod header;
pub mod rust;
pub mod typing;

pub use header::{Spec, read};

/// One generated check.
#[derive(Clone, Debug)]
pub struct Check {
    /// The code it returns.
    pub code: String,
    /// The condition as the header writes it.
    pub text: String,
    /// The parsed condition.
    pub expr: expr::Expr,
    /// Its Rust test.
    pub rust: String,
    /// Whether it reads through a pointer.
    pub derefs: bool,
}

/// The generated checks of one entry point, in order, and the conditions
/// that looked like expressions but could not be generated, with why.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The checks in the order the wrapper tests them.
    pub checks: Vec<Check>,
    /// (condition, reason) of expressions left out.
    pub skipped: Vec<(String, String)>,
}

/// The Rust module of the checking wrappers.
pub fn rust_module(spec: &Spec) -> String {
    rust::module(spec)
}

/// The C test program.
pub fn c_test(spec: &Spec) -> String {
    ctest::program(spec)
}

/// Counts for the docs and reports: entry points in the dispatch table,
/// generated checks, conditions left out (expressions that cannot be
/// generated) and `@returns` items that are prose.
pub fn counts(spec: &Spec) -> (usize, usize, usize, usize) {
    let mut entries = 0;
    let mut checks = 0;
    let mut skipped = 0;
    let mut prose = 0;
    for f in spec.functions.iter().filter(|f| f.slot.is_some()) {
        entries += 1;
        let p = rust::plan(spec, f);
        checks += p.checks.len();
        skipped += p.skipped.len();
        prose += f.conditions.iter().filter(|c| c.expr.is_none()).count();
    }
    (entries, checks, skipped, prose)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header in UR's layout: one entry point, a struct, an enum, a mask.
    const API: &str = r#"
#define UR_THING_FLAGS_MASK 0xfffffffe
typedef struct ur_context_handle_t_ *ur_context_handle_t;
typedef uint32_t ur_thing_flags_t;
typedef enum ur_thing_info_t {
  UR_THING_INFO_A = 0,
  UR_THING_INFO_B = 1,
  UR_THING_INFO_FORCE_UINT32 = 0x7fffffff
} ur_thing_info_t;
typedef struct ur_thing_desc_t {
  /// [in] type of this structure, must be
  /// ::UR_STRUCTURE_TYPE_THING_DESC
  ur_structure_type_t stype;
  /// [in] flags
  ur_thing_flags_t flags;
  /// [in] a pointer
  const uint32_t *pValues;
} ur_thing_desc_t;
///////////////////////////////////////////////////////////////////////////////
/// @brief Does a thing.
///
/// @returns
///     - ::UR_RESULT_SUCCESS
///     - ::UR_RESULT_ERROR_INVALID_NULL_HANDLE
///         + `NULL == hContext`
///     - ::UR_RESULT_ERROR_INVALID_ENUMERATION
///         + `::UR_THING_INFO_B < propName`
///         + `NULL != pDesc && ::UR_THING_FLAGS_MASK &
///         pDesc->flags`
///     - ::UR_RESULT_ERROR_INVALID_VALUE
///         + `pDesc->pValues == NULL`
///         + If the thing is not a thing.
///     - ::UR_RESULT_ERROR_INVALID_NULL_POINTER
///         + `NULL == pOut`
///     - ::UR_RESULT_ERROR_INVALID_SIZE
///         + `count == 0`
UR_APIEXPORT ur_result_t UR_APICALL urThingDo(
    /// [in] handle of the context
    ur_context_handle_t hContext,
    /// [in] what to ask
    ur_thing_info_t propName,
    /// [in][optional] descriptor
    const ur_thing_desc_t *pDesc,
    /// [in] a count
    uint32_t count,
    /// [out] where
    uint32_t *pOut);
"#;
    const DDI: &str = r#"
typedef ur_result_t(UR_APICALL *ur_pfnThingDo_t)(ur_context_handle_t, ur_thing_info_t, const ur_thing_desc_t *, uint32_t, uint32_t *);
typedef struct ur_thing_dditable_t {
  ur_pfnThingDo_t pfnDo;
} ur_thing_dditable_t;
typedef struct ur_dditable_t {
  ur_thing_dditable_t Thing;
} ur_dditable_t;
"#;

    #[test]
    fn conditions_become_checks_in_urs_order() {
        let spec = read(API, DDI);
        let f = &spec.functions[0];
        assert_eq!(f.name, "urThingDo");
        assert_eq!(f.slot, Some(("Thing".into(), "pfnDo".into())));
        assert_eq!(f.params.len(), 5);
        assert_eq!(f.params[2].ty.rust(), "*const ur_thing_desc_t");
        let plan = rust::plan(&spec, f);
        let order: Vec<&str> = plan.checks.iter().map(|c| c.text.as_str()).collect();
        // Null pointers, then null handles, then the rest as listed; the
        // prose item is no check, and the unguarded read is left out.
        assert_eq!(
            order,
            [
                "NULL == pOut",
                "NULL == hContext",
                "::UR_THING_INFO_B < propName",
                "NULL != pDesc && ::UR_THING_FLAGS_MASK & pDesc->flags",
                "count == 0"
            ]
        );
        assert_eq!(plan.skipped.len(), 1);
        assert!(plan.skipped[0].1.contains("may be null"), "{:?}", plan.skipped);
        assert_eq!(counts(&spec), (1, 5, 1, 1));
        let rust = rust_module(&spec);
        assert!(rust.contains("(*pDesc).flags"), "{rust}");
        assert!(rust.contains("ur_thing_info_t::UR_THING_INFO_B.0"), "{rust}");
    }

    #[test]
    fn each_check_gets_a_case_violating_it_alone() {
        let spec = read(API, DDI);
        let f = &spec.functions[0];
        let plan = rust::plan(&spec, f);
        let conds: Vec<(&str, &expr::Expr)> = plan.checks.iter().map(|c| (c.code.as_str(), &c.expr)).collect();
        let base = eval::baseline(&spec, f, &conds).expect("a baseline");
        assert!(eval::due(&spec, f, &conds, &base).is_empty());
        for k in 0..conds.len() {
            let m = eval::violation(&spec, f, &conds, &base, k).expect("a violation");
            assert_eq!(eval::due(&spec, f, &conds, &m), [k], "{}", plan.checks[k].text);
        }
        let c = c_test(&spec);
        assert!(c.contains("urt_ddi.Thing.pfnDo("), "{c}");
        assert!(c.contains("static const int urt_untested = 0;"), "{c}");
    }
}
