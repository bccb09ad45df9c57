//! The progress bar of an `embed` job and its closing summary.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// A bar over the images of this run, with images per second and the time left; drawn on
/// stdout when stdout is a terminal, hidden otherwise (logs and pipes get only the summary).
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        let target =
            if std::io::stdout().is_terminal() { ProgressDrawTarget::stdout() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        let template = "{bar:32} {pos}/{len} images  {rate}  {elapsed} elapsed, ETA {eta}  {msg}";
        if let Ok(style) = ProgressStyle::with_template(template) {
            let rate = |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.2} images/s", state.per_sec());
            };
            bar.set_style(style.progress_chars("=> ").with_key("rate", rate));
        }
        bar.enable_steady_tick(Duration::from_millis(500));
        Progress { bar }
    }

    /// One more image done (encoded or failed).
    pub fn advance(&self, failed: usize) {
        self.bar.inc(1);
        if failed > 0 {
            self.bar.set_message(format!("{failed} failed"));
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// What one run did, for the closing summary.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    /// Images this run encoded, and their soft tokens.
    pub encoded: usize,
    pub soft_tokens: usize,
    /// Images this run could not read.
    pub failed: usize,
    /// Images skipped because earlier runs recorded them.
    pub skipped: usize,
    /// Shards this run wrote.
    pub shards: usize,
    /// Seconds from the start of the encoding to the last shard.
    pub seconds: f64,
    /// Failures in the whole output directory, earlier runs' included.
    pub errors_total: usize,
    /// The process's peak resident memory in bytes, where the OS tells it.
    pub peak_rss: Option<u64>,
}

impl Summary {
    /// The summary lines: counts, throughput, errors.
    pub fn lines(&self, out: &str, errors_file: &str) -> Vec<String> {
        let rate = if self.seconds > 0.0 { (self.encoded + self.failed) as f64 / self.seconds } else { 0.0 };
        let mut lines = vec![format!(
            "embedded {} image(s) ({} soft tokens) in {:.1} s, {rate:.2} images/s, into {} new shard(s) in {out}",
            self.encoded, self.soft_tokens, self.seconds, self.shards
        )];
        if self.skipped > 0 {
            lines.push(format!("skipped {} image(s) already recorded in {out}", self.skipped));
        }
        if self.failed > 0 || self.errors_total > 0 {
            lines.push(format!(
                "{} image(s) could not be read in this run, {} in all: see {errors_file}",
                self.failed, self.errors_total
            ));
        }
        if let Some(bytes) = self.peak_rss {
            lines.push(format!("peak memory (RSS): {:.1} MiB", bytes as f64 / f64::from(1 << 20)));
        }
        lines
    }
}

/// The peak resident set size of this process (`VmHWM` of /proc/self/status), on Linux.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib = status.lines().find_map(|line| line.strip_prefix("VmHWM:"))?.trim().strip_suffix("kB")?;
    kib.trim().parse::<u64>().ok().map(|kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_counts_throughput_and_errors() {
        let summary = Summary {
            encoded: 8,
            soft_tokens: 48,
            failed: 2,
            skipped: 3,
            shards: 1,
            seconds: 2.0,
            errors_total: 4,
            peak_rss: Some(3 << 20),
        };
        assert_eq!(
            summary.lines("out", "out/errors.jsonl"),
            [
                "embedded 8 image(s) (48 soft tokens) in 2.0 s, 5.00 images/s, into 1 new shard(s) in out",
                "skipped 3 image(s) already recorded in out",
                "2 image(s) could not be read in this run, 4 in all: see out/errors.jsonl",
                "peak memory (RSS): 3.0 MiB",
            ]
        );
        let quiet = Summary { encoded: 1, soft_tokens: 6, shards: 1, seconds: 1.0, ..Summary::default() };
        assert_eq!(quiet.lines("o", "o/e").len(), 1);
    }

    #[test]
    fn the_peak_rss_is_read_where_the_os_tells_it() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss().is_some_and(|bytes| bytes > 0));
        }
    }
}
