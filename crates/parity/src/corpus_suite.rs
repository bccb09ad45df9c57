//! The corpus rows of `cargo xtask parity preprocess`: every file of Pillow's test images
//! (`Tests/images` of Pillow 13.0.0's sdist: every format, broken and hostile files), then the
//! fuzz files of Pillow's repository that the sdist leaves out
//! (`crates/preprocess/tests/fixtures/pillow_repo/crash-*`), through [`preprocess::decode`],
//! against what mlx-vlm's `load_image` made of each (`crates/parity/python/corpus.py`, which
//! writes `<dir>/corpus/manifest.json` and `<dir>/corpus_repo/manifest.json`).
//!
//! One row per file, in one of six classes ([`Class`]); `exact`, `refused`, `GAP` and `READ`
//! rows pass, `differ` and `crashed` rows fail. Each set of rows ends with its line, e.g.
//! `corpus: N files: exact A / refused B / known gaps G / read where Pillow refuses R / differ C / crashed D`.

use crate::{Comparison, Table, compare_bytes};
use preprocess::{DecodeOptions, Error, RgbImage};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Any failure of the suite itself (no manifest, an unreadable file): not a row.
pub type SuiteError = Box<dyn std::error::Error>;

/// The files where ours and Pillow may part, each with its reason: one list, shared with
/// `preprocess`'s `tests/pillow_corpus.rs`.
const EXCEPTIONS_JSON: &str = include_str!("../../preprocess/tests/fixtures/pillow_corpus/exceptions.json");

/// One file of [`Exceptions`] and why it is one.
#[derive(Debug, Clone, Deserialize)]
pub struct Exception {
    /// The file's name (in any directory of the corpus).
    pub file: String,
    pub reason: String,
}

/// The corpus files allowed to part from Pillow, by name, each with its reason
/// (`exceptions.json`). Any other such file is a [`Class::Differ`].
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Exceptions {
    /// Files Pillow reads, in a format this crate reads, whose variant it refuses by name
    /// ([`Error::Unsupported`]) because the bits cannot be known.
    pub known_gaps: Vec<Exception>,
    /// Valid files this crate reads that Pillow's build cannot open (mlx-vlm fails on them).
    pub read_where_pillow_refuses: Vec<Exception>,
}

impl Exceptions {
    /// The checked-in list.
    pub fn listed() -> Result<Exceptions, SuiteError> {
        Ok(serde_json::from_str(EXCEPTIONS_JSON).map_err(|e| format!("exceptions.json: {e}"))?)
    }

    /// The entry of `list` for a file (its name, in any directory of the corpus).
    fn find<'e>(list: &'e [Exception], file: &str) -> Option<&'e Exception> {
        let name = Path::new(file).file_name()?.to_str()?;
        list.iter().find(|e| e.file == name)
    }
}

/// How long our decode of one file may take; longer is [`Class::Crashed`]. The corpus's files
/// decode in milliseconds; this bound only catches a decoder that loops.
pub const DECODE_BOUND: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
struct Manifest {
    images: PathBuf,
    #[serde(default)]
    missing: bool,
    cases: Vec<Reference>,
}

/// What the reference made of one file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Reference {
    /// The file, relative to the images directory.
    pub file: String,
    /// The format Pillow's `Image.open` identified (`Image.format`), if any.
    pub format: Option<String>,
    /// The decoded image's shape `[height, width, 3]`, when Pillow read it.
    pub shape: Option<Vec<usize>>,
    /// The file (beside the manifest) holding the decoded RGB8 bytes, when Pillow read it.
    pub rgb: Option<String>,
    /// What `load_image` raised, when Pillow refused the file.
    pub error: Option<String>,
}

/// What our decode of one file did.
#[derive(Debug)]
pub enum Ours {
    /// [`preprocess::decode`] returned within [`DECODE_BOUND`].
    Decoded(preprocess::Result<RgbImage>),
    /// It was still running after [`DECODE_BOUND`] (or returned later than that).
    TimedOut,
}

/// The class of one file's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Both read it: same shape, same bytes.
    Exact,
    /// Both refuse it; or Pillow reads it in a format this crate deliberately does not read,
    /// and ours refuses it with [`Error::UnsupportedFormat`] naming Pillow's format.
    Refused,
    /// Pillow reads it in a format we read; ours refuses its variant by name, and the file is
    /// one of [`Exceptions::known_gaps`].
    Gap,
    /// Pillow refuses it; ours reads it, and the file is one of
    /// [`Exceptions::read_where_pillow_refuses`].
    Read,
    /// Different shape or pixels; or ours refuses a file Pillow reads in a format we read (or
    /// refuses it for another reason than its format); or ours reads a file Pillow refuses.
    Differ,
    /// A decoder panicked ([`Error::DecoderPanic`]), or the decode took longer than
    /// [`DECODE_BOUND`].
    Crashed,
}

impl Class {
    /// Whether a row of this class passes.
    pub fn passes(self) -> bool {
        matches!(self, Class::Exact | Class::Refused | Class::Gap | Class::Read)
    }

    fn label(self) -> &'static str {
        match self {
            Class::Exact => "exact",
            Class::Refused => "refused",
            Class::Gap => "GAP",
            Class::Read => "READ",
            Class::Differ => "DIFFER",
            Class::Crashed => "CRASHED",
        }
    }
}

/// How many rows of each class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub exact: usize,
    pub refused: usize,
    pub gaps: usize,
    pub read: usize,
    pub differ: usize,
    pub crashed: usize,
}

impl Counts {
    fn add(&mut self, class: Class) {
        match class {
            Class::Exact => self.exact += 1,
            Class::Refused => self.refused += 1,
            Class::Gap => self.gaps += 1,
            Class::Read => self.read += 1,
            Class::Differ => self.differ += 1,
            Class::Crashed => self.crashed += 1,
        }
    }

    /// Files counted.
    pub fn files(&self) -> usize {
        self.exact + self.refused + self.gaps + self.read + self.differ + self.crashed
    }

    /// The closing line of a set of rows named `label`.
    pub fn line(&self, label: &str) -> String {
        format!(
            "{label}: {} files: exact {} / refused {} / known gaps {} / read where Pillow refuses {} / differ {} / crashed {}",
            self.files(),
            self.exact,
            self.refused,
            self.gaps,
            self.read,
            self.differ,
            self.crashed
        )
    }
}

/// Classes one file: our outcome against the reference's, with the reference's decoded bytes
/// when it read the file. Returns the class and the row's description (what the reference and
/// ours did).
pub fn classify(
    exceptions: &Exceptions,
    reference: &Reference,
    reference_rgb: Option<&[u8]>,
    ours: &Ours,
) -> (Class, Comparison) {
    let name = format!("corpus {}", reference.file);
    let format = reference.format.as_deref().unwrap_or("-");
    let row = |class: Class, detail: String| {
        let passes = class.passes();
        let what: String = format!("{format} {}: {detail}", class.label()).chars().take(110).collect();
        let comparison = Comparison {
            name: name.clone(),
            what,
            max_abs_diff: if passes { 0.0 } else { f64::INFINITY },
            rel_rmse: if passes { 0.0 } else { f64::INFINITY },
            differing: usize::from(!passes),
            total: 1,
            bit_exact: passes,
        };
        (class, comparison)
    };
    let result = match ours {
        Ours::TimedOut => return row(Class::Crashed, format!("ours took over {} s", DECODE_BOUND.as_secs())),
        Ours::Decoded(result) => result,
    };
    if let Err(e @ Error::DecoderPanic { .. }) = result {
        return row(Class::Crashed, e.to_string());
    }
    match (reference_rgb, result) {
        (Some(expected), Ok(image)) => {
            let shape = reference.shape.clone().unwrap_or_default();
            let ours_shape = vec![image.height() as usize, image.width() as usize, 3];
            if shape != ours_shape {
                return row(Class::Differ, format!("{shape:?} vs ours {ours_shape:?}"));
            }
            let mut comparison = compare_bytes(&name, "", image.data(), expected);
            let class = if comparison.bit_exact { Class::Exact } else { Class::Differ };
            comparison.what = match class {
                Class::Exact => format!("{format} exact: {shape:?}"),
                _ => format!("{format} DIFFER: {shape:?} {}/{} bytes differ", comparison.differing, comparison.total),
            };
            (class, comparison)
        }
        (Some(_), Err(Error::UnsupportedFormat { format: ours_format }))
            if reference.format.as_deref() == Some(*ours_format) =>
        {
            row(Class::Refused, "not read here (Pillow reads it)".to_owned())
        }
        (Some(_), Err(e @ Error::Unsupported { .. }))
            if let Some(gap) = Exceptions::find(&exceptions.known_gaps, &reference.file) =>
        {
            row(Class::Gap, format!("Pillow reads it, ours refuses it by name ({}): {e}", gap.reason))
        }
        (Some(_), Err(e)) => row(Class::Differ, format!("Pillow reads it, ours: {e}")),
        (None, Ok(image))
            if let Some(read) = Exceptions::find(&exceptions.read_where_pillow_refuses, &reference.file) =>
        {
            row(
                Class::Read,
                format!(
                    "ours reads {}x{} ({}), Pillow: {}",
                    image.width(),
                    image.height(),
                    read.reason,
                    pillow_error(reference)
                ),
            )
        }
        (None, Ok(image)) => row(
            Class::Differ,
            format!("ours reads {}x{}, Pillow: {}", image.width(), image.height(), pillow_error(reference)),
        ),
        (None, Err(e)) => row(Class::Refused, format!("ours: {e}")),
    }
}

/// Pillow's error for a file, without the path `load_image` quotes (`Failed to load image from
/// <path>: <why>` becomes `<why>`).
fn pillow_error(reference: &Reference) -> &str {
    let error = reference.error.as_deref().unwrap_or("no image");
    match error.rfind(&reference.file) {
        Some(at) => error.get(at + reference.file.len()..).unwrap_or(error).trim_start_matches(':').trim_start(),
        None => error,
    }
}

/// Decodes `bytes` on a thread of its own, waiting at most [`DECODE_BOUND`]. A decode still
/// running then is left to finish (or spin) on its thread: the process ends without it.
pub fn decode_bounded(bytes: Vec<u8>) -> Ours {
    let (send, receive) = mpsc::channel();
    let started = Instant::now();
    let spawned = std::thread::Builder::new().name("corpus-decode".to_owned()).spawn(move || {
        let _ = send.send(preprocess::decode(&bytes, &DecodeOptions::default()));
    });
    if spawned.is_err() {
        return Ours::TimedOut;
    }
    match receive.recv_timeout(DECODE_BOUND) {
        Ok(_) if started.elapsed() > DECODE_BOUND => Ours::TimedOut,
        Ok(result) => Ours::Decoded(result),
        Err(_) => Ours::TimedOut,
    }
}

/// One set of corpus rows: where the reference side wrote it (`<dir>/<subdir>/manifest.json`),
/// its heading, and its closing line's label.
#[derive(Debug, Clone, Copy)]
pub struct CorpusSet {
    pub subdir: &'static str,
    pub heading: &'static str,
    pub label: &'static str,
}

/// The sets, in the order they run: the sdist's images, then the repository's fuzz files.
pub const SETS: &[CorpusSet] = &[
    CorpusSet {
        subdir: "corpus",
        heading: "preprocess corpus: Pillow 13.0.0's Tests/images, ours vs load_image (one row per file)",
        label: "corpus",
    },
    CorpusSet {
        subdir: "corpus_repo",
        heading: "preprocess corpus: the fuzz files of Pillow's repository that its sdist leaves out, ours vs load_image",
        label: "repository fuzz files",
    },
];

/// Runs the rows of `set` into `table` (under its heading), prints its closing line and returns
/// the counts. A missing corpus (setup not run) is one failing row.
pub fn run_corpus(dir: &Path, set: &CorpusSet, table: &mut Table) -> Result<Counts, SuiteError> {
    let corpus_dir = dir.join(set.subdir);
    let manifest_path = corpus_dir.join("manifest.json");
    let text = std::fs::read_to_string(&manifest_path).map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    let exceptions = Exceptions::listed()?;
    table.section(set.heading);
    let mut counts = Counts::default();
    if manifest.missing {
        table.push_failure(set.label, &format!("{} missing: run cargo xtask setup", manifest.images.display()));
        counts.add(Class::Crashed);
        println!("\n{}", counts.line(set.label));
        return Ok(counts);
    }
    // Panics inside decoders are caught by `decode` and become rows; their messages are in the
    // rows, so the default hook's printing is silenced while the files run.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = run_files(&manifest, &exceptions, &corpus_dir, table, &mut counts);
    std::panic::set_hook(hook);
    result?;
    println!("\n{}", counts.line(set.label));
    Ok(counts)
}

fn run_files(
    manifest: &Manifest,
    exceptions: &Exceptions,
    corpus_dir: &Path,
    table: &mut Table,
    counts: &mut Counts,
) -> Result<(), SuiteError> {
    for reference in &manifest.cases {
        let path = manifest.images.join(&reference.file);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let reference_rgb = match &reference.rgb {
            Some(file) => Some(
                std::fs::read(corpus_dir.join(file))
                    .map_err(|e| format!("{}: {e}", corpus_dir.join(file).display()))?,
            ),
            None => None,
        };
        let ours = decode_bounded(bytes);
        let (class, row) = classify(exceptions, reference, reference_rgb.as_deref(), &ours);
        counts.add(class);
        table.push(row);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(format: Option<&str>, shape: Option<Vec<usize>>, error: Option<&str>) -> Reference {
        Reference {
            file: "f".to_owned(),
            format: format.map(str::to_owned),
            rgb: shape.as_ref().map(|_| "f.rgb".to_owned()),
            shape,
            error: error.map(str::to_owned),
        }
    }

    fn image(rgb: &[u8]) -> Ours {
        Ours::Decoded(RgbImage::new(1, rgb.len() as u32 / 3, rgb.to_vec()))
    }

    /// A known gap and a file read where Pillow refuses, of these tests.
    fn exceptions() -> Exceptions {
        let entry = |file: &str| Exception { file: file.to_owned(), reason: "a reason".to_owned() };
        Exceptions { known_gaps: vec![entry("gap.tif")], read_where_pillow_refuses: vec![entry("valid.avif")] }
    }

    fn class_of(reference: &Reference, rgb: Option<&[u8]>, ours: &Ours) -> Class {
        let (class, row) = classify(&exceptions(), reference, rgb, ours);
        assert_eq!(row.bit_exact, class.passes());
        class
    }

    #[test]
    fn both_reading_is_exact_or_differ_by_the_bytes_and_shape() {
        let png = reference(Some("PNG"), Some(vec![1, 1, 3]), None);
        assert_eq!(class_of(&png, Some(&[1, 2, 3]), &image(&[1, 2, 3])), Class::Exact);
        assert_eq!(class_of(&png, Some(&[1, 2, 3]), &image(&[1, 2, 4])), Class::Differ);
        let tall = reference(Some("PNG"), Some(vec![2, 1, 3]), None);
        assert_eq!(class_of(&tall, Some(&[1, 2, 3, 4, 5, 6]), &image(&[1, 2, 3])), Class::Differ);
        assert_eq!(class_of(&tall, Some(&[1, 2, 3, 4, 5, 6]), &image(&[1, 2, 3, 4, 5, 6])), Class::Exact);
    }

    #[test]
    fn a_format_not_read_here_is_refused_only_when_named_as_pillow_names_it() {
        let psd = reference(Some("PSD"), Some(vec![1, 1, 3]), None);
        let unsupported = |format| Ours::Decoded(Err(Error::UnsupportedFormat { format }));
        assert_eq!(class_of(&psd, Some(&[0; 3]), &unsupported("PSD")), Class::Refused);
        assert_eq!(class_of(&psd, Some(&[0; 3]), &unsupported("TGA")), Class::Differ);
        let malformed = Ours::Decoded(Err(Error::Malformed { format: "PSD", detail: "x".to_owned() }));
        assert_eq!(class_of(&psd, Some(&[0; 3]), &malformed), Class::Differ);
    }

    #[test]
    fn refusals_agree_or_differ() {
        let broken = reference(Some("PNG"), None, Some("ValueError: Failed to load image from /x/f: truncated"));
        assert_eq!(pillow_error(&broken), "truncated");
        let malformed = Ours::Decoded(Err(Error::Malformed { format: "PNG", detail: "x".to_owned() }));
        assert_eq!(class_of(&broken, None, &malformed), Class::Refused);
        assert_eq!(class_of(&broken, None, &image(&[0; 3])), Class::Differ);
    }

    #[test]
    fn panics_and_slow_decodes_crash() {
        let any = reference(Some("GIF"), None, Some("x"));
        let panic = Ours::Decoded(Err(Error::DecoderPanic { format: "GIF", message: "boom".to_owned() }));
        assert_eq!(class_of(&any, None, &panic), Class::Crashed);
        assert_eq!(class_of(&any, None, &Ours::TimedOut), Class::Crashed);
    }

    #[test]
    fn a_bounded_decode_returns_the_decoders_result() {
        let ours = decode_bounded(b"not an image".to_vec());
        assert!(matches!(ours, Ours::Decoded(Err(Error::UnknownFormat { .. }))), "{ours:?}");
    }

    #[test]
    fn the_closing_line_counts_every_class() {
        let mut counts = Counts::default();
        for class in
            [Class::Exact, Class::Exact, Class::Refused, Class::Gap, Class::Read, Class::Differ, Class::Crashed]
        {
            counts.add(class);
        }
        assert_eq!(
            counts.line("corpus"),
            "corpus: 7 files: exact 2 / refused 1 / known gaps 1 / read where Pillow refuses 1 / differ 1 / crashed 1"
        );
    }

    #[test]
    fn a_variant_refused_by_name_passes_only_as_a_listed_gap() {
        let gap = Reference { file: "dir/gap.tif".to_owned(), ..reference(Some("TIFF"), Some(vec![1, 1, 3]), None) };
        let other = Reference { file: "rgb.tif".to_owned(), ..gap.clone() };
        let unsupported = Ours::Decoded(Err(Error::Unsupported { format: "TIFF", detail: "x".to_owned() }));
        assert_eq!(class_of(&gap, Some(&[0; 3]), &unsupported), Class::Gap);
        assert_eq!(class_of(&other, Some(&[0; 3]), &unsupported), Class::Differ);
        let malformed = Ours::Decoded(Err(Error::Malformed { format: "TIFF", detail: "x".to_owned() }));
        assert_eq!(class_of(&gap, Some(&[0; 3]), &malformed), Class::Differ);
    }

    #[test]
    fn a_file_pillow_refuses_may_be_read_only_when_listed() {
        let listed = Reference { file: "dir/valid.avif".to_owned(), ..reference(Some("AVIF"), None, Some("x")) };
        let other = Reference { file: "broken.avif".to_owned(), ..listed.clone() };
        assert_eq!(class_of(&listed, None, &image(&[0; 3])), Class::Read);
        assert_eq!(class_of(&other, None, &image(&[0; 3])), Class::Differ);
        let refused = Ours::Decoded(Err(Error::Malformed { format: "AVIF", detail: "x".to_owned() }));
        assert_eq!(class_of(&listed, None, &refused), Class::Refused);
    }

    #[test]
    fn the_listed_exceptions_parse_and_each_has_a_reason() {
        let listed = Exceptions::listed().expect("exceptions.json");
        assert!(!listed.known_gaps.is_empty());
        for entry in listed.known_gaps.iter().chain(&listed.read_where_pillow_refuses) {
            assert!(!entry.reason.is_empty(), "{}", entry.file);
        }
    }
}
