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
//! only counts that are there, and wakes as many sleepers as it took counts
//! (a counted worker not yet asleep sees the word changed and does not
//! sleep); a worker that leaves before sleeping takes its count back only
//! if no waker has taken counts since it announced itself. Counts carry no
//! names, so one a waker took already could only be taken back as another
//! worker's, one that sleeps: with that worker's count gone, a later push
//! found zero and left it asleep beside queued work (seen on the 16-core
//! GPU host, a burst's last piece waiting in a deque while a worker slept).
//! The count therefore shares one word with the number of wake-ups that
//! took counts, which the leaving worker compares with what it saw. So a
//! push that finds the count zero has no sleeper to wake, and a high count
//! costs at most a system call that wakes nobody.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

/// Parked workers and the word they wait on.
pub(crate) struct Sleepers {
    /// Changed by every wake-up, so that a worker about to wait on the value
    /// it read before announcing itself does not sleep through one.
    word: AtomicU32,
    /// Workers announced as parked and not yet taken by a waker (the low
    /// half, [`COUNT`]), and how many wake-ups have taken counts (the high
    /// half), changed together.
    parked: AtomicU64,
}

/// The count's half of [`Sleepers::parked`].
const COUNT: u64 = u32::MAX as u64;

/// One wake-up that took counts, in [`Sleepers::parked`].
const TAKEN: u64 = 1 << 32;

impl Sleepers {
    pub(crate) const fn new() -> Sleepers {
        Sleepers { word: AtomicU32::new(0), parked: AtomicU64::new(0) }
    }

    /// Parks the calling worker unless `idle()`, checked after it announced
    /// itself, says there is work (or a shutdown) after all. Pairs with
    /// [`Sleepers::wake`]: a waker queues its work, fences, then reads the
    /// count; this thread counts itself, fences, then looks at the queues,
    /// so one of the two sees the other.
    pub(crate) fn park(&self, idle: impl FnOnce() -> bool) {
        let seen = self.word.load(Ordering::SeqCst);
        let announced = self.parked.fetch_add(1, Ordering::SeqCst) & !COUNT;
        fence(Ordering::SeqCst);
        if !idle() {
            // Leaving before sleeping: take this count back, unless a waker
            // has taken counts since (perhaps this one: then its wake-up
            // went to another sleeper, or to nobody, and the count left
            // high is harmless, where taking one would take a sleeper's).
            let _ = self.parked.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |p| {
                (p & !COUNT == announced && p & COUNT > 0).then(|| p - 1)
            });
            return;
        }
        // Any return (woken, the word changed since `seen`, or spurious)
        // goes back to looking for work; a count left behind is high, which
        // is harmless.
        wait(&self.word, seen);
    }

    /// Wakes up to `n` parked workers, after work was queued.
    pub(crate) fn wake(&self, n: usize) {
        let n = u64::try_from(n).unwrap_or(COUNT).min(COUNT);
        fence(Ordering::SeqCst);
        let Ok(before) = self.parked.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |p| {
            // The wake-ups' half wraps after 2^32 of them, long after any
            // worker that saw the same value left.
            (p & COUNT > 0).then(|| (p & !COUNT).wrapping_add(TAKEN) | ((p & COUNT) - (p & COUNT).min(n)))
        }) else {
            return;
        };
        self.word.fetch_add(1, Ordering::SeqCst);
        wake(&self.word, usize::try_from((before & COUNT).min(n)).unwrap_or(usize::MAX));
    }

    /// Wakes every parked worker (shutdown).
    pub(crate) fn wake_all(&self) {
        let _ =
            self.parked.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |p| Some((p & !COUNT).wrapping_add(TAKEN)));
        self.word.fetch_add(1, Ordering::SeqCst);
        wake(&self.word, usize::MAX);
    }

    #[cfg(test)]
    pub(crate) fn parked(&self) -> usize {
        (self.parked.load(Ordering::SeqCst) & COUNT) as usize
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
