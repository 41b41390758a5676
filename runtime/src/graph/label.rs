//! Graph labels: a name for diagnostics, kept in [`GraphProperties`] and
//! shown in the tracing spans of a graph's creation, finalize and
//! submissions.

use super::{Executable, Graph, GraphProperties, Modifiable};

impl GraphProperties {
    /// These properties with `label` as the graph's [`label`](Self::label).
    pub fn with_label(self, label: &'static str) -> GraphProperties {
        GraphProperties { label: Some(label), ..self }
    }
}

impl Graph<Modifiable> {
    /// The label it was created with.
    pub fn label(&self) -> Option<&'static str> {
        self.properties().label
    }
}

impl Graph<Executable> {
    /// The label of the graph it was finalized from.
    pub fn label(&self) -> Option<&'static str> {
        self.0.inner.source.props.label
    }
}
