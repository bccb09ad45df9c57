//! The progress bar of an `embed` job and its closing summary.

use indicatif::{ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// A bar over the images of a run, with images per second and the time left; drawn on stdout
/// when stdout is a terminal, hidden otherwise (logs and pipes get only the summary).
#[derive(Debug)]
pub struct ProgressBar {
    bar: indicatif::ProgressBar,
}

impl Default for ProgressBar {
    fn default() -> ProgressBar {
        let target =
            if std::io::stdout().is_terminal() { ProgressDrawTarget::stdout() } else { ProgressDrawTarget::hidden() };
        let bar = indicatif::ProgressBar::with_draw_target(Some(0), target);
        let template = "{bar:32} {pos}/{len} images  {rate}  {elapsed} elapsed, ETA {eta}  {msg}";
        if let Ok(style) = ProgressStyle::with_template(template) {
            let rate = |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.2} images/s", state.per_sec());
            };
            bar.set_style(style.progress_chars("=> ").with_key("rate", rate));
        }
        ProgressBar { bar }
    }
}

impl ProgressBar {
    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl embed::Progress for ProgressBar {
    fn started(&self, total: usize) {
        self.bar.set_length(total as u64);
        self.bar.enable_steady_tick(Duration::from_millis(500));
    }

    fn advanced(&self, _encoded: usize, failed: usize) {
        self.bar.inc(1);
        if failed > 0 {
            self.bar.set_message(format!("{failed} failed"));
        }
    }
}

/// The summary lines of a run into `out`: counts, throughput, errors, and the peak resident
/// memory when known.
pub fn summary_lines(summary: &embed::Summary, out: &str, peak_rss: Option<u64>) -> Vec<String> {
    let s = summary;
    let rate = if s.seconds > 0.0 { (s.encoded + s.failed) as f64 / s.seconds } else { 0.0 };
    let mut lines = vec![format!(
        "embedded {} image(s) ({} soft tokens) in {:.1} s, {rate:.2} images/s, into {} new shard(s) in {out}",
        s.encoded, s.soft_tokens, s.seconds, s.shards
    )];
    if s.skipped > 0 {
        lines.push(format!("skipped {} image(s) already recorded in {out}", s.skipped));
    }
    if s.failed > 0 || s.errors_total > 0 {
        lines.push(format!(
            "{} image(s) could not be read in this run, {} in all: see {}",
            s.failed,
            s.errors_total,
            s.errors_file.display()
        ));
    }
    if let Some(bytes) = peak_rss {
        lines.push(format!("peak memory (RSS): {:.1} MiB", bytes as f64 / f64::from(1 << 20)));
    }
    lines
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
        let summary = embed::Summary {
            encoded: 8,
            soft_tokens: 48,
            failed: 2,
            skipped: 3,
            shards: 1,
            seconds: 2.0,
            errors_total: 4,
            model_identity: "abc".into(),
            budget: vision::SoftTokenBudget::new(6).unwrap(),
            errors_file: "out/errors.jsonl".into(),
        };
        assert_eq!(
            summary_lines(&summary, "out", Some(3 << 20)),
            [
                "embedded 8 image(s) (48 soft tokens) in 2.0 s, 5.00 images/s, into 1 new shard(s) in out",
                "skipped 3 image(s) already recorded in out",
                "2 image(s) could not be read in this run, 4 in all: see out/errors.jsonl",
                "peak memory (RSS): 3.0 MiB",
            ]
        );
        let quiet = embed::Summary { failed: 0, skipped: 0, errors_total: 0, encoded: 1, soft_tokens: 6, ..summary };
        assert_eq!(summary_lines(&quiet, "o", None).len(), 1);
    }

    #[test]
    fn the_peak_rss_is_read_where_the_os_tells_it() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss().is_some_and(|bytes| bytes > 0));
        }
    }
}
