//! [`RepoListing`]: a revision's commit and files, from the Hub's
//! `/api/models/{repo}/revision/{revision}?blobs=true` route, and the URLs of its files.

use crate::client::Client;
use crate::error::Missing;
use crate::{CommitId, Error, HubModel, RepoId, Result};
use std::collections::BTreeMap;
use std::str::FromStr;

/// The most bytes a revision's listing may take (a repository of many thousand files).
const MAX_LISTING_BYTES: u64 = 64 << 20;

/// A revision as the Hub lists it: the commit it resolves to and every file it holds.
#[derive(Debug, Clone)]
pub struct RepoListing {
    pub commit: CommitId,
    /// Path in the repository → the file.
    pub files: BTreeMap<String, RepoFile>,
}

/// One file of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoFile {
    /// Its size in bytes, when the Hub gives it.
    pub size: Option<u64>,
    /// The SHA-256 of its content, for a file stored in LFS (the weights).
    pub lfs_sha256: Option<String>,
}

#[derive(serde::Deserialize)]
struct Listing {
    sha: String,
    #[serde(default)]
    siblings: Vec<Sibling>,
}

#[derive(serde::Deserialize)]
struct Sibling {
    rfilename: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    lfs: Option<Lfs>,
}

#[derive(serde::Deserialize)]
struct Lfs {
    sha256: String,
    #[serde(default)]
    size: Option<u64>,
}

impl RepoListing {
    /// Asks the Hub for `model`'s revision: one small request.
    pub fn fetch(client: &Client, model: &HubModel) -> Result<RepoListing> {
        let url = format!(
            "{}/api/models/{}/revision/{}?blobs=true",
            client.endpoint(),
            model.repo,
            encode(model.revision.as_str(), false)
        );
        let name = model.to_string();
        let bytes = client.get(&name, &url, None, Missing::Revision)?.read_all(&name, None, MAX_LISTING_BYTES)?;
        RepoListing::parse(&name, &url, &bytes)
    }

    /// A listing from the route's JSON.
    pub fn parse(model: &str, url: &str, bytes: &[u8]) -> Result<RepoListing> {
        let malformed = |detail: String| Error::Malformed { model: model.to_owned(), what: url.to_owned(), detail };
        let listing: Listing = serde_json::from_slice(bytes).map_err(|e| malformed(format!("not a revision: {e}")))?;
        let commit = CommitId::from_str(&listing.sha).map_err(|e| malformed(e.to_string()))?;
        let mut files = BTreeMap::new();
        for sibling in listing.siblings {
            if sibling.rfilename.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
                return Err(malformed(format!("`{}` is not a file path", sibling.rfilename)));
            }
            let size = sibling.lfs.as_ref().and_then(|l| l.size).or(sibling.size);
            let lfs_sha256 = sibling.lfs.map(|l| l.sha256.to_ascii_lowercase());
            if lfs_sha256.as_ref().is_some_and(|s| s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit())) {
                return Err(malformed(format!("`{}`: the LFS SHA-256 is not 64 hex digits", sibling.rfilename)));
            }
            files.insert(sibling.rfilename, RepoFile { size, lfs_sha256 });
        }
        Ok(RepoListing { commit, files })
    }
}

/// `{endpoint}/{repo}/resolve/{commit}/{path}`: a file at a commit.
pub fn file_url(endpoint: &str, repo: &RepoId, commit: &CommitId, path: &str) -> String {
    format!("{endpoint}/{repo}/resolve/{commit}/{}", encode(path, true))
}

/// Percent-encodes all but unreserved characters (and `/` when `keep_slash`), as Python's
/// `urllib.parse.quote` does for the Hub's clients.
fn encode(text: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) || (keep_slash && byte == b'/') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_parses_and_checks_its_paths() {
        let json = br#"{"sha":"0123456789abcdef0123456789abcdef01234567","siblings":[
            {"rfilename":"config.json","size":12},
            {"rfilename":"model.safetensors","size":134,"lfs":{"sha256":"AB01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01","size":100,"pointerSize":134}}]}"#;
        let listing = RepoListing::parse("m", "u", json).unwrap();
        assert_eq!(listing.files["config.json"], RepoFile { size: Some(12), lfs_sha256: None });
        let weights = &listing.files["model.safetensors"];
        assert_eq!(weights.size, Some(100), "the LFS size is the content's");
        assert!(weights.lfs_sha256.as_ref().unwrap().starts_with("ab01"));
        for bad in [
            &br#"{"sha":"x"}"#[..],
            br#"{"sha":"0123456789abcdef0123456789abcdef01234567","siblings":[{"rfilename":"../x"}]}"#,
            br#"[1]"#,
        ] {
            assert!(matches!(RepoListing::parse("m", "u", bad), Err(Error::Malformed { .. })));
        }
    }

    #[test]
    fn paths_and_revisions_are_encoded() {
        assert_eq!(encode("refs/pr/1", false), "refs%2Fpr%2F1");
        assert_eq!(encode("sub dir/a+b.json", true), "sub%20dir/a%2Bb.json");
    }
}
