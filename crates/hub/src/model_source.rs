//! [`ModelSource`]: where a model comes from, a directory or a Hub repository at a revision,
//! parsed once from what a user typed.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Where a model comes from.
///
/// Parsed from text as mlx-vlm's `load` reads its `path_or_hf_repo` ([`ModelSource::parse`]):
/// a path that exists is a directory; otherwise text of the form `org/name` or
/// `org/name@revision` is a Hub repository; anything else is a directory (that does not exist,
/// which loading then reports).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ModelSource {
    /// A checkpoint directory on this machine.
    Directory(PathBuf),
    /// A model repository on the Hugging Face Hub at a revision.
    Hub(HubModel),
}

/// A model repository on the Hub at a revision: `org/name@revision`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HubModel {
    pub repo: RepoId,
    pub revision: Revision,
}

/// A Hub repository id, `org/name`: two non-empty parts of ASCII letters, digits, `-`, `_` and
/// `.`, neither starting or ending with `-` or `.`, with no `--` or `..`, each at most 96
/// characters (the Hub's own rule for repository ids).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepoId(String);

/// A revision: a commit (40 lowercase hexadecimal digits), or a branch or tag name that the
/// Hub resolves to its current commit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Revision {
    Commit(CommitId),
    Named(String),
}

/// A commit id: 40 lowercase hexadecimal digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommitId(String);

/// Text that is not a repository id, revision or commit id, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not {what}: {why}")]
pub struct ParseError {
    pub text: String,
    pub what: &'static str,
    pub why: String,
}

impl ModelSource {
    /// Reads what a user typed (`--model`, `Encoder(...)`): an existing path is a
    /// [`ModelSource::Directory`], like mlx-vlm's `Path(path_or_hf_repo).exists()`; otherwise
    /// `org/name` with an optional `@revision` (a branch, tag or commit; `main` when absent)
    /// is a [`ModelSource::Hub`]; anything else is a directory that loading reports missing.
    pub fn parse(text: &str) -> ModelSource {
        let path = Path::new(text);
        if path.exists() {
            return ModelSource::Directory(path.to_path_buf());
        }
        match HubModel::from_str(text) {
            Ok(model) => ModelSource::Hub(model),
            Err(_) => ModelSource::Directory(path.to_path_buf()),
        }
    }
}

impl fmt::Display for ModelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSource::Directory(dir) => write!(f, "{}", dir.display()),
            ModelSource::Hub(model) => write!(f, "{model}"),
        }
    }
}

impl From<&Path> for ModelSource {
    fn from(dir: &Path) -> ModelSource {
        ModelSource::Directory(dir.to_path_buf())
    }
}

impl From<PathBuf> for ModelSource {
    fn from(dir: PathBuf) -> ModelSource {
        ModelSource::Directory(dir)
    }
}

impl From<&PathBuf> for ModelSource {
    fn from(dir: &PathBuf) -> ModelSource {
        ModelSource::Directory(dir.clone())
    }
}

impl From<&str> for ModelSource {
    /// [`ModelSource::parse`].
    fn from(text: &str) -> ModelSource {
        ModelSource::parse(text)
    }
}

impl From<&String> for ModelSource {
    /// [`ModelSource::parse`].
    fn from(text: &String) -> ModelSource {
        ModelSource::parse(text)
    }
}

impl From<String> for ModelSource {
    /// [`ModelSource::parse`].
    fn from(text: String) -> ModelSource {
        ModelSource::parse(&text)
    }
}

impl From<HubModel> for ModelSource {
    fn from(model: HubModel) -> ModelSource {
        ModelSource::Hub(model)
    }
}

impl From<&ModelSource> for ModelSource {
    fn from(source: &ModelSource) -> ModelSource {
        source.clone()
    }
}

impl HubModel {
    /// `repo` at `revision`.
    pub fn new(repo: RepoId, revision: Revision) -> HubModel {
        HubModel { repo, revision }
    }
}

impl FromStr for HubModel {
    type Err = ParseError;

    /// `org/name` or `org/name@revision`.
    fn from_str(text: &str) -> Result<HubModel, ParseError> {
        let (repo, revision) = match text.split_once('@') {
            Some((repo, revision)) => (repo, Revision::from_str(revision)?),
            None => (text, Revision::default()),
        };
        Ok(HubModel { repo: RepoId::from_str(repo)?, revision })
    }
}

impl fmt::Display for HubModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.repo, self.revision)
    }
}

impl RepoId {
    /// The id, `org/name`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for RepoId {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<RepoId, ParseError> {
        let invalid =
            |why: &str| ParseError { text: text.to_owned(), what: "a Hub repository id", why: why.to_owned() };
        let Some((org, name)) = text.split_once('/') else { return Err(invalid("expected `org/name`")) };
        for part in [org, name] {
            if part.is_empty() || part.len() > 96 {
                return Err(invalid("each part takes 1 to 96 characters"));
            }
            if !part.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
                return Err(invalid("only ASCII letters, digits, `-`, `_` and `.` are allowed in each part"));
            }
            if part.starts_with(['-', '.']) || part.ends_with(['-', '.']) {
                return Err(invalid("a part may not start or end with `-` or `.`"));
            }
            if part.contains("--") || part.contains("..") {
                return Err(invalid("`--` and `..` are not allowed"));
            }
        }
        Ok(RepoId(text.to_owned()))
    }
}

impl fmt::Display for RepoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Revision {
    /// The revision as the Hub's routes take it (a commit id or a name), not yet URL-encoded.
    pub fn as_str(&self) -> &str {
        match self {
            Revision::Commit(commit) => commit.as_str(),
            Revision::Named(name) => name,
        }
    }
}

impl Default for Revision {
    /// `main`, the Hub's default branch.
    fn default() -> Revision {
        Revision::Named("main".to_owned())
    }
}

impl FromStr for Revision {
    type Err = ParseError;

    /// A commit id when the text is one, else a branch or tag name (git's ref rules, loosely:
    /// non-empty, no whitespace or control characters, no `..`, not starting with `-` or `/`).
    fn from_str(text: &str) -> Result<Revision, ParseError> {
        if let Ok(commit) = CommitId::from_str(text) {
            return Ok(Revision::Commit(commit));
        }
        let invalid = |why: &str| ParseError { text: text.to_owned(), what: "a revision", why: why.to_owned() };
        if text.is_empty() {
            return Err(invalid("empty (leave out `@` for `main`)"));
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid("whitespace and control characters are not allowed"));
        }
        if text.contains("..") || text.starts_with(['-', '/']) || text.ends_with('/') || text.contains("//") {
            return Err(invalid("not a branch or tag name"));
        }
        Ok(Revision::Named(text.to_owned()))
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CommitId {
    /// The 40 hexadecimal digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for CommitId {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<CommitId, ParseError> {
        if text.len() == 40 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            Ok(CommitId(text.to_owned()))
        } else {
            Err(ParseError {
                text: text.to_owned(),
                what: "a commit id",
                why: "expected 40 lowercase hexadecimal digits".to_owned(),
            })
        }
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_a_revision_is_a_hub_model() {
        let ModelSource::Hub(model) = ModelSource::parse("mlx-community/gemma-4-e2b-it-bf16@v1.0") else {
            panic!("expected a Hub model")
        };
        assert_eq!(model.repo.as_str(), "mlx-community/gemma-4-e2b-it-bf16");
        assert_eq!(model.revision, Revision::Named("v1.0".into()));
        let ModelSource::Hub(model) = ModelSource::parse("google/gemma-4-e2b") else { panic!("expected a Hub model") };
        assert_eq!(model.revision, Revision::Named("main".into()));
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let ModelSource::Hub(model) = ModelSource::parse(&format!("a/b@{commit}")) else { panic!() };
        assert_eq!(model.revision, Revision::Commit(CommitId::from_str(commit).unwrap()));
        assert_eq!(model.to_string(), format!("a/b@{commit}"));
    }

    #[test]
    fn an_existing_path_is_a_directory_even_when_it_looks_like_a_name() {
        let dir = std::env::temp_dir().join(format!("hub-source-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("org/name")).unwrap();
        let looks_like_a_name = dir.join("org/name");
        let source = ModelSource::parse(looks_like_a_name.to_str().unwrap());
        assert_eq!(source, ModelSource::Directory(looks_like_a_name));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn text_that_is_no_name_is_a_missing_directory() {
        for text in ["./models/x", "/nonexistent/gemma", "a/b/c", "x", "a/b@", "a--b/c", "a/.b", "a/b@x y", "a b/c"] {
            assert!(matches!(ModelSource::parse(text), ModelSource::Directory(_)), "{text}");
        }
    }

    #[test]
    fn invalid_parts_say_why() {
        let error = RepoId::from_str("org/na me").unwrap_err();
        assert!(error.to_string().contains("only ASCII letters"), "{error}");
        assert!(RepoId::from_str(&format!("o/{}", "n".repeat(97))).is_err());
        assert!(Revision::from_str("").unwrap_err().to_string().contains("empty"));
        assert!(CommitId::from_str("0123456789ABCDEF0123456789abcdef01234567").is_err());
        assert_eq!(Revision::from_str("refs/pr/1").unwrap(), Revision::Named("refs/pr/1".into()));
    }
}
