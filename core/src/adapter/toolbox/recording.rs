//! The recorded-command list of a command buffer that keeps its commands:
//! each appended command with its sync-point dependencies, wait events,
//! signal event and whether a later command depends on it, in append order.
//!
//! Used by cmdbuf-core's software command buffer, the OpenCL adapter's
//! pre-planned and `cl_khr_command_buffer` buffers and the Vulkan adapter's
//! buffers, each with its own signal-event type and payload. The list is the
//! record those buffers plan from at finalize and change at updates. The
//! software and pre-planned buffers also walk it at each submission (and
//! OpenCL's native buffer reads its eager steps' commands there): the same
//! fields, read from one slice, as their own lists had.
//!
//! Not used by:
//! - the front end's record (`api/recorded.rs`): it keeps what update
//!   *validation* needs (kernel alternatives, whether a signal event exists,
//!   how many wait events), not the dependencies or the events themselves;
//! - the CPU adapter's graph: a run walks successor lists and predecessor
//!   counters, not dependency lists, over a snapshot that runs share and
//!   composition concatenates, so its node is shaped for that walk;
//! - the CUDA adapter's commands: the CUDA graph is its record (dependencies
//!   are graph edges, wait and signal events are graph nodes made at the
//!   append), and it keeps only the node handles an update needs.

use std::ops::Index;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::adapter::KernelUpdate;
use crate::command::Command;
use crate::err;
use crate::operands::Event;
use crate::types::error::{Result, UrError};

/// One command of a [`Recording`], with an adapter's signal-event type `S`
/// and payload `X`.
pub struct RecordedCommand<S, X = ()> {
    command: Command,
    deps: SmallVec<[u32; 4]>,
    wait_events: Vec<Event>,
    signal: Option<Arc<S>>,
    leaf: bool,
    /// What the adapter keeps with the command.
    pub extra: X,
}

impl<S, X> RecordedCommand<S, X> {
    /// The command, as appended or last updated.
    pub fn command(&self) -> &Command {
        &self.command
    }

    /// Its sync-point dependencies: earlier commands by index, each once,
    /// ascending (as the front end gives them).
    pub fn deps(&self) -> &[u32] {
        &self.deps
    }

    /// The events it waits for besides its dependencies, as appended or last
    /// updated; resolved at each submission.
    pub fn wait_events(&self) -> &[Event] {
        &self.wait_events
    }

    /// Its current signal event, if it was appended with one.
    pub fn signal(&self) -> Option<&Arc<S>> {
        self.signal.as_ref()
    }

    /// Whether no later command depends on it: what ends a submission.
    pub fn is_leaf(&self) -> bool {
        self.leaf
    }
}

/// A command buffer's commands in append order, indexed by sync point
/// (a command's index is its sync point and its update handle).
pub struct Recording<S, X = ()> {
    commands: Vec<RecordedCommand<S, X>>,
}

impl<S, X> Default for Recording<S, X> {
    fn default() -> Self {
        Recording { commands: Vec::new() }
    }
}

impl<S, X> Recording<S, X> {
    /// An empty recording.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a command after its dependencies `deps` (earlier commands;
    /// `InvalidSyncPointWaitList` otherwise, with nothing appended), which
    /// then are no longer leaves; returns its sync point.
    pub fn push(
        &mut self,
        command: &Command,
        deps: &[u32],
        wait_events: &[Event],
        signal: Option<Arc<S>>,
        extra: X,
    ) -> Result<u32> {
        let index = self.commands.len() as u32;
        if let Some(d) = deps.iter().find(|d| **d >= index) {
            return Err(err!(
                InvalidSyncPointWaitList,
                "sync point {d} names a command not yet appended ({index} so far)"
            ));
        }
        for d in deps {
            self.commands[*d as usize].leaf = false;
        }
        self.commands.push(RecordedCommand {
            command: command.clone(),
            deps: SmallVec::from_slice(deps),
            wait_events: wait_events.to_vec(),
            signal,
            leaf: true,
            extra,
        });
        Ok(index)
    }

    /// How many commands were appended.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether no command was appended.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// The commands in append order (a topological order of the DAG).
    pub fn iter(&self) -> std::slice::Iter<'_, RecordedCommand<S, X>> {
        self.commands.iter()
    }

    /// Command `index`; `InvalidCommandHandle` if there is none.
    pub fn get(&self, index: u32) -> Result<&RecordedCommand<S, X>> {
        let len = self.commands.len();
        self.commands.get(index as usize).ok_or_else(|| no_command(index, len))
    }

    fn get_mut(&mut self, index: u32) -> Result<&mut RecordedCommand<S, X>> {
        let len = self.commands.len();
        self.commands.get_mut(index as usize).ok_or_else(|| no_command(index, len))
    }

    /// Replaces the launch of the command `update` names with its new one;
    /// returns the command it replaces (which submissions in flight may
    /// still use). `InvalidCommandHandle` for no such command.
    pub fn update_launch(&mut self, update: &KernelUpdate<'_>) -> Result<Command> {
        let rec = self.get_mut(update.command)?;
        Ok(std::mem::replace(&mut rec.command, Command::KernelLaunch(update.launch.clone())))
    }

    /// [`update_launch`](Self::update_launch) for each update, in order,
    /// where the replaced commands need not be kept.
    pub fn update_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()> {
        for u in updates {
            self.update_launch(u)?;
        }
        Ok(())
    }

    /// Makes `signal` command `index`'s signal event; returns the one it
    /// replaces. `InvalidOperation` for a command appended without one (and
    /// `InvalidCommandHandle` for no such command).
    pub fn replace_signal(&mut self, index: u32, signal: Arc<S>) -> Result<Arc<S>> {
        match &mut self.get_mut(index)?.signal {
            Some(slot) => Ok(std::mem::replace(slot, signal)),
            None => Err(err!(InvalidOperation, "command {index} has no signal event")),
        }
    }

    /// Makes `events` command `index`'s wait events (`InvalidCommandHandle`
    /// for no such command).
    pub fn set_wait_events(&mut self, index: u32, events: &[Event]) -> Result<()> {
        self.get_mut(index)?.wait_events = events.to_vec();
        Ok(())
    }
}

fn no_command(index: u32, len: usize) -> UrError {
    err!(InvalidCommandHandle, "no command {index} ({len} appended)")
}

/// Command `index`, for indices the adapter took from this recording
/// (its own plans); [`Recording::get`] for indices from an application.
impl<S, X> Index<u32> for Recording<S, X> {
    type Output = RecordedCommand<S, X>;

    fn index(&self, index: u32) -> &RecordedCommand<S, X> {
        &self.commands[index as usize]
    }
}

impl<'a, S, X> IntoIterator for &'a Recording<S, X> {
    type Item = &'a RecordedCommand<S, X>;
    type IntoIter = std::slice::Iter<'a, RecordedCommand<S, X>>;

    fn into_iter(self) -> Self::IntoIter {
        self.commands.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operands::MemLoc;
    use crate::types::memory::HostPtr;

    fn copy() -> Command {
        let nowhere = || MemLoc::Host(HostPtr(std::ptr::null_mut()));
        Command::UsmMemcpy { dst: nowhere(), src: nowhere(), size: 1 }
    }

    #[test]
    fn a_command_stops_being_a_leaf_when_a_later_one_depends_on_it() {
        let mut rec: Recording<u32> = Recording::new();
        assert_eq!(rec.push(&copy(), &[], &[], None, ()).unwrap(), 0);
        assert_eq!(rec.push(&copy(), &[], &[], None, ()).unwrap(), 1);
        assert_eq!(rec.push(&copy(), &[0], &[], None, ()).unwrap(), 2);
        let leaves: Vec<bool> = rec.iter().map(RecordedCommand::is_leaf).collect();
        assert_eq!(leaves, [false, true, true]);
        assert_eq!(rec[2].deps(), [0]);
    }

    #[test]
    fn a_dependency_on_a_command_not_yet_appended_is_refused_and_appends_nothing() {
        let mut rec: Recording<u32> = Recording::new();
        rec.push(&copy(), &[], &[], None, ()).unwrap();
        let e = rec.push(&copy(), &[0, 1], &[], None, ()).unwrap_err();
        assert!(matches!(e, UrError::InvalidSyncPointWaitList(_)), "{e}");
        assert_eq!(rec.len(), 1);
        assert!(rec[0].is_leaf());
    }

    #[test]
    fn only_a_command_appended_with_a_signal_event_gets_a_new_one() {
        let mut rec: Recording<u32> = Recording::new();
        rec.push(&copy(), &[], &[], Some(Arc::new(1)), ()).unwrap();
        rec.push(&copy(), &[], &[], None, ()).unwrap();
        assert_eq!(*rec.replace_signal(0, Arc::new(2)).unwrap(), 1);
        assert_eq!(rec[0].signal().map(|s| **s), Some(2));
        let e = rec.replace_signal(1, Arc::new(3)).unwrap_err();
        assert!(matches!(e, UrError::InvalidOperation(_)), "{e}");
        assert!(rec[1].signal().is_none());
        let e = rec.set_wait_events(2, &[]).unwrap_err();
        assert!(matches!(e, UrError::InvalidCommandHandle(_)), "{e}");
        assert!(rec.get(2).is_err());
    }
}
