//! Composed command buffers: finalized command buffers of several contexts
//! of one adapter, and peer copies between their memory, joined by
//! dependencies into one executable that a queue submits with one call
//! (where the adapter can: [`Context::composes_with`]).
//!
//! Everything is checked here, once, when the composition is made: the
//! parts' contexts are of one adapter that composes them and the submitting
//! context waits for their events; each command buffer is finalized and
//! given once; each part runs only after earlier parts (so the dependencies
//! are acyclic by construction); each peer copy passes the checks of
//! [`Queue::usm_copy_peer`]; each collective is a captured recording
//! ([`RecordedCollective::is_captured`]) whose every rank's context passes
//! the checks of a part's context. The adapter then builds the executable
//! ([`ContextImpl::compose_command_buffers`](crate::adapter::ContextImpl::compose_command_buffers)),
//! trusting all that.
//!
//! The composition reads its command buffers as they are when it is made.
//! An update of one of them afterwards is noticed at the next enqueue (each
//! command buffer counts its updates), which composes again first, so an
//! execution never runs a part older than its command buffer.

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::adapter::{ComposePart, ComposeWork, EventImpl, ExecutableCommandBufferImpl};
use crate::api::recorded::{CommandBuffer, QueueTarget, State};
use crate::collective::RecordedCollective;
use crate::command::Command;
use crate::context::Context;
use crate::error::Result;
use crate::event::{Event, as_refs, resolve_wait_list};
use crate::interop::NativeHandle;
use crate::memory::UsmPtr;
use crate::queue::Queue;
use crate::{ensure, err};

/// One part of a [`ComposedCommandBuffer`], with the earlier parts it runs
/// after (indices into the list given to [`ComposedCommandBuffer::new`]).
#[derive(Copy, Clone, Debug)]
pub enum ComposedPart<'a> {
    /// A finalized command buffer, run on its own context's device.
    CommandBuffer {
        /// The command buffer.
        buffer: &'a CommandBuffer,
        /// The parts it runs after.
        after: &'a [usize],
    },
    /// A peer copy of `size` bytes run by `context`'s device, as
    /// [`Queue::usm_copy_peer`] on a queue of `context` would run it.
    PeerCopy {
        /// The context whose device copies.
        context: &'a Context,
        /// The destination.
        dst: UsmPtr,
        /// The source.
        src: UsmPtr,
        /// Bytes.
        size: usize,
        /// The parts it runs after.
        after: &'a [usize],
    },
    /// A captured collective ([`RecordedCollective::is_captured`]): every
    /// rank's part run by its device, all of them after the parts `after`
    /// names, and the parts after it after every rank's part. A launch of
    /// the recording outside the composition ([`RecordedCollective::enqueue`])
    /// and the composition's submissions are ordered one after the other.
    Collective {
        /// The recording.
        recorded: &'a RecordedCollective,
        /// The parts it runs after.
        after: &'a [usize],
    },
}

/// What a composition keeps of a part.
#[derive(Clone)]
enum Kept {
    Buffer(CommandBuffer),
    Copy { context: Context, command: Command },
    Collective(RecordedCollective),
}

/// Finalized command buffers of several contexts of one adapter and peer
/// copies between them, submitted as one executable with one call
/// ([`Queue::enqueue_composed`]). Clone retains, drop releases; a submission
/// keeps what it needs.
#[derive(Clone)]
pub struct ComposedCommandBuffer {
    inner: Arc<ComposedInner>,
}

struct ComposedInner {
    /// The context whose queues submit it.
    context: Context,
    state: Mutex<ComposedState>,
}

struct ComposedState {
    parts: Vec<Kept>,
    after: Vec<Vec<u32>>,
    /// Each command buffer's update count when it was composed (0 for copies).
    generations: Vec<u64>,
    imp: Box<dyn ExecutableCommandBufferImpl>,
    /// The last submission, which the first one of a new composition waits
    /// for (the adapter orders the submissions of one composition only).
    last: Option<Arc<dyn EventImpl>>,
    /// Whether `imp` was made since the last submission.
    fresh: bool,
    /// How many times the parts were composed.
    compositions: u64,
    /// Parts replaced while a submission that ran them may still run, with
    /// the last such submission: kept (their allocations, a collective's
    /// capture) until it has ended.
    retired: Vec<(Arc<dyn EventImpl>, Kept)>,
}

impl ComposedCommandBuffer {
    /// Composes `parts` into one executable submitted by queues of
    /// `context`.
    ///
    /// Errors: `InvalidValue` for no parts, a command buffer or a recorded
    /// collective given twice, or a part after itself or a later part;
    /// `InvalidOperation` for a command buffer not finalized;
    /// `UnsupportedFeature` for a command buffer of a sub-device, a part's
    /// context (for a collective, any of its ranks' contexts) of another
    /// adapter or one the adapter cannot compose with `context`
    /// ([`Context::composes_with`]), or whose events `context` cannot wait
    /// for, a collective that is not captured (staged through the host, or
    /// issued at each launch), and where the adapter cannot compose these
    /// parts (the reason given); a peer copy's errors are
    /// [`Queue::usm_copy_peer`]'s.
    #[tracing::instrument(level = "debug", skip_all, fields(parts = parts.len()))]
    pub fn new(context: &Context, parts: &[ComposedPart<'_>]) -> Result<ComposedCommandBuffer> {
        ensure!(!parts.is_empty(), InvalidValue, "a composition of no parts");
        let mut kept = Vec::with_capacity(parts.len());
        let mut after = Vec::with_capacity(parts.len());
        for (i, part) in parts.iter().enumerate() {
            let (part_context, deps) = match part {
                ComposedPart::CommandBuffer { buffer, after } => (buffer.context(), *after),
                ComposedPart::PeerCopy { context, after, .. } => (*context, *after),
                ComposedPart::Collective { recorded, after } => (&recorded.communicator().contexts()[0], *after),
            };
            check_context(context, part_context, i)?;
            let mut deps32 = Vec::with_capacity(deps.len());
            for d in deps {
                ensure!(*d < i, InvalidValue, "part {i} of a composition runs after part {d}, which is not earlier");
                if !deps32.contains(&(*d as u32)) {
                    deps32.push(*d as u32);
                }
            }
            after.push(deps32);
            kept.push(match part {
                ComposedPart::CommandBuffer { buffer, .. } => {
                    check_buffer(buffer, i)?;
                    ensure!(
                        parts[..i].iter().all(
                            |p| !matches!(p, ComposedPart::CommandBuffer { buffer: b, .. } if b.id() == buffer.id())
                        ),
                        InvalidValue,
                        "part {i} of a composition: the command buffer is given twice"
                    );
                    Kept::Buffer((*buffer).clone())
                }
                ComposedPart::PeerCopy { context: on, dst, src, size, .. } => {
                    let (command, _) = crate::peer::peer_copy_command(on, on.device(), *dst, *src, *size)
                        .map_err(|e| e.in_context(&format!("peer copy of part {i} of a composition")))?;
                    Kept::Copy { context: (*on).clone(), command }
                }
                ComposedPart::Collective { recorded, .. } => {
                    // Twice in one launch, a capture would run twice at once.
                    ensure!(
                        parts[..i].iter().all(
                            |p| !matches!(p, ComposedPart::Collective { recorded: r, .. } if r.same_recording(recorded))
                        ),
                        InvalidValue,
                        "part {i} of a composition: the recorded collective is given twice"
                    );
                    Kept::Collective((*recorded).clone())
                }
            });
        }
        // What the adapter can compose, once every part is well formed.
        for (i, part) in kept.iter().enumerate() {
            if let Kept::Collective(recorded) = part {
                check_collective(context, recorded, i)?;
            }
        }
        let (imp, generations) = compose(context, &kept, &after)?;
        Ok(ComposedCommandBuffer {
            inner: Arc::new(ComposedInner {
                context: context.clone(),
                state: Mutex::new(ComposedState {
                    parts: kept,
                    after,
                    generations,
                    imp,
                    last: None,
                    fresh: true,
                    compositions: 1,
                    retired: Vec::new(),
                }),
            }),
        })
    }

    /// The context whose queues submit it.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// Number of parts.
    pub fn len(&self) -> usize {
        self.inner.state.lock().parts.len()
    }

    /// Whether it has no parts (never: a composition has at least one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many times the parts were composed: 1, plus one per enqueue that
    /// found a command buffer updated since, and per [`replace_part`](Self::replace_part).
    pub fn compositions(&self) -> u64 {
        self.inner.state.lock().compositions
    }

    /// Replaces the command buffer of part `index` with `buffer` (say, one
    /// rebuilt for an update) and composes again; later submissions run
    /// after the earlier ones. Checked as in [`new`](Self::new); on error
    /// nothing changes.
    pub fn replace_part(&self, index: usize, buffer: &CommandBuffer) -> Result<()> {
        let mut st = self.inner.state.lock();
        ensure!(
            matches!(st.parts.get(index), Some(Kept::Buffer(_))),
            InvalidValue,
            "part {index} of the composition is not a command buffer"
        );
        check_context(&self.inner.context, buffer.context(), index)?;
        check_buffer(buffer, index)?;
        ensure!(
            st.parts
                .iter()
                .enumerate()
                .all(|(i, p)| i == index || !matches!(p, Kept::Buffer(b) if b.id() == buffer.id())),
            InvalidValue,
            "part {index}: the command buffer is already another part of the composition"
        );
        let mut parts = st.parts.clone();
        parts[index] = Kept::Buffer(buffer.clone());
        let (imp, generations) = compose(&self.inner.context, &parts, &st.after)?;
        let old = std::mem::replace(&mut st.parts, parts);
        st.retire(old.into_iter().nth(index));
        st.install(imp, generations);
        Ok(())
    }

    /// Replaces the recorded collective of part `index` with `recorded`
    /// (say, one recorded again for an update) and composes again; later
    /// submissions run after the earlier ones. Checked as in
    /// [`new`](Self::new); on error nothing changes.
    pub fn replace_collective(&self, index: usize, recorded: &RecordedCollective) -> Result<()> {
        let mut st = self.inner.state.lock();
        ensure!(
            matches!(st.parts.get(index), Some(Kept::Collective(_))),
            InvalidValue,
            "part {index} of the composition is not a collective"
        );
        check_collective(&self.inner.context, recorded, index)?;
        ensure!(
            st.parts
                .iter()
                .enumerate()
                .all(|(i, p)| i == index || !matches!(p, Kept::Collective(r) if r.same_recording(recorded))),
            InvalidValue,
            "part {index}: the recorded collective is already another part of the composition"
        );
        let mut parts = st.parts.clone();
        parts[index] = Kept::Collective(recorded.clone());
        let (imp, generations) = compose(&self.inner.context, &parts, &st.after)?;
        let old = std::mem::replace(&mut st.parts, parts);
        st.retire(old.into_iter().nth(index));
        st.install(imp, generations);
        Ok(())
    }

    /// Composes again where a command buffer was updated since the last
    /// composition (what the next enqueue would do first), so that an error
    /// shows here rather than at the enqueue; returns whether it composed.
    pub fn refresh(&self) -> Result<bool> {
        let mut st = self.inner.state.lock();
        st.refresh(&self.inner.context)
    }

    /// The event of the last submission, if any.
    pub fn last_submission(&self) -> Option<Event> {
        let st = self.inner.state.lock();
        st.last.as_ref().map(|e| Event::from_imp(e.clone(), &self.inner.context))
    }

    /// The native object an enqueue submits (CUDA: the `CUgraphExec` of
    /// the whole composition); `UnsupportedFeature` where there is none.
    pub fn native_handle(&self) -> Result<NativeHandle> {
        self.inner.state.lock().imp.native_handle()
    }

    /// Submits on the queue `target` describes; called by
    /// [`Queue::enqueue_composed`].
    pub(crate) fn enqueue_on(
        &self,
        target: QueueTarget<'_>,
        wait: &[Arc<dyn EventImpl>],
    ) -> Result<Arc<dyn EventImpl>> {
        ensure!(
            target.context == &self.inner.context,
            InvalidQueue,
            "the queue belongs to another context than the composed command buffer"
        );
        let mut guard = self.inner.state.lock();
        // The fields borrowed apart: the parts' launch orders stay locked
        // across the adapter's enqueue.
        let st = &mut *guard;
        st.refresh(&self.inner.context)?;
        let previous = if st.fresh { st.last.clone() } else { None };
        // Each collective's launch order, locked in one order (by key) so
        // that compositions sharing recordings cannot deadlock: this
        // submission runs after the recordings' last direct launches.
        let mut collectives: Vec<&RecordedCollective> = st
            .parts
            .iter()
            .filter_map(|p| match p {
                Kept::Collective(r) => Some(r),
                _ => None,
            })
            .collect();
        collectives.sort_unstable_by_key(|r| r.order_key());
        let mut orders: Vec<_> = collectives.iter().map(|r| r.lock_order()).collect();
        let mut waits = as_refs(wait);
        if let Some(previous) = &previous {
            waits.push(&**previous);
        }
        for order in &orders {
            waits.extend(order.direct().iter().map(|e| &**e));
        }
        // SAFETY: the queue is of the composition's context (checked); the
        // wait events were resolved for that context, or are the previous
        // submission's event, of that context too, or a direct launch's
        // events of a collective's ranks' contexts, which that context
        // waits for (checked when the part was given).
        let event = unsafe { st.imp.enqueue_ordered(target.imp, &waits, target.in_order)? };
        drop(waits);
        for order in &mut orders {
            order.composed(event.clone(), &self.inner.context);
        }
        drop(orders);
        st.fresh = false;
        st.last = Some(event.clone());
        Ok(event)
    }
}

impl ComposedState {
    /// Composes again where a part's command buffer was updated since.
    fn refresh(&mut self, context: &Context) -> Result<bool> {
        let stale = self.parts.iter().zip(&self.generations).any(|(p, g)| match p {
            Kept::Buffer(b) => b.updates() != *g,
            Kept::Copy { .. } | Kept::Collective(_) => false,
        });
        if stale {
            tracing::debug!("a part was updated since the composition: composing again");
            let (imp, generations) = compose(context, &self.parts, &self.after)?;
            self.install(imp, generations);
        }
        Ok(stale)
    }

    /// Keeps `part`, replaced, until the last submission has ended; drops
    /// the retired parts whose submissions have.
    fn retire(&mut self, part: Option<Kept>) {
        self.retired.retain(|(event, _)| !event.status_quiet().is_terminal());
        if let (Some(last), Some(part)) = (&self.last, part)
            && !last.status_quiet().is_terminal()
        {
            self.retired.push((last.clone(), part));
        }
    }

    fn install(&mut self, imp: Box<dyn ExecutableCommandBufferImpl>, generations: Vec<u64>) {
        self.imp = imp;
        self.generations = generations;
        self.fresh = true;
        self.compositions += 1;
    }
}

/// `UnsupportedFeature` unless `part`'s command buffers and copies can be
/// composed into an executable of `context`.
fn check_context(context: &Context, part: &Context, index: usize) -> Result<()> {
    ensure!(
        part.device().backend() == context.device().backend() && context.imp().composes_with(&**part.imp()),
        UnsupportedFeature,
        "part {index} of a composition: {} cannot compose work of {} into an executable of {}",
        context.device().backend(),
        part.device(),
        context.device()
    );
    ensure!(
        context.waits_on_events_of(part),
        UnsupportedFeature,
        "part {index} of a composition: queues of {} cannot wait for events of {}",
        context.device(),
        part.device()
    );
    Ok(())
}

/// `UnsupportedFeature` for a collective that is not captured, or one of a
/// rank's context that `context` cannot compose with or wait for.
fn check_collective(context: &Context, recorded: &RecordedCollective, index: usize) -> Result<()> {
    for (rank, rank_context) in recorded.communicator().contexts().iter().enumerate() {
        check_context(context, rank_context, index).map_err(|e| e.in_context(&format!("rank {rank}")))?;
    }
    ensure!(
        recorded.is_captured(),
        UnsupportedFeature,
        "part {index} of a composition: the collective is not captured ({}), so it is issued at each launch",
        recorded
            .communicator()
            .native_name()
            .map_or_else(|| "staged through the host".to_string(), |n| n + ", not captured")
    );
    Ok(())
}

/// `InvalidOperation` for a command buffer not finalized, `UnsupportedFeature`
/// for one of a sub-device.
fn check_buffer(buffer: &CommandBuffer, index: usize) -> Result<()> {
    ensure!(
        buffer.is_finalized(),
        InvalidOperation,
        "part {index} of a composition: the command buffer is not finalized"
    );
    ensure!(
        !buffer.is_for_sub_device(),
        UnsupportedFeature,
        "part {index} of a composition: a command buffer of a sub-device"
    );
    Ok(())
}

/// The adapter's composition of `parts`, and the update counts it saw.
fn compose(
    context: &Context,
    parts: &[Kept],
    after: &[Vec<u32>],
) -> Result<(Box<dyn ExecutableCommandBufferImpl>, Vec<u64>)> {
    // The parts' command buffers are distinct (checked); their locks are
    // taken in the order of the buffers' identities, so that two
    // compositions sharing buffers, composed at once, cannot deadlock.
    let mut order: Vec<(u64, usize)> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            Kept::Buffer(b) => Some((b.id(), i)),
            Kept::Copy { .. } | Kept::Collective(_) => None,
        })
        .collect();
    order.sort_unstable();
    let mut guards: Vec<Option<parking_lot::MutexGuard<'_, State>>> = parts.iter().map(|_| None).collect();
    for (_, i) in order {
        if let Kept::Buffer(b) = &parts[i] {
            guards[i] = Some(b.lock_state());
        }
    }
    // Read under the locks: an update bumps the count under its buffer's lock.
    let generations = parts
        .iter()
        .map(|p| match p {
            Kept::Buffer(b) => b.updates(),
            Kept::Copy { .. } | Kept::Collective(_) => 0,
        })
        .collect();
    let mut adapter_parts: Vec<ComposePart<'_>> = Vec::with_capacity(parts.len());
    for ((part, deps), guard) in parts.iter().zip(after).zip(guards.iter_mut()) {
        let work = match (part, guard) {
            (Kept::Buffer(b), Some(guard)) => ComposeWork::CommandBuffer {
                context: &**b.context().imp(),
                executable: guard.executable("a composition of")?,
            },
            (Kept::Copy { context, command }, _) => ComposeWork::PeerCopy { context: &**context.imp(), command },
            (Kept::Collective(recorded), _) => ComposeWork::Collective {
                captured: &**recorded
                    .captured_imp()
                    .ok_or_else(|| err!(Unknown, "a composed collective lost its capture"))?,
            },
            (Kept::Buffer(_), None) => return Err(err!(Unknown, "a composition lost a command buffer's lock")),
        };
        adapter_parts.push(ComposePart { work, after: deps });
    }
    // SAFETY: every part's context composes with and is waited for by
    // `context` (`check_context`); the command buffers are finalized, of
    // their parts' contexts and distinct; the copies passed the peer-copy
    // checks for their contexts; the collectives are captured, distinct,
    // and their ranks' contexts passed `check_context`; `after` names
    // earlier parts only.
    let imp = unsafe { context.imp().compose_command_buffers(&mut adapter_parts)? };
    Ok((imp, generations))
}

impl fmt::Debug for ComposedCommandBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.state.lock();
        f.debug_struct("ComposedCommandBuffer")
            .field("parts", &st.parts.len())
            .field("compositions", &st.compositions)
            .finish()
    }
}

impl Queue {
    /// Submits a composition of command buffers of several contexts
    /// ([`ComposedCommandBuffer`]) with one call, after `wait`: every part
    /// after the parts it depends on, after the composition's previous
    /// submission. `InvalidQueue` for a queue of another context than the
    /// composition's; `GraphCaptureUnsupported` on a capturing queue.
    pub fn enqueue_composed(&self, composed: &ComposedCommandBuffer, wait: &[&Event]) -> Result<Event> {
        self.check_not_capturing("a composed command-buffer enqueue")?;
        let resolved = resolve_wait_list(self.context().id(), wait)?;
        let event = composed.enqueue_on(self.target(), &resolved)?;
        // The composition's state, not a handle: queues sit below
        // compositions, so they keep what they run as `Any`.
        Ok(self.adopt_composed_event(event, composed.inner.clone()))
    }
}

impl Context {
    /// Whether command buffers of `other` (and peer copies run by its
    /// device) can be composed into a [`ComposedCommandBuffer`] submitted
    /// by queues of this context: both of one adapter that composes them
    /// (the CPU adapter, CUDA) and this context waits for `other`'s events.
    pub fn composes_with(&self, other: &Context) -> bool {
        check_context(self, other, 0).is_ok()
    }
}
