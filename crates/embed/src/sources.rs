//! Which images a job embeds: a directory, a glob pattern, or a list file.

use crate::error::{Error, Result, is_pattern};
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The images named by `source`, each once, in a stable order:
/// - an existing directory: every regular file below it (recursively, symbolic links followed,
///   each directory once), sorted by path, except hidden ones (a name starting with `.`, and
///   everything below a hidden directory: `.git`, `.DS_Store`, macOS's `._*` companions);
/// - an existing file ending in `.txt`: one path per line, in the file's order; blank lines and
///   lines starting with `#` are skipped; relative paths are taken from the list's directory;
/// - otherwise a glob pattern (`*`, `?`, `[…]`, `**` for any depth) over files, sorted by path.
///
/// A directory's files are not filtered by extension: the reference (`Image.open`) identifies
/// an image by its bytes, never its name, so a PNG named `.jpg` or an image without an
/// extension is an image, and a folder holds formats no extension list keeps up with (`.tga`,
/// `.dds`, `.ico`, `.ppm`, `.qoi`, `.psd`, …). Each listed file is sniffed by `preprocess`
/// from its first bytes: one that is not an image, or of a format not read, costs one read and
/// one recorded line in the errors file naming why, rather than being skipped without a trace.
///
/// Paths are kept as listed or as found below the directory or pattern: they are the keys
/// under which the output records each image. Fails ([`Error::Source`]) when the source names
/// no file or is none of the three.
pub fn list_images(source: &Path) -> Result<Vec<PathBuf>> {
    let paths = if source.is_dir() {
        let mut found = Vec::new();
        walk(source, &mut HashSet::new(), &mut found)?;
        found.sort();
        found
    } else if source.is_file() {
        if source.extension().is_none_or(|ext| !ext.eq_ignore_ascii_case("txt")) {
            return Err(Error::source(source, "not a directory, a glob pattern or a list of paths in a .txt file"));
        }
        read_list(source)?
    } else {
        if !is_pattern(source) {
            return Err(Error::source(source, "no such file or directory"));
        }
        let pattern = source.to_str().ok_or_else(|| Error::source(source, "not a UTF-8 pattern"))?;
        let mut found = Vec::new();
        for entry in glob::glob(pattern).map_err(|e| Error::source(source, format!("bad glob pattern: {e}")))? {
            let path = entry.map_err(|e| Error::source(e.path(), e.error().to_string()))?;
            if path.is_file() {
                found.push(path);
            }
        }
        found.sort();
        found
    };
    let mut seen = HashSet::new();
    let unique: Vec<PathBuf> = paths.into_iter().filter(|p| seen.insert(p.clone())).collect();
    if unique.is_empty() {
        return Err(Error::source(source, "no images"));
    }
    Ok(unique)
}

/// Appends the files below `dir`, not hidden, each directory visited once (`visited`: the
/// canonical directories seen, so that a symbolic link to an ancestor does not loop).
fn walk(dir: &Path, visited: &mut HashSet<PathBuf>, found: &mut Vec<PathBuf>) -> Result<()> {
    let canonical = fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
    if !visited.insert(canonical) {
        return Ok(());
    }
    let entries = fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry.file_name().as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            walk(&path, visited, found)?;
        } else if path.is_file() {
            found.push(path);
        }
    }
    Ok(())
}

fn read_list(list: &Path) -> Result<Vec<PathBuf>> {
    let text = fs::read_to_string(list).map_err(|e| Error::io(list, e))?;
    let base = list.parent().unwrap_or(Path::new(""));
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| base.join(line))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensor::testing::TestDir;

    fn scratch(name: &str) -> TestDir {
        let dir = TestDir::new(&format!("embed-sources-{name}"));
        fs::create_dir_all(dir.join("sub/deeper")).unwrap();
        for file in ["b.png", "a.JPG", "notes.md", "sub/c.webp", "sub/deeper/d.jpeg", "sub/e.txt"] {
            fs::write(dir.join(file), b"x").unwrap();
        }
        dir
    }

    #[test]
    fn a_directory_gives_its_files_not_hidden_recursively_sorted_whatever_their_extension() {
        let dir = scratch("dir");
        fs::create_dir_all(dir.join(".hidden")).unwrap();
        for hidden in [".DS_Store", ".hidden/f.png", "sub/._c.webp"] {
            fs::write(dir.join(hidden), b"x").unwrap();
        }
        let names: Vec<PathBuf> =
            list_images(&dir).unwrap().iter().map(|p| p.strip_prefix(&dir).unwrap().into()).collect();
        let expected = ["a.JPG", "b.png", "notes.md", "sub/c.webp", "sub/deeper/d.jpeg", "sub/e.txt"];
        assert_eq!(names, expected.map(PathBuf::from));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_to_an_ancestor_directory_is_followed_once() {
        let dir = scratch("loop");
        std::os::unix::fs::symlink(&*dir, dir.join("sub/up")).unwrap();
        let names: Vec<PathBuf> =
            list_images(&dir).unwrap().iter().map(|p| p.strip_prefix(&dir).unwrap().into()).collect();
        assert_eq!(names.len(), 6, "{names:?}");
    }

    #[test]
    fn a_glob_matches_files_sorted() {
        let dir = scratch("glob");
        let pattern = dir.join("**/*.[pw]*");
        let found = list_images(&pattern).unwrap();
        assert_eq!(found, [dir.join("b.png"), dir.join("sub/c.webp")]);
        assert!(list_images(&dir.join("*.gif")).unwrap_err().to_string().ends_with("no images"));
    }

    #[test]
    fn a_list_keeps_its_order_resolves_relative_paths_and_drops_duplicates() {
        let dir = scratch("list");
        fs::write(dir.join("list.txt"), "# corpus\nsub/c.webp\n\n  b.png  \n/abs/x.png\nsub/c.webp\n").unwrap();
        let found = list_images(&dir.join("list.txt")).unwrap();
        assert_eq!(found, [dir.join("sub/c.webp"), dir.join("b.png"), PathBuf::from("/abs/x.png")]);
    }

    #[test]
    fn other_sources_are_refused_with_their_name() {
        let dir = scratch("refused");
        let missing = dir.join("missing");
        let error = list_images(&missing).unwrap_err();
        assert_eq!(error.to_string(), format!("{}: no such file or directory", missing.display()));
        assert_eq!(error.kind(), vision::ErrorKind::NotFound);
        let error = list_images(&dir.join("notes.md")).unwrap_err();
        assert!(error.to_string().contains("not a directory, a glob pattern or a list"), "{error}");
        assert_eq!(error.kind(), vision::ErrorKind::Invalid);
    }
}
