//! Helpers for the tests of this crate and the crates above it (feature `testing`).

use std::path::{Path, PathBuf};

/// A fresh, empty directory under the system's temporary directory, removed with everything in
/// it when dropped (whether the test passed or panicked), so test runs leave nothing behind.
/// Dereferences to its [`Path`].
#[derive(Debug)]
pub struct TestDir(PathBuf);

impl TestDir {
    /// `<tmp>/<name>-<pid>`, emptied if a previous run of this process id left it.
    ///
    /// # Panics
    /// If the directory cannot be created (a test helper: the test fails there).
    pub fn new(name: &str) -> TestDir {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        TestDir(dir)
    }
}

impl std::ops::Deref for TestDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::TestDir;

    #[test]
    fn the_directory_and_its_contents_go_when_dropped() {
        let dir = TestDir::new("tensor-testing-drop");
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("a/b/c.txt"), b"x").unwrap();
        let path = dir.to_path_buf();
        assert!(path.join("a/b/c.txt").is_file());
        drop(dir);
        assert!(!path.exists());
    }
}
