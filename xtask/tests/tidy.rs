//! Repository hygiene, checked on every `cargo xtask test` (as rust-analyzer's `tidy.rs` does):
//! no build output is tracked, every source file opens with a module doc, no source file is
//! over [`MAX_LINES`] lines unless listed in [`LONG_FILES`], and no text file has trailing
//! whitespace; the xtask help names every command and ARCHITECTURE.md every crate and top-level
//! module. Reads the files git tracks (`git ls-files`), so untracked scratch is ignored.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The length, in lines, above which a source file must be split (or listed below).
const MAX_LINES: usize = 500;

/// Source files allowed over [`MAX_LINES`], each with its reason.
const LONG_FILES: &[(&str, &str)] = &[
    ("crates/preprocess/src/resize/avx2.rs", "SIMD: the two passes of the resize on 32 lanes, kept in one file"),
    ("crates/preprocess/src/decode/bcn.rs", "BcnDecode.c's block formats, BC6H's and BC7's mode tables with them"),
    ("crates/preprocess/src/decode/ppm.rs", "PpmImagePlugin's raw, scaled and plain decoders and their header parser"),
];

/// Extensions of files read as text for the whitespace check.
const TEXT: &[&str] =
    &["rs", "py", "pyi", "toml", "md", "txt", "sh", "json", "yml", "yaml", "cpp", "h", "cfg", "gitignore", "in", "out"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives one level below the root").to_path_buf()
}

fn tracked_files() -> Vec<String> {
    let out = Command::new("git").args(["ls-files", "-z"]).current_dir(root()).output().expect("git runs");
    assert!(out.status.success(), "git ls-files: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .expect("paths are UTF-8")
        .split('\0')
        .filter(|p| !p.is_empty() && root().join(p).is_file())
        .map(str::to_owned)
        .collect()
}

fn extension(path: &str) -> &str {
    Path::new(path).extension().and_then(|e| e.to_str()).unwrap_or_else(|| path.rsplit('.').next().unwrap_or(""))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Whether `path` is build output that must never be tracked.
fn is_build_output(path: &str) -> bool {
    let components: Vec<&str> = path.split('/').collect();
    components.iter().any(|c| matches!(*c, "target" | "__pycache__" | ".deps"))
        || [".profraw", ".pyc", ".o", ".so", ".whl"].iter().any(|ext| path.ends_with(ext))
}

#[test]
fn no_build_output_is_tracked() {
    let tracked: Vec<String> = tracked_files().into_iter().filter(|p| is_build_output(p)).collect();
    assert!(
        tracked.is_empty(),
        "build output is tracked (untrack it; .gitignore ignores target/):\n{}",
        tracked.join("\n")
    );
}

#[test]
fn every_source_file_opens_with_a_module_doc() {
    let missing: Vec<String> = tracked_files()
        .into_iter()
        .filter(|p| match extension(p) {
            "rs" => !read(p).starts_with("//!"),
            "py" => {
                let text = read(p);
                let body =
                    text.strip_prefix("#!").map_or(text.as_str(), |rest| rest.split_once('\n').map_or("", |x| x.1));
                !body.starts_with("\"\"\"")
            }
            _ => false,
        })
        .collect();
    assert!(missing.is_empty(), "files without a module doc (`//!` / a docstring) first:\n{}", missing.join("\n"));
}

#[test]
fn no_source_file_is_over_the_length_limit() {
    let long: Vec<String> = tracked_files()
        .into_iter()
        .filter(|p| matches!(extension(p), "rs" | "py"))
        .filter(|p| !LONG_FILES.iter().any(|(allowed, _)| allowed == p))
        .filter_map(|p| {
            let lines = read(&p).lines().count();
            (lines > MAX_LINES).then(|| format!("{p}: {lines} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them, or list them in LONG_FILES with a reason):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_long_files_listed_exist_and_are_long() {
    for (path, reason) in LONG_FILES {
        let lines = read(path).lines().count();
        assert!(lines > MAX_LINES, "{path} ({reason}) has {lines} lines: remove it from LONG_FILES");
    }
}

#[test]
fn no_text_file_has_trailing_whitespace() {
    let mut offending = Vec::new();
    for path in tracked_files().into_iter().filter(|p| TEXT.contains(&extension(p))) {
        let Ok(text) = std::fs::read_to_string(root().join(&path)) else { continue };
        for (i, line) in text.lines().enumerate() {
            if line.ends_with([' ', '\t']) {
                offending.push(format!("{path}:{}", i + 1));
            }
        }
    }
    assert!(offending.is_empty(), "trailing whitespace:\n{}", offending.join("\n"));
}

#[test]
fn build_output_is_recognised() {
    assert!(is_build_output("crates/tensor/target/lead/criterion/x/base/estimates.json"));
    assert!(is_build_output("target/release/gemma-vision"));
    assert!(is_build_output("crates/python/python/gemma_vision/__pycache__/x.cpython-311.pyc"));
    assert!(!is_build_output("crates/preprocess/src/target_size.rs"));
    assert!(!is_build_output("crates/preprocess/tests/target_size.rs"));
}

/// The commands `xtask/src/main.rs` dispatches: the string patterns of its `match command`
/// arms, read from the source, so a new arm is seen without editing this test.
fn dispatched_commands() -> Vec<String> {
    let main = read("xtask/src/main.rs");
    let start = main.find("match command {").expect("xtask/src/main.rs dispatches with `match command {`");
    let body = &main[start..];
    let body = &body[..body.find("\n    };").expect("the dispatch ends with `    };`")];
    let mut commands = Vec::new();
    for arm in body.lines().filter_map(|line| line.split_once("=>").map(|(patterns, _)| patterns)) {
        for pattern in arm.split('|').map(str::trim).filter(|p| p.starts_with('"')) {
            commands.push(pattern.trim_matches('"').to_owned());
        }
    }
    commands.retain(|c| !matches!(c.as_str(), "help" | "--help" | "-h"));
    assert!(commands.len() > 5, "read too few commands from xtask/src/main.rs: {commands:?}");
    commands
}

#[test]
fn the_xtask_help_names_every_command() {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask")).arg("help").output().expect("xtask runs");
    let help = String::from_utf8(out.stdout).expect("UTF-8 help");
    let listed: Vec<&str> =
        help.lines().filter_map(|line| line.strip_prefix("  ")?.split_whitespace().next()).collect();
    let missing: Vec<String> = dispatched_commands().into_iter().filter(|c| !listed.contains(&c.as_str())).collect();
    assert!(
        missing.is_empty(),
        "`cargo xtask help` does not list {missing:?}: add a line `  <command> …` with what it does to HELP in \
         xtask/src/main.rs"
    );
}

/// The section of ARCHITECTURE.md about `krate`: from its bullet ``- **`krate`**`` to the next
/// crate's bullet.
fn architecture_section<'a>(architecture: &'a str, krate: &str) -> Option<&'a str> {
    let start = architecture.find(&format!("- **`{krate}`**"))?;
    let rest = &architecture[start + 1..];
    Some(&rest[..rest.find("\n- **`").unwrap_or(rest.len())])
}

/// `(crate name, its directory)` for every crate under `crates/`, and the tooling's: xtask, the
/// `project` it stands on, and `bench` (the bench suites; `bench/encode` is one `main.rs`).
fn crates() -> Vec<(String, PathBuf)> {
    let mut crates: Vec<(String, PathBuf)> = std::fs::read_dir(root().join("crates"))
        .expect("crates/ is listed")
        .map(|entry| entry.expect("crates/ entry").path())
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .map(|dir| (dir.file_name().expect("a name").to_string_lossy().into_owned(), dir))
        .collect();
    crates.push(("xtask".to_owned(), root().join("xtask")));
    crates.push(("project".to_owned(), root().join("xtask/project")));
    crates.push(("bench".to_owned(), root().join("bench")));
    crates.sort();
    crates
}

#[test]
fn the_architecture_names_every_crate_and_top_level_module() {
    let architecture = read("ARCHITECTURE.md");
    let mut missing = Vec::new();
    for (krate, dir) in crates() {
        let Some(section) = architecture_section(&architecture, &krate) else {
            missing.push(format!("the crate `{krate}` (a bullet ``- **`{krate}`**: …`` in the layering)"));
            continue;
        };
        let mut modules: Vec<String> = std::fs::read_dir(dir.join("src"))
            .expect("src/ is listed")
            .map(|entry| entry.expect("src/ entry").path())
            .filter_map(|path| {
                let name = path.file_name()?.to_string_lossy().into_owned();
                match path.is_dir() {
                    true => Some(format!("{name}/")),
                    false => name.ends_with(".rs").then_some(name),
                }
            })
            .filter(|name| !matches!(name.as_str(), "lib.rs" | "main.rs"))
            .collect();
        modules.sort();
        for module in modules {
            let named = [format!("`{module}"), format!("`src/{module}")];
            if !named.iter().any(|n| section.contains(n.as_str())) {
                missing.push(format!("`{krate}`'s module `{module}` (name it in the crate's bullet: what it holds)"));
            }
        }
    }
    assert!(missing.is_empty(), "ARCHITECTURE.md does not name:\n  {}", missing.join("\n  "));
}
