//! An exclusive per-queue slot: the one object that takes a queue over
//! from eager execution, UR's graph capture in cmdbuf-core ([`crate::capture`])
//! or a layer above it (the `cmdbuf-runtime` crate's queue recording).
//!
//! The eager path of every enqueue reads only the slot's atomic flag; who
//! fills or empties the slot does it under the slot's lock, which also
//! orders the flag, so a holder of the lock sees the occupant the flag
//! announces.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, MutexGuard};

/// What a queue is taken by, if anything: at most one `T` at a time.
pub struct QueueSlot<T> {
    active: AtomicBool,
    occupant: Mutex<Option<Arc<T>>>,
}

impl<T> Default for QueueSlot<T> {
    fn default() -> Self {
        QueueSlot { active: AtomicBool::new(false), occupant: Mutex::new(None) }
    }
}

impl<T> QueueSlot<T> {
    /// Whether the slot is taken: the one check of the eager path. The
    /// answer may be stale when the caller acts on it; what must be exact
    /// is decided under [`lock`](Self::lock).
    #[inline]
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// The occupant, if any.
    pub fn occupant(&self) -> Option<Arc<T>> {
        self.occupant.lock().clone()
    }

    /// The slot, locked: its occupant changes only through the guard until
    /// the guard drops.
    pub fn lock(&self) -> QueueSlotGuard<'_, T> {
        QueueSlotGuard { active: &self.active, occupant: self.occupant.lock() }
    }
}

/// A locked [`QueueSlot`].
pub struct QueueSlotGuard<'a, T> {
    active: &'a AtomicBool,
    occupant: MutexGuard<'a, Option<Arc<T>>>,
}

impl<T> QueueSlotGuard<'_, T> {
    /// The occupant, if any.
    pub fn occupant(&self) -> Option<&Arc<T>> {
        self.occupant.as_ref()
    }

    /// Puts `occupant` in the slot and gives back the one it replaces; the
    /// caller decides, under this same guard, whether a previous occupant
    /// is an error.
    pub fn set(&mut self, occupant: Arc<T>) -> Option<Arc<T>> {
        let previous = self.occupant.replace(occupant);
        self.active.store(true, Ordering::Release);
        previous
    }

    /// Empties the slot, giving its occupant.
    pub fn take(&mut self) -> Option<Arc<T>> {
        self.active.store(false, Ordering::Release);
        self.occupant.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_follows_the_occupant() {
        let slot: QueueSlot<u32> = QueueSlot::default();
        assert!(!slot.is_active());
        assert!(slot.occupant().is_none());
        assert!(slot.lock().set(Arc::new(1)).is_none());
        assert!(slot.is_active());
        assert_eq!(slot.occupant().as_deref(), Some(&1));
        assert_eq!(slot.lock().set(Arc::new(2)).as_deref(), Some(&1));
        assert_eq!(slot.lock().occupant().map(|o| **o), Some(2));
        assert_eq!(slot.lock().take().as_deref(), Some(&2));
        assert!(!slot.is_active());
        assert!(slot.lock().take().is_none());
        assert!(!slot.is_active());
    }
}
