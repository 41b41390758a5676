//! The partition of a command-buffer's commands into *steps*.
//!
//! A `cl_command_buffer_khr` cannot wait for an event in the middle of its
//! commands, signal an event per command, or touch raw host memory. Commands
//! that need one of those are *eager steps*: at each enqueue they are
//! enqueued on their own, with their wait events, and their event becomes the
//! signal event. Every other command goes into a *native step*: one
//! `cl_command_buffer_khr` whose internal dependencies are sync points.
//! Steps wait for the steps their commands depend on.
//!
//! The partition is decided online, in append order, so that a buffer can be
//! recorded while it is appended:
//! - an eager command becomes its own step; the open native step stays open;
//! - any other command joins the open native step if every step it depends
//!   on is that step or one created before it; otherwise it opens a new one.
//!
//! A planner may also cap native steps at a number of commands
//! ([`Planner::with_step_limit`]): a full step is closed and the next command
//! opens a new one. Updatable buffers use it so that an update re-records one
//! small step rather than every command.
//!
//! Steps are numbered in creation order and a step only ever depends on
//! lower-numbered steps, so enqueueing them in order is a topological order.
//! A buffer whose commands need no eager step is a single native step: one
//! `cl_command_buffer_khr`, enqueued once per submission.

use smallvec::SmallVec;

/// What a step is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum StepKind {
    /// Recorded commands, enqueued as one command-buffer.
    Native,
    /// One command enqueued on its own.
    Eager,
}

/// A step: its commands (in append order) and the steps it waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) kind: StepKind,
    pub(crate) commands: Vec<u32>,
    /// Steps it waits for, each once, all lower-numbered.
    pub(crate) deps: SmallVec<[u32; 4]>,
    /// Whether a later step waits for it (if not, the submission's join does).
    pub(crate) has_dependents: bool,
}

/// Where the next command goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Into the open native step.
    Join(u32),
    /// Into a new native step with this number.
    NewNative(u32),
    /// Into a new eager step with this number.
    NewEager(u32),
}

impl Placement {
    /// The step's number.
    pub(crate) fn step(self) -> u32 {
        match self {
            Placement::Join(s) | Placement::NewNative(s) | Placement::NewEager(s) => s,
        }
    }
}

/// The partition so far.
#[derive(Clone, Debug, Default)]
pub(crate) struct Planner {
    steps: Vec<Step>,
    step_of: Vec<u32>,
    open: Option<u32>,
    /// Most commands in a native step; `None`: no limit.
    step_limit: Option<usize>,
}

impl Planner {
    /// A planner whose native steps hold at most `limit` commands.
    pub(crate) fn with_step_limit(limit: usize) -> Planner {
        Planner { step_limit: Some(limit.max(1)), ..Planner::default() }
    }

    /// Decides where a command with these dependencies (earlier commands'
    /// numbers) goes, without changing anything.
    pub(crate) fn decide(&self, deps: &[u32], eager: bool) -> Placement {
        let next = self.steps.len() as u32;
        if eager {
            return Placement::NewEager(next);
        }
        match self.open {
            Some(open)
                if deps.iter().all(|d| self.step_of[*d as usize] <= open)
                    && self.step_limit.is_none_or(|limit| self.steps[open as usize].commands.len() < limit) =>
            {
                Placement::Join(open)
            }
            _ => Placement::NewNative(next),
        }
    }

    /// Applies a decision of [`decide`](Self::decide) for the next command.
    pub(crate) fn apply(&mut self, placement: Placement, deps: &[u32]) {
        let command = self.step_of.len() as u32;
        let step = placement.step();
        match placement {
            Placement::Join(_) => self.steps[step as usize].commands.push(command),
            Placement::NewNative(_) | Placement::NewEager(_) => {
                let kind = if matches!(placement, Placement::NewEager(_)) { StepKind::Eager } else { StepKind::Native };
                self.steps.push(Step { kind, commands: vec![command], deps: SmallVec::new(), has_dependents: false });
                if kind == StepKind::Native {
                    self.open = Some(step);
                }
            }
        }
        for d in deps {
            let on = self.step_of[*d as usize];
            if on != step && !self.steps[step as usize].deps.contains(&on) {
                self.steps[step as usize].deps.push(on);
                self.steps[on as usize].has_dependents = true;
            }
        }
        self.step_of.push(step);
    }

    /// The steps, in enqueue order.
    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The step of command `command`.
    pub(crate) fn step_of(&self, command: u32) -> u32 {
        self.step_of[command as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plans commands given as (deps, eager).
    fn plan(commands: &[(&[u32], bool)]) -> Planner {
        let mut p = Planner::default();
        for (deps, eager) in commands {
            let d = p.decide(deps, *eager);
            p.apply(d, deps);
        }
        p
    }

    fn check_topological(p: &Planner) {
        for (i, s) in p.steps().iter().enumerate() {
            assert!(s.deps.iter().all(|d| (*d as usize) < i), "step {i} depends on a later step: {s:?}");
        }
    }

    #[test]
    fn a_step_limit_splits_native_steps() {
        let mut p = Planner::with_step_limit(2);
        let chain: [&[u32]; 5] = [&[], &[0], &[1], &[2], &[3]];
        for deps in chain {
            let d = p.decide(deps, false);
            p.apply(d, deps);
        }
        check_topological(&p);
        let commands: Vec<&[u32]> = p.steps().iter().map(|s| s.commands.as_slice()).collect();
        assert_eq!(commands, [&[0, 1][..], &[2, 3], &[4]]);
        assert_eq!(p.steps()[1].deps.as_slice(), &[0]);
        assert_eq!(p.steps()[2].deps.as_slice(), &[1]);
        assert!(p.steps()[0].has_dependents && !p.steps()[2].has_dependents);
        // The open step has room: it takes the next command.
        assert_eq!(p.decide(&[], false), Placement::Join(2));
        let d = p.decide(&[], false);
        p.apply(d, &[]);
        // Now it is full: the next opens a new step.
        assert_eq!(p.decide(&[], false), Placement::NewNative(3));
    }

    #[test]
    fn no_events_is_one_native_step() {
        let p = plan(&[(&[], false), (&[0], false), (&[], false), (&[1, 2], false)]);
        assert_eq!(p.steps().len(), 1);
        assert_eq!(p.steps()[0].kind, StepKind::Native);
        assert_eq!(p.steps()[0].commands, vec![0, 1, 2, 3]);
        assert!(p.steps()[0].deps.is_empty() && !p.steps()[0].has_dependents);
    }

    #[test]
    fn an_eager_command_splits_only_what_depends_on_it() {
        // 0 native, 1 eager after 0, 2 independent native, 3 after 1, 4 after 3 and 2.
        let p = plan(&[(&[], false), (&[0], true), (&[], false), (&[1], false), (&[3, 2], false)]);
        check_topological(&p);
        let s = p.steps();
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].kind, s[0].commands.clone()), (StepKind::Native, vec![0, 2]));
        assert_eq!((s[1].kind, s[1].commands.clone()), (StepKind::Eager, vec![1]));
        assert_eq!(s[1].deps.as_slice(), &[0]);
        assert_eq!((s[2].kind, s[2].commands.clone()), (StepKind::Native, vec![3, 4]));
        assert_eq!(s[2].deps.as_slice(), &[1, 0]);
        assert!(s[0].has_dependents && s[1].has_dependents && !s[2].has_dependents);
        assert_eq!(p.step_of(4), 2);
    }

    #[test]
    fn in_order_chain_with_eager_commands() {
        // An in-order buffer: each command depends on the previous one.
        let p = plan(&[
            (&[], false),
            (&[0], false),
            (&[1], true),
            (&[2], false),
            (&[3], true),
            (&[4], true),
            (&[5], false),
        ]);
        check_topological(&p);
        let kinds: Vec<_> = p.steps().iter().map(|s| (s.kind, s.commands.clone())).collect();
        assert_eq!(
            kinds,
            vec![
                (StepKind::Native, vec![0, 1]),
                (StepKind::Eager, vec![2]),
                (StepKind::Native, vec![3]),
                (StepKind::Eager, vec![4]),
                (StepKind::Eager, vec![5]),
                (StepKind::Native, vec![6]),
            ]
        );
    }

    #[test]
    fn a_command_never_joins_a_step_that_an_eager_dependency_waits_for() {
        // 0 native; 1 eager after 0; 2 after 1 must not join step 0 (that
        // would make step 0 wait for step 1, which waits for step 0).
        let p = plan(&[(&[], false), (&[0], true), (&[1], false)]);
        check_topological(&p);
        assert_eq!(p.step_of(2), 2);
        // A command depending only on steps older than the open one joins it.
        let p = plan(&[(&[], true), (&[], false), (&[0], false)]);
        assert_eq!(p.steps().len(), 2);
        assert_eq!(p.step_of(2), 1);
        assert_eq!(p.steps()[1].deps.as_slice(), &[0]);
    }

    #[test]
    fn decide_does_not_change_the_plan() {
        let p = plan(&[(&[], false)]);
        let before = p.steps().to_vec();
        assert_eq!(p.decide(&[0], false), Placement::Join(0));
        assert_eq!(p.decide(&[0], true), Placement::NewEager(1));
        assert_eq!(p.steps(), &before[..]);
        assert_eq!(Planner::default().decide(&[], false), Placement::NewNative(0));
    }
}
