//! The live contexts and the adapters' answers about pairs of them: a new
//! context registers here, so that a peer copy finds the other side of a
//! copy from its address alone (`peer.rs`) and wait lists and memory
//! commands ask whether two contexts wait for each other's events or use
//! each other's buffers. Below the contexts and events that ask, and the
//! peer copies that search.

use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};

use crate::adapter::ContextImpl;
use crate::context::ContextId;
use crate::device::Device;
use crate::memory::AllocationTracker;

/// The live contexts, so that the other side of a peer copy can be found
/// from its address alone, as UR's copy takes it.
pub(crate) static CONTEXTS: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

/// A live context as a peer copy and the pair questions need it.
pub(crate) struct Registered {
    pub(crate) id: ContextId,
    pub(crate) device: Device,
    pub(crate) tracker: Weak<AllocationTracker>,
    /// The adapter's context, asked whether another's events can be waited
    /// for and its buffers used.
    pub(crate) imp: Weak<dyn ContextImpl>,
}

/// Makes a new context's allocations findable by peer copies, and its adapter
/// context by [`waits_across`] and [`buffers_across`].
pub(crate) fn register(id: ContextId, device: &Device, tracker: &Arc<AllocationTracker>, imp: &Arc<dyn ContextImpl>) {
    let mut contexts = CONTEXTS.lock();
    contexts.retain(|c| c.tracker.strong_count() > 0);
    contexts.push(Registered {
        id,
        device: device.clone(),
        tracker: Arc::downgrade(tracker),
        imp: Arc::downgrade(imp),
    });
}

/// An adapter's answers about pairs of its contexts so far:
/// `(asking context, other context, answer)`.
type PairAnswers = RwLock<Vec<(ContextId, ContextId, bool)>>;

/// The adapters' answers of [`ContextImpl::waits_on_events_of`].
static FOREIGN_WAITS: PairAnswers = RwLock::new(Vec::new());

/// The adapters' answers of [`ContextImpl::uses_buffers_of`].
static FOREIGN_BUFFERS: PairAnswers = RwLock::new(Vec::new());

/// Whether queues of context `own` wait device-side for events of context
/// `foreign` (two different contexts): the adapter's answer, asked once per
/// pair. A context no longer alive is never waited across (its adapter
/// context cannot be asked).
#[cold]
pub(crate) fn waits_across(own: ContextId, foreign: ContextId) -> bool {
    ask_once(&FOREIGN_WAITS, own, foreign, |a, b| a.waits_on_events_of(b), "device-side waits across contexts")
}

/// Whether commands of context `own` use memory buffers of context
/// `foreign` (two different contexts) as their own: the adapter's answer,
/// asked once per pair; never for a context no longer alive.
#[cold]
pub(crate) fn buffers_across(own: ContextId, foreign: ContextId) -> bool {
    ask_once(&FOREIGN_BUFFERS, own, foreign, |a, b| a.uses_buffers_of(b), "buffers used across contexts")
}

/// The adapter's answer `ask(own, foreign)`, kept in `answers` while both
/// contexts live.
fn ask_once(
    answers: &PairAnswers,
    own: ContextId,
    foreign: ContextId,
    ask: impl Fn(&dyn ContextImpl, &dyn ContextImpl) -> bool,
    what: &str,
) -> bool {
    let known = |d: &[(ContextId, ContextId, bool)]| d.iter().find(|(a, b, _)| *a == own && *b == foreign).map(|e| e.2);
    if let Some(answer) = known(&answers.read()) {
        return answer;
    }
    let (imps, live): (Vec<_>, Vec<ContextId>) = {
        let contexts = CONTEXTS.lock();
        let find = |id: ContextId| contexts.iter().find(|c| c.id == id).and_then(|c| c.imp.upgrade());
        let live = contexts.iter().filter(|c| c.tracker.strong_count() > 0).map(|c| c.id).collect();
        (vec![find(own), find(foreign)], live)
    };
    let answer = match (&imps[0], &imps[1]) {
        (Some(a), Some(b)) => ask(&**a, &**b),
        _ => return false,
    };
    let mut decided = answers.write();
    if known(&decided).is_none() {
        decided.retain(|(a, b, _)| live.contains(a) && live.contains(b));
        decided.push((own, foreign, answer));
    }
    tracing::debug!(?own, ?foreign, answer, "{what}");
    answer
}
