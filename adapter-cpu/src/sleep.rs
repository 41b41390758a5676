//! Where idle workers of the pool park, and how many are woken at once.
//!
//! Every parked worker waits on one word; a waker changes the word and wakes
//! up to `n` of them in one system call (Linux `FUTEX_WAKE` with a count), so
//! a burst of work (a command-buffer run's roots, a fork's successors) brings
//! `n` workers back in one step instead of one after another. A condition
//! variable would either wake them one at a time (`notify_one` per worker,
//! or parking_lot's `notify_all`, which requeues them onto its mutex) or all
//! of them.
//!
//! The count of parked workers is kept so that a push skips the system call
//! when nobody sleeps. It may run high (a worker that returns without being
//! woken keeps its count until a waker takes it), never low: a waker takes
//! only counts that are there, and a worker takes its own back only if it
//! leaves before sleeping. So a push that finds it zero has no sleeper to
//! wake, and a high count costs at most a system call that wakes nobody.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering, fence};

/// Parked workers and the word they wait on.
pub(crate) struct Sleepers {
    /// Changed by every wake-up, so that a worker about to wait on the value
    /// it read before announcing itself does not sleep through one.
    word: AtomicU32,
    /// Workers announced as parked and not yet taken by a waker.
    parked: AtomicUsize,
}

impl Sleepers {
    pub(crate) const fn new() -> Sleepers {
        Sleepers { word: AtomicU32::new(0), parked: AtomicUsize::new(0) }
    }

    /// Parks the calling worker unless `idle()`, checked after it announced
    /// itself, says there is work (or a shutdown) after all. Pairs with
    /// [`Sleepers::wake`]: a waker queues its work, fences, then reads the
    /// count; this thread counts itself, fences, then looks at the queues,
    /// so one of the two sees the other.
    pub(crate) fn park(&self, idle: impl FnOnce() -> bool) {
        let seen = self.word.load(Ordering::SeqCst);
        self.parked.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !idle() {
            // Leaving before sleeping: take this count back, unless a waker
            // has taken it already (then its wake-up goes to another
            // sleeper, or to nobody).
            let _ = self.parked.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |n| n.checked_sub(1));
            return;
        }
        // Any return (woken, the word changed since `seen`, or spurious)
        // goes back to looking for work; a count left behind is high, which
        // is harmless.
        wait(&self.word, seen);
    }

    /// Wakes up to `n` parked workers, after work was queued.
    pub(crate) fn wake(&self, n: usize) {
        fence(Ordering::SeqCst);
        let Ok(before) =
            self.parked.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |p| (p > 0).then(|| p - p.min(n)))
        else {
            return;
        };
        self.word.fetch_add(1, Ordering::SeqCst);
        wake(&self.word, before.min(n));
    }

    /// Wakes every parked worker (shutdown).
    pub(crate) fn wake_all(&self) {
        self.parked.store(0, Ordering::SeqCst);
        self.word.fetch_add(1, Ordering::SeqCst);
        wake(&self.word, usize::MAX);
    }

    #[cfg(test)]
    pub(crate) fn parked(&self) -> usize {
        self.parked.load(Ordering::SeqCst)
    }
}

/// Sleeps while `word` holds `expected` (or until a spurious return).
#[cfg(target_os = "linux")]
fn wait(word: &AtomicU32, expected: u32) {
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind the pointer, which
    // lives as long as the pool's shared state, and the calling worker holds
    // a reference to it; a null timeout means no timeout. Errors (EAGAIN when
    // the word changed, EINTR) are returns like a wake-up.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes up to `n` threads sleeping in [`wait`] on `word`.
#[cfg(target_os = "linux")]
fn wake(word: &AtomicU32, n: usize) {
    let n = i32::try_from(n).unwrap_or(i32::MAX);
    // SAFETY: FUTEX_WAKE only uses the address as a key; it stays valid for
    // the call as above.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, n);
    }
}

/// Elsewhere: a condition variable, every sleeper woken (correct; the ramp
/// of a burst is then a herd instead of `n`).
#[cfg(not(target_os = "linux"))]
static FALLBACK: (std::sync::Mutex<()>, std::sync::Condvar) = (std::sync::Mutex::new(()), std::sync::Condvar::new());

#[cfg(not(target_os = "linux"))]
fn wait(word: &AtomicU32, expected: u32) {
    let guard = FALLBACK.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if word.load(Ordering::SeqCst) == expected {
        drop(FALLBACK.1.wait(guard));
    }
}

#[cfg(not(target_os = "linux"))]
fn wake(_word: &AtomicU32, _n: usize) {
    drop(FALLBACK.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    FALLBACK.1.notify_all();
}
