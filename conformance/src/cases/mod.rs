//! The cases, by scenario group.

use crate::harness::Case;

mod commands;
mod lifecycle;

/// Every case of the suite, in a stable order.
pub fn all() -> Vec<Case> {
    let groups: [fn() -> Vec<Case>; 2] = [lifecycle::cases, commands::cases];
    groups.iter().flat_map(|g| g()).collect()
}
