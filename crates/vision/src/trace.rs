//! [`Trace`]: intermediate outputs of a forward pass, for parity checks and debugging.

use crate::{Features, PreparedImage, Result, VisionEncoder};
use tensor::Array;

/// Named intermediate arrays recorded during one forward pass, in order.
///
/// Passed as `Option<&mut Trace>` to the encoders' forward functions: with `None` nothing is
/// recorded; with a trace, each stage's output is appended (lazily: recording adds no work to
/// the graph, evaluating the final output computes every recorded stage too).
#[derive(Debug, Default)]
pub struct Trace {
    stages: Vec<(String, Array)>,
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Trace {
        Trace::default()
    }

    /// The recorded stages, in order.
    pub fn stages(&self) -> &[(String, Array)] {
        &self.stages
    }

    /// Consumes the trace, returning its stages.
    pub fn into_stages(self) -> Vec<(String, Array)> {
        self.stages
    }

    /// `encoder`'s [`encode`](VisionEncoder::encode) of `images`, recording each batch's stages
    /// in this trace (for parity checks against the reference's intermediate outputs).
    pub fn encode(&mut self, encoder: &VisionEncoder, images: &[PreparedImage]) -> Result<Features> {
        encoder.encode_recording(images, Some(self))
    }
}

/// Appends `name` → `array` to `trace`, if there is one.
pub(crate) fn record(trace: &mut Option<&mut Trace>, name: impl Into<String>, array: &Array) {
    if let Some(trace) = trace.as_deref_mut() {
        trace.stages.push((name.into(), array.clone()));
    }
}
