//! [`SettingsFile`]: a checkpoint's processor settings file, found and read once.

use crate::{BudgetSource, Error, Result};
use std::path::{Path, PathBuf};

/// The first of a checkpoint directory's processor settings files that exists:
/// `processor_config.json`, else `preprocessor_config.json` (mlx-vlm's order for a local
/// path), with its text. Both the image settings ([`ProcessorConfig`](crate::ProcessorConfig))
/// and the video settings ([`VideoProcessorConfig`](crate::VideoProcessorConfig)) are read out
/// of the one text, and a refusal of either names [`path`](Self::path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    path: PathBuf,
    source: BudgetSource,
    text: String,
}

impl SettingsFile {
    /// The files looked for, in order.
    pub const CANDIDATES: [BudgetSource; 2] = [BudgetSource::ProcessorConfig, BudgetSource::PreprocessorConfig];

    /// The settings file of `dir`, read; `None` when neither file exists (the reference then
    /// uses its defaults). An unreadable file is [`Error::Io`] naming it.
    pub fn find(dir: impl AsRef<Path>) -> Result<Option<SettingsFile>> {
        let dir = dir.as_ref();
        for source in SettingsFile::CANDIDATES {
            let path = dir.join(source.as_str());
            match std::fs::read_to_string(&path) {
                Ok(text) => return Ok(Some(SettingsFile { path, source, text })),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::Io { path, source: e }),
            }
        }
        Ok(None)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which of the two files it is: the source a budget read from it is recorded under.
    pub fn source(&self) -> BudgetSource {
        self.source
    }

    /// The file's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// `detail` as an [`Error::Config`] naming this file.
    pub(crate) fn refusal(&self, detail: impl std::fmt::Display) -> Error {
        Error::Config { path: self.path.clone(), detail: detail.to_string() }
    }
}
