//! The crate's error: every way finding or fetching a model can fail, each naming the model
//! (`repo@revision`) and what to do about it.

use std::path::PathBuf;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failure to find or fetch a model. `model` is `org/name@revision` as asked.
///
/// Nothing a failure interrupted is left where a reader would take it as complete: fetched
/// bytes wait in files that only a later fetch of the same commit reads (to resume), and the
/// Hugging Face cache receives a file only once it is whole and checked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Hub refused the request for want of rights (401 or 403): the repository is gated or
    /// private, or does not exist (the Hub answers 401 for those too when no token is given).
    #[error(
        "{model}: the Hub refused access ({status}{}): the repository may be gated or private, or may not exist. \
         Accept its terms on the Hub if it is gated, then give a token with read access: set HF_TOKEN, or run \
         `hf auth login` (it writes the token file HF_TOKEN_PATH, by default $HF_HOME/token)",
        if *.token_sent { ", with the token given" } else { ", and no token was given" }
    )]
    Unauthorized { model: String, status: u16, token_sent: bool },
    /// The Hub has no such repository, revision or file (404).
    #[error("{model}: {}", missing.describe())]
    NotFound { model: String, missing: Missing },
    /// `HF_HUB_OFFLINE` is set and no copy of the model is on this machine.
    #[error("{model}: HF_HUB_OFFLINE is set and {detail}; unset HF_HUB_OFFLINE to fetch it, or name a local directory")]
    Offline { model: String, detail: String },
    /// The Hub could not be reached (no network, DNS, refused connection, timeout).
    #[error(
        "{model}: cannot reach {url}: {detail}. Check the network (and HF_ENDPOINT, HTTPS_PROXY); \
         with a copy already on this machine, HF_HUB_OFFLINE=1 uses it"
    )]
    Network { model: String, url: String, detail: String },
    /// The Hub answered with a status this client does not expect.
    #[error("{model}: {url} answered HTTP {status}{}", detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Status { model: String, url: String, status: u16, detail: Option<String> },
    /// A response carried fewer or more bytes than it declared or than the Hub's metadata
    /// says (a dropped connection, a lying `Content-Length`, a file changed under a commit).
    #[error("{model}: {url}: {detail}; nothing incomplete was kept as whole, and a new attempt resumes")]
    Length { model: String, url: String, detail: String },
    /// What the Hub sent does not parse: its metadata, or a safetensors header.
    #[error("{model}: {what}: {detail}")]
    Malformed { model: String, what: String, detail: String },
    /// A whole file's SHA-256 is not the one the Hub's metadata gives.
    #[error("{model}: `{file}` has SHA-256 {actual}, the Hub says {expected}; it was not kept")]
    Checksum { model: String, file: String, expected: String, actual: String },
    /// A file of a cache or of the store could not be read or written.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// An environment variable holds a value that cannot be used (`HF_ENDPOINT`, ...).
    #[error("{variable}: {detail}")]
    Environment { variable: &'static str, detail: String },
}

/// What the Hub does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// No repository of that name (or not visible without a token).
    Repository,
    /// The repository has no such branch, tag or commit.
    Revision,
    /// The revision has no such file.
    File(String),
    /// The revision holds no weight file mlx-vlm would read.
    Weights,
}

impl Missing {
    fn describe(&self) -> String {
        match self {
            Missing::Repository => {
                "the Hub has no such model repository (check the name; a private one needs HF_TOKEN)".to_owned()
            }
            Missing::Revision => "the repository has no such branch, tag or commit".to_owned(),
            Missing::File(file) => format!("the revision has no file `{file}`"),
            Missing::Weights => "the revision holds no `*.safetensors` weight file that mlx-vlm reads".to_owned(),
        }
    }
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }

    /// What kind of failure this is, for callers that map it onto their own error model.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Unauthorized { .. } => ErrorKind::Unauthorized,
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Offline { .. } => ErrorKind::Offline,
            Error::Network { .. } => ErrorKind::Network,
            Error::Status { .. } | Error::Length { .. } | Error::Malformed { .. } | Error::Checksum { .. } => {
                ErrorKind::BadResponse
            }
            Error::Io { .. } => ErrorKind::Io,
            Error::Environment { .. } => ErrorKind::Environment,
        }
    }
}

/// The kind of an [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Unauthorized,
    NotFound,
    Offline,
    Network,
    /// The server answered, but not with what the Hub's protocol promises.
    BadResponse,
    Io,
    Environment,
}
