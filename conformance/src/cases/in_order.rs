//! Filled in by its own commit.

pub(super) fn cases() -> Vec<crate::Case> {
    Vec::new()
}
