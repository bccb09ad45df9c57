//! Which images a job embeds: a directory, a glob pattern, or a list file.

use crate::error::{Error, Result, is_pattern};
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// File extensions (lower case) a directory search picks up: the formats `preprocess` decodes.
pub const IMAGE_EXTENSIONS: [&str; 8] = ["jpg", "jpeg", "png", "gif", "webp", "bmp", "tif", "tiff"];

/// The images named by `source`, each once, in a stable order:
/// - an existing directory: every file below it (recursively, symbolic links followed) whose
///   extension is in [`IMAGE_EXTENSIONS`] (any case), sorted by path;
/// - an existing file ending in `.txt`: one path per line, in the file's order; blank lines and
///   lines starting with `#` are skipped; relative paths are taken from the list's directory;
/// - otherwise a glob pattern (`*`, `?`, `[…]`, `**` for any depth) over files, sorted by path.
///
/// Paths are kept as listed or as found below the directory or pattern: they are the keys
/// under which the output records each image. Fails ([`Error::Source`]) when the source names
/// no image or is none of the three.
pub fn list_images(source: &Path) -> Result<Vec<PathBuf>> {
    let paths = if source.is_dir() {
        let mut found = Vec::new();
        walk(source, &mut found)?;
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

/// Appends the image files below `dir`.
fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let entries = fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_dir() {
            walk(&path, found)?;
        } else if is_image_name(&path) && path.is_file() {
            found.push(path);
        }
    }
    Ok(())
}

fn is_image_name(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| IMAGE_EXTENSIONS.iter().any(|known| ext.eq_ignore_ascii_case(known)))
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
    fn a_directory_gives_its_image_files_recursively_sorted() {
        let dir = scratch("dir");
        let names: Vec<PathBuf> =
            list_images(&dir).unwrap().iter().map(|p| p.strip_prefix(&dir).unwrap().into()).collect();
        assert_eq!(names, ["a.JPG", "b.png", "sub/c.webp", "sub/deeper/d.jpeg"].map(PathBuf::from));
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
