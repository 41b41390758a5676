//! Property lists where the specification takes a `property_list` that may
//! hold any property: `begin_recording` (8.4.6: "`propList` ... properties
//! for the `command_graph` class"), checked rather than typed, so that a
//! property that does not belong there is the specification's error.

use cmdbuf_core::err;
use cmdbuf_core::error::Result;

/// A property of the graph extension, as a `property_list` holds it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum GraphProperty {
    /// `property::graph::no_cycle_check` (graph construction).
    NoCycleCheck,
    /// `property::graph::assume_buffer_outlives_graph` (graph construction).
    AssumeBufferOutlivesGraph,
    /// `property::graph::assume_data_outlives_buffer` (graph construction, or
    /// `begin_recording`: then only for the commands that queue records
    /// until its recording ends).
    AssumeDataOutlivesBuffer,
    /// `property::graph::updatable` (finalize).
    Updatable,
    /// `property::graph::enable_profiling` (finalize).
    EnableProfiling,
    /// `property::node::depends_on_all_leaves` (adding a node).
    DependsOnAllLeaves,
}

impl GraphProperty {
    /// The SYCL name, e.g. `property::graph::updatable`.
    pub fn name(self) -> &'static str {
        match self {
            GraphProperty::NoCycleCheck => "property::graph::no_cycle_check",
            GraphProperty::AssumeBufferOutlivesGraph => "property::graph::assume_buffer_outlives_graph",
            GraphProperty::AssumeDataOutlivesBuffer => "property::graph::assume_data_outlives_buffer",
            GraphProperty::Updatable => "property::graph::updatable",
            GraphProperty::EnableProfiling => "property::graph::enable_profiling",
            GraphProperty::DependsOnAllLeaves => "property::node::depends_on_all_leaves",
        }
    }

    /// Where the property is given instead, for the error of a misplaced one.
    fn belongs_to(self) -> &'static str {
        match self {
            GraphProperty::NoCycleCheck | GraphProperty::AssumeBufferOutlivesGraph => {
                "graph construction (GraphProperties)"
            }
            GraphProperty::AssumeDataOutlivesBuffer => "graph construction or begin_recording",
            GraphProperty::Updatable | GraphProperty::EnableProfiling => "finalize (FinalizeProperties)",
            GraphProperty::DependsOnAllLeaves => "adding a node (NodeProperties)",
        }
    }
}

/// What a `begin_recording` property list asked for; every queue that
/// records with it keeps it, and a queue that starts recording transitively
/// (waiting on an event a recording queue returned) inherits it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RecordingProperties {
    /// Host data of buffers used by the commands this queue records is not
    /// copied: the application keeps it alive for the graph's lifetime.
    pub assume_data_outlives_buffer: bool,
}

impl RecordingProperties {
    /// Checks a `begin_recording` property list. Only properties that apply
    /// to a recording are accepted (`assume_data_outlives_buffer`); one
    /// given twice counts once. Any other property is `InvalidValue` (the
    /// specification's `errc::invalid` for a property the object does not
    /// support), naming where it belongs.
    pub fn from_list(list: &[GraphProperty]) -> Result<RecordingProperties> {
        let mut props = RecordingProperties::default();
        for p in list {
            match p {
                GraphProperty::AssumeDataOutlivesBuffer => props.assume_data_outlives_buffer = true,
                other => {
                    return Err(err!(
                        InvalidValue,
                        "{} is not a property of begin_recording; it is given at {}",
                        other.name(),
                        other.belongs_to()
                    ));
                }
            }
        }
        Ok(props)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cmdbuf_core::UrError;

    #[test]
    fn only_recording_properties_are_accepted() {
        assert_eq!(RecordingProperties::from_list(&[]).unwrap(), RecordingProperties::default());
        let twice = [GraphProperty::AssumeDataOutlivesBuffer, GraphProperty::AssumeDataOutlivesBuffer];
        assert!(RecordingProperties::from_list(&twice).unwrap().assume_data_outlives_buffer);
        for bad in [
            GraphProperty::NoCycleCheck,
            GraphProperty::AssumeBufferOutlivesGraph,
            GraphProperty::Updatable,
            GraphProperty::EnableProfiling,
            GraphProperty::DependsOnAllLeaves,
        ] {
            let list = [GraphProperty::AssumeDataOutlivesBuffer, bad];
            match RecordingProperties::from_list(&list) {
                Err(UrError::InvalidValue(d)) => assert!(d.to_string().contains(bad.name()), "{d}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
