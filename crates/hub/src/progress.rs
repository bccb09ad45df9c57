//! [`Progress`]: a download's progress bar on standard error (bytes, rate, time left), drawn
//! only on a terminal.

use std::io::IsTerminal;

/// A progress bar, or nothing when progress is off or standard error is not a terminal.
#[derive(Debug)]
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// A bar over `total` bytes titled `title`, when `enabled` and standard error is a terminal.
    pub fn new(enabled: bool, total: u64, title: String) -> Progress {
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let bar = indicatif::ProgressBar::new(total);
        let style =
            indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}")
                .map(|s| s.progress_chars("=> "));
        if let Ok(style) = style {
            bar.set_style(style);
        }
        bar.set_message(title);
        Progress { bar: Some(bar) }
    }

    /// No bar.
    pub fn hidden() -> Progress {
        Progress { bar: None }
    }

    /// `bytes` more have arrived.
    pub fn advance(&self, bytes: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(bytes);
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
