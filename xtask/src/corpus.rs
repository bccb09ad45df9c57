//! Pillow's test images (`Tests/images` of its source distribution: every format it reads,
//! broken and hostile files), unpacked by `cargo xtask setup` into
//! `.deps/corpus/pillow-<version>/Tests/images`: the files of the corpus rows of
//! `cargo xtask parity preprocess` and the seeds of the decode fuzz targets.
//!
//! The sdist is fetched with the venv's pip (`pip download --no-deps --no-binary :all:`), its
//! SHA-256 checked against the pinned one, and only `Tests/images` unpacked (with `tar`), into a
//! scratch directory renamed into place once its content digest ([`tree_sha256`]) is the pinned
//! one. A stamp beside it records what was unpacked, so a second run costs nothing; a directory
//! already there without a stamp (unpacked by hand) is kept when its content digest is the pinned
//! one, and replaced otherwise.

use crate::stamp::{stamp_matches, write_stamp};
use project::{Result, cmd, deps, python, run};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Which Pillow source distribution the corpus comes from, and what it must hash to.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The release, as in `pillow==<version>` and the sdist's top directory `pillow-<version>`.
    pub version: &'a str,
    /// SHA-256 of `pillow-<version>.tar.gz` (PyPI's digest of the file).
    pub sdist_sha256: &'a str,
    /// [`tree_sha256`] of its `Tests/images`.
    pub images_sha256: &'a str,
}

/// Pillow 13.0.0, the release the reference runs on.
pub const PILLOW: Source<'static> = Source {
    version: "13.0.0",
    sdist_sha256: "cdcd1ba258178f7356d74170c9a81ba4eab6a5d55748bc402a5a2a6fe6be3510",
    images_sha256: "66b285fb3bd85444cfe9241fa6feeeeda3770afc1cf97c1bccdb4002a1ffc082",
};

impl Source<'_> {
    /// What the stamp records.
    fn recipe(&self) -> String {
        format!(
            "pillow {} sdist sha256 {}\nTests/images sha256 {}\n",
            self.version, self.sdist_sha256, self.images_sha256
        )
    }

    /// The sdist's top directory, `pillow-<version>`.
    fn top(&self) -> String {
        format!("pillow-{}", self.version)
    }
}

/// `.deps/corpus/pillow-<version>/Tests/images` of [`PILLOW`].
pub fn images() -> PathBuf {
    images_in(&deps().join("corpus"), &PILLOW)
}

fn images_in(corpus_dir: &Path, source: &Source) -> PathBuf {
    corpus_dir.join(source.top()).join("Tests/images")
}

/// Makes `<corpus_dir>/pillow-<version>/Tests/images` hold `source`'s test images, fetching the
/// sdist with the venv's pip when they are not there yet; returns that directory.
pub fn ensure(corpus_dir: &Path, source: &Source) -> Result<PathBuf> {
    ensure_with(corpus_dir, source, |into| pip_download(source, into))
}

/// [`ensure`] with the download step given: `download(dir)` puts the sdist into `dir` and
/// returns its path.
fn ensure_with(corpus_dir: &Path, source: &Source, download: impl FnOnce(&Path) -> Result<PathBuf>) -> Result<PathBuf> {
    let root = corpus_dir.join(source.top());
    let images = images_in(corpus_dir, source);
    let recipe = source.recipe();
    if stamp_matches(&root, &recipe) && images.is_dir() {
        return Ok(images);
    }
    if images.is_dir() && tree_sha256(&images)? == source.images_sha256 {
        write_stamp(&root, &recipe)?;
        return Ok(images);
    }
    eprintln!("setup: fetching Pillow {}'s sdist for its test images (.deps/corpus)", source.version);
    let download_dir = fresh_dir(&corpus_dir.join(".download"))?;
    let sdist = download(&download_dir)?;
    let digest = file_sha256(&sdist)?;
    if digest != source.sdist_sha256 {
        return Err(format!("{}: sha256 {digest}, expected {}", sdist.display(), source.sdist_sha256));
    }
    let unpack_dir = fresh_dir(&corpus_dir.join(".unpack"))?;
    let member = format!("{}/Tests/images", source.top());
    run(cmd("tar", &["-xzf"]).arg(&sdist).arg("-C").arg(&unpack_dir).arg(&member))?;
    let unpacked = unpack_dir.join(&member);
    let digest = tree_sha256(&unpacked)?;
    if digest != source.images_sha256 {
        return Err(format!("{member} of the sdist: content sha256 {digest}, expected {}", source.images_sha256));
    }
    if images.exists() {
        fs::remove_dir_all(&images).map_err(|e| format!("replacing {}: {e}", images.display()))?;
    }
    let parent = images.parent().ok_or("the images directory has a parent")?;
    fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    fs::rename(&unpacked, &images).map_err(|e| format!("moving the test images into {}: {e}", images.display()))?;
    let _ = fs::remove_dir_all(&unpack_dir);
    let _ = fs::remove_dir_all(&download_dir);
    write_stamp(&root, &recipe)?;
    Ok(images)
}

/// `pip download --no-deps --no-binary :all: pillow==<version> -d <into>` with the venv's pip;
/// the `.tar.gz` it saved.
fn pip_download(source: &Source, into: &Path) -> Result<PathBuf> {
    let requirement = format!("pillow=={}", source.version);
    let mut pip = cmd(python(), &["-m", "pip", "download", "--disable-pip-version-check", "--no-deps"]);
    pip.args(["--no-binary", ":all:", &requirement, "-d"]).arg(into);
    run(pip)?;
    let sdist = into.join(format!("{}.tar.gz", source.top()));
    if sdist.is_file() { Ok(sdist) } else { Err(format!("pip saved no {}", sdist.display())) }
}

/// An empty directory at `dir` (removed first when there).
pub(crate) fn fresh_dir(dir: &Path) -> Result<PathBuf> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    }
    fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    Ok(dir.to_path_buf())
}

/// SHA-256 of a file, lowercase hex.
pub(crate) fn file_sha256(path: &Path) -> Result<String> {
    let mut file = fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer).map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(buffer.get(..n).unwrap_or_default());
    }
    Ok(hex(&hasher.finalize()))
}

/// The content digest of a directory tree: SHA-256 over its files in the order of their
/// `/`-separated relative paths, each as its path, a NUL, its length (8 bytes, little-endian)
/// and its bytes. Directories count only through their files; modes and times not at all.
pub fn tree_sha256(dir: &Path) -> Result<String> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = fs::read_dir(&current).map_err(|e| format!("{}: {e}", current.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", current.display()))?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).map_err(|e| e.to_string())?;
                let name: Vec<String> =
                    relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
                files.push((name.join("/"), path));
            }
        }
    }
    files.sort();
    let mut hasher = Sha256::new();
    for (name, path) in files {
        let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory for one test, empty.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-corpus-{}-{name}", std::process::id()));
        fresh_dir(&dir).unwrap()
    }

    /// A tiny sdist `pillow-0.0.0.tar.gz` with two test images and a file beside them.
    fn tiny_sdist(dir: &Path) -> PathBuf {
        let tree = dir.join("tree/pillow-0.0.0");
        fs::create_dir_all(tree.join("Tests/images/sub")).unwrap();
        fs::write(tree.join("Tests/images/a.png"), b"not really a png").unwrap();
        fs::write(tree.join("Tests/images/sub/b.gif"), b"GIF89a").unwrap();
        fs::write(tree.join("setup.py"), b"# not unpacked").unwrap();
        let sdist = dir.join("pillow-0.0.0.tar.gz");
        run(cmd("tar", &["-czf"]).arg(&sdist).arg("-C").arg(dir.join("tree")).arg("pillow-0.0.0")).unwrap();
        sdist
    }

    fn source_of(sdist_sha256: &str, images_sha256: &str) -> Source<'static> {
        Source {
            version: "0.0.0",
            sdist_sha256: Box::leak(sdist_sha256.to_owned().into_boxed_str()),
            images_sha256: Box::leak(images_sha256.to_owned().into_boxed_str()),
        }
    }

    fn copy_to(sdist: &Path) -> impl FnOnce(&Path) -> Result<PathBuf> + '_ {
        move |into| {
            let target = into.join("pillow-0.0.0.tar.gz");
            fs::copy(sdist, &target).map_err(|e| e.to_string())?;
            Ok(target)
        }
    }

    #[test]
    fn unpacks_only_the_test_images_then_reuses_them() {
        let dir = scratch("unpack");
        let sdist = tiny_sdist(&dir);
        let images_sha = tree_sha256(&dir.join("tree/pillow-0.0.0/Tests/images")).unwrap();
        let source = source_of(&file_sha256(&sdist).unwrap(), &images_sha);
        let corpus = dir.join("corpus");
        let images = ensure_with(&corpus, &source, copy_to(&sdist)).unwrap();
        assert_eq!(images, corpus.join("pillow-0.0.0/Tests/images"));
        assert_eq!(fs::read(images.join("sub/b.gif")).unwrap(), b"GIF89a");
        assert!(!corpus.join("pillow-0.0.0/setup.py").exists());
        assert!(!corpus.join(".download").exists() && !corpus.join(".unpack").exists());
        // Stamped: a second run downloads nothing.
        let again = ensure_with(&corpus, &source, |_| Err("downloaded again".to_owned())).unwrap();
        assert_eq!(again, images);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn keeps_an_unstamped_directory_with_the_pinned_content() {
        let dir = scratch("adopt");
        let sdist = tiny_sdist(&dir);
        let by_hand = dir.join("corpus/pillow-0.0.0");
        fs::create_dir_all(&by_hand).unwrap();
        run(cmd("cp", &["-r"]).arg(dir.join("tree/pillow-0.0.0/Tests")).arg(&by_hand)).unwrap();
        let images_sha = tree_sha256(&by_hand.join("Tests/images")).unwrap();
        let source = source_of(&file_sha256(&sdist).unwrap(), &images_sha);
        let images = ensure_with(&dir.join("corpus"), &source, |_| Err("downloaded".to_owned())).unwrap();
        assert!(images.join("a.png").is_file());
        assert!(stamp_matches(&by_hand, &source.recipe()));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn replaces_a_directory_with_other_content_and_refuses_a_wrong_sdist() {
        let dir = scratch("replace");
        let sdist = tiny_sdist(&dir);
        let images_sha = tree_sha256(&dir.join("tree/pillow-0.0.0/Tests/images")).unwrap();
        let corpus = dir.join("corpus");
        let stale = corpus.join("pillow-0.0.0/Tests/images");
        fs::create_dir_all(&stale).unwrap();
        fs::write(stale.join("a.png"), b"changed").unwrap();
        let wrong = source_of(&"0".repeat(64), &images_sha);
        let error = ensure_with(&corpus, &wrong, copy_to(&sdist)).unwrap_err();
        assert!(error.contains("expected 0000"), "{error}");
        let source = source_of(&file_sha256(&sdist).unwrap(), &images_sha);
        let images = ensure_with(&corpus, &source, copy_to(&sdist)).unwrap();
        assert_eq!(fs::read(images.join("a.png")).unwrap(), b"not really a png");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The real thing, into a scratch directory: pip fetches the 47 MB sdist from PyPI (needs
    /// the network and the venv: `cargo test -p xtask -- --ignored`).
    #[test]
    #[ignore]
    fn fetches_pillows_sdist_and_unpacks_its_test_images() {
        let dir = scratch("pypi");
        let images = ensure(&dir, &PILLOW).unwrap();
        assert_eq!(images, dir.join("pillow-13.0.0/Tests/images"));
        assert_eq!(tree_sha256(&images).unwrap(), PILLOW.images_sha256);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_tree_digest_covers_names_and_bytes() {
        let dir = scratch("digest");
        fs::write(dir.join("a"), b"1").unwrap();
        let one = tree_sha256(&dir).unwrap();
        fs::write(dir.join("a"), b"2").unwrap();
        let two = tree_sha256(&dir).unwrap();
        fs::rename(dir.join("a"), dir.join("b")).unwrap();
        let renamed = tree_sha256(&dir).unwrap();
        assert!(one != two && two != renamed);
        fs::remove_dir_all(&dir).unwrap();
    }
}
