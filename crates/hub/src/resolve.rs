//! [`resolve`]: a [`ModelSource`] to a checkpoint folder on this machine, with no network when
//! none is needed.

use crate::client::Client;
use crate::fetch::Fetch;
use crate::hf_cache::HfCache;
use crate::repo_listing::RepoListing;
use crate::store::{Manifest, Store};
use crate::{CommitId, Error, HubEnvironment, HubModel, ModelSource, RepoId, Result, Revision, Selection};
use std::fmt;
use std::path::PathBuf;

/// A model found on this machine: the folder to load, and where it came from.
#[derive(Debug, Clone)]
pub struct ResolvedModel {
    pub dir: PathBuf,
    pub origin: Origin,
}

/// Where a resolved model's folder came from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A directory the user named.
    Directory,
    /// A complete snapshot in the Hugging Face cache (as mlx-vlm leaves it), used in place.
    HfCache { repo: RepoId, commit: CommitId },
    /// A vision-only checkpoint this crate fetched, now or before.
    Store { repo: RepoId, commit: CommitId, manifest: Box<Manifest>, fetched_now: bool },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Directory => f.write_str("a local directory"),
            Origin::HfCache { repo, commit } => write!(f, "{repo}@{commit} from the Hugging Face cache"),
            Origin::Store { repo, commit, manifest, .. } => write!(
                f,
                "{repo}@{commit}, vision-only: {} of the checkpoint's {} bytes fetched",
                manifest.fetched_bytes, manifest.checkpoint_bytes
            ),
        }
    }
}

/// Finds `source` on this machine, fetching what `selection` names when it is not there,
/// with the settings of this process's environment ([`HubEnvironment::from_env`]).
pub fn resolve(source: &ModelSource, selection: &Selection) -> Result<ResolvedModel> {
    match source {
        ModelSource::Directory(dir) => Ok(ResolvedModel { dir: dir.clone(), origin: Origin::Directory }),
        ModelSource::Hub(model) => resolve_hub(model, selection, &HubEnvironment::from_env()?),
    }
}

/// Finds a Hub model on this machine, in this order, else fetches it:
/// 1. the revision's commit: a commit as given (no network); a branch or tag from the Hub (one
///    small metadata request), or, offline or when the Hub cannot be reached, from the refs the
///    Hugging Face cache or the store recorded;
/// 2. a complete snapshot of that commit in the Hugging Face cache, used in place;
/// 3. what this crate fetched before for that commit (the [`Store`]);
/// 4. unless offline: only the selection, fetched into the store.
pub fn resolve_hub(model: &HubModel, selection: &Selection, environment: &HubEnvironment) -> Result<ResolvedModel> {
    let name = model.to_string();
    let hf_cache = HfCache::new(&environment.hf_cache);
    let store = Store::new(&environment.store);
    let client = Client::new(environment);
    let repo = &model.repo;
    let cached_commit = |revision: &str| hf_cache.commit_of(repo, revision).or_else(|| store.commit_of(repo, revision));
    let mut listing = None;
    let commit = match &model.revision {
        Revision::Commit(commit) => commit.clone(),
        Revision::Named(revision) if environment.offline => cached_commit(revision).ok_or_else(|| Error::Offline {
            model: name.clone(),
            detail: format!("neither the Hugging Face cache nor the store knows which commit `{revision}` is"),
        })?,
        Revision::Named(revision) => match RepoListing::fetch(&client, model) {
            Ok(found) => {
                let commit = found.commit.clone();
                listing = Some(found);
                commit
            }
            Err(error @ Error::Network { .. }) => cached_commit(revision).ok_or(error)?,
            Err(error) => return Err(error),
        },
    };
    let named = match &model.revision {
        Revision::Named(revision) if listing.is_some() => Some(revision.as_str()),
        _ => None,
    };
    if let Some(dir) = hf_cache.complete_snapshot(repo, &commit, selection, listing.as_ref()) {
        return Ok(ResolvedModel { dir, origin: Origin::HfCache { repo: repo.clone(), commit } });
    }
    if let Some((dir, manifest)) = store.complete(repo, &commit) {
        if let Some(revision) = named {
            store.set_ref(repo, revision, &commit)?;
        }
        let origin = Origin::Store { repo: repo.clone(), commit, manifest: Box::new(manifest), fetched_now: false };
        return Ok(ResolvedModel { dir, origin });
    }
    if environment.offline {
        return Err(Error::Offline {
            model: name,
            detail: format!(
                "commit {commit} is neither complete in the Hugging Face cache ({}) nor in the store ({})",
                hf_cache.repo_dir(repo).display(),
                environment.store.display()
            ),
        });
    }
    let listing = match listing {
        Some(listing) => listing,
        None => {
            let pinned = HubModel::new(repo.clone(), Revision::Commit(commit.clone()));
            let found = RepoListing::fetch(&client, &pinned).map_err(|e| rename(e, &name))?;
            if found.commit != commit {
                return Err(Error::Malformed {
                    model: name,
                    what: "the revision's listing".into(),
                    detail: format!("asked for commit {commit}, the Hub listed {}", found.commit),
                });
            }
            found
        }
    };
    let (dir, manifest) = Fetch::new(&client, environment, model, &commit, &listing, selection).run()?;
    if let Some(revision) = named {
        store.set_ref(repo, revision, &commit)?;
    }
    let origin = Origin::Store { repo: repo.clone(), commit, manifest: Box::new(manifest), fetched_now: true };
    Ok(ResolvedModel { dir, origin })
}

/// An error about a request made for `model` under another spelling, renamed to it.
fn rename(error: Error, model: &str) -> Error {
    match error {
        Error::Unauthorized { status, token_sent, .. } => {
            Error::Unauthorized { model: model.to_owned(), status, token_sent }
        }
        Error::NotFound { missing, .. } => Error::NotFound { model: model.to_owned(), missing },
        Error::Network { url, detail, .. } => Error::Network { model: model.to_owned(), url, detail },
        other => other,
    }
}
