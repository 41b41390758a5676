//! The loop the property groups (`property`, `graph_property`) run their
//! generated programs with: proptest's strategies and value trees from a
//! fixed ChaCha seed, with shrinking bounded by a step budget.
//!
//! Proptest's own `TestRunner::run` writes "proptest: Aborting shrinking"
//! to stderr whenever a shrink reaches its budget, also in the cases that
//! expect a failure (a wrong host model must be caught) and pass. Here the
//! budget ends shrinking quietly; a real failure reports it in its message
//! instead, so nothing of it is lost.

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// A program that failed, shrunk as far as the budget allowed.
pub(crate) struct Failure<T> {
    /// The message of the last failing program.
    pub(crate) reason: String,
    /// The smallest failing program found.
    pub(crate) minimal: T,
    /// The number of the first failing generated program (1-based).
    pub(crate) first_failure: u32,
    /// Programs run in all, shrink steps included.
    pub(crate) runs: u32,
    /// Whether shrinking stopped at its budget rather than at a minimum.
    pub(crate) budget_reached: bool,
}

impl<T> Failure<T> {
    /// A note for the failure message when shrinking was cut short.
    pub(crate) fn shrink_note(&self) -> &'static str {
        if self.budget_reached { " (shrinking stopped at its step budget)" } else { "" }
    }
}

/// Runs `cases` programs of `strategy` generated from `seed` through
/// `test`; the first failing one is shrunk for at most `max_shrink` steps.
/// The programs are those proptest's `TestRunner::run` generates from the
/// same seed and configuration. `Err(Err(reason))`: the strategy could not
/// generate a program.
pub(crate) fn run<S: Strategy>(
    seed: u64,
    cases: u32,
    max_shrink: u32,
    strategy: &S,
    test: impl Fn(S::Value) -> Result<(), String>,
) -> Result<(), Result<Failure<S::Value>, String>> {
    let mut runner = seeded_runner(seed, cases);
    let mut runs = 0u32;
    for case in 1..=cases {
        // Proptest reseeds its generator from itself before each program.
        let reseeded = runner.new_rng();
        *runner.rng() = reseeded;
        let mut tree = strategy.new_tree(&mut runner).map_err(|reason| Err(reason.to_string()))?;
        runs += 1;
        let Err(reason) = test(tree.current()) else { continue };
        let (reason, budget_reached) = shrink(&mut tree, reason, max_shrink, &mut runs, &test);
        return Err(Ok(Failure { reason, minimal: tree.current(), first_failure: case, runs, budget_reached }));
    }
    Ok(())
}

/// A runner whose ChaCha generator starts from `seed`.
fn seeded_runner(seed: u64, cases: u32) -> TestRunner {
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes))
}

/// Proptest's shrinking loop (simplify after a failure, complicate after a
/// pass) with a step budget; at the budget the tree goes back to the last
/// failing value. Gives the last failure's reason and whether the budget
/// ended the loop.
fn shrink<T: ValueTree>(
    tree: &mut T,
    mut reason: String,
    max_shrink: u32,
    runs: &mut u32,
    test: &impl Fn(T::Value) -> Result<(), String>,
) -> (String, bool) {
    if !tree.simplify() {
        return (reason, false);
    }
    for _ in 0..max_shrink {
        *runs += 1;
        let more = match test(tree.current()) {
            Ok(()) => tree.complicate(),
            Err(why) => {
                reason = why;
                tree.simplify()
            }
        };
        if !more {
            return (reason, false);
        }
    }
    while tree.complicate() {}
    (reason, true)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use proptest::collection::vec;

    use super::*;

    #[test]
    fn generates_what_proptest_generates() {
        let strategy = vec(0u32..1000, 1..20);
        let theirs = RefCell::new(Vec::new());
        seeded_runner(7, 16)
            .run(&strategy, |v| {
                theirs.borrow_mut().push(v);
                Ok(())
            })
            .unwrap();
        let ours = RefCell::new(Vec::new());
        let result = run(7, 16, 0, &strategy, |v| {
            ours.borrow_mut().push(v);
            Ok(())
        });
        assert!(result.is_ok());
        assert_eq!(ours.into_inner(), theirs.into_inner());
    }

    fn big_element(v: Vec<u32>) -> Result<(), String> {
        match v.iter().find(|x| **x >= 500) {
            Some(x) => Err(format!("{x} in {v:?}")),
            None => Ok(()),
        }
    }

    #[test]
    fn shrinks_to_a_minimum_within_the_budget() {
        let Err(Ok(failure)) = run(7, 64, 10_000, &vec(0u32..1000, 1..20), big_element) else {
            panic!("no program has an element of 500 or more");
        };
        assert_eq!(failure.minimal, vec![500]);
        assert!(!failure.budget_reached);
        assert_eq!(failure.shrink_note(), "");
    }

    #[test]
    fn the_budget_stops_at_a_failing_program() {
        let Err(Ok(failure)) = run(7, 64, 2, &vec(0u32..1000, 1..20), big_element) else {
            panic!("no program has an element of 500 or more");
        };
        assert!(failure.budget_reached);
        assert!(big_element(failure.minimal).is_err());
        assert_eq!(failure.runs, failure.first_failure + 2);
    }
}
