//! The printed parity table.

use crate::Comparison;

/// Rows of comparisons, printed as a Markdown table with a summary line.
#[derive(Debug, Default)]
pub struct Table {
    title: String,
    rows: Vec<Comparison>,
    /// Whether the heading of the current section has been printed.
    headed: bool,
}

impl Table {
    /// An empty table headed `title`.
    pub fn new(title: &str) -> Table {
        Table { title: title.to_owned(), rows: Vec::new(), headed: false }
    }

    /// Starts a section headed `title`: the rows pushed next are printed under a heading of
    /// their own, and still count in this table's summary.
    pub fn section(&mut self, title: &str) {
        title.clone_into(&mut self.title);
        self.headed = false;
    }

    /// Adds a row and prints it at once (long runs show progress).
    pub fn push(&mut self, row: Comparison) {
        if !self.headed {
            self.headed = true;
            println!("\n{}\n", self.title);
            println!(
                "| {:<44} | {:<28} | {:>12} | {:>10} | {:>9} |",
                "stage", "reference", "max abs diff", "rel RMSE", "bit-exact"
            );
            println!("|{:-<46}|{:-<30}|{:->14}|{:->12}|{:->11}|", "", "", "", "", "");
        }
        println!(
            "| {:<44} | {:<28} | {:>12.3e} | {:>10.3e} | {:>9} |",
            row.name,
            row.what,
            row.max_abs_diff,
            row.rel_rmse,
            if row.bit_exact { "yes" } else { "NO" }
        );
        self.rows.push(row);
    }

    /// Adds a failed row for something that could not be compared at all (`why` says what).
    pub fn push_failure(&mut self, name: &str, why: &str) {
        self.push(Comparison {
            name: name.to_owned(),
            what: why.chars().take(28).collect(),
            max_abs_diff: f64::INFINITY,
            rel_rmse: f64::INFINITY,
            differing: 0,
            total: 0,
            bit_exact: false,
        });
    }

    /// The rows so far.
    pub fn rows(&self) -> &[Comparison] {
        &self.rows
    }

    /// Prints the summary line `parity-summary: <exact>/<total>` and returns whether every row
    /// is bit-exact.
    pub fn finish(&self) -> bool {
        let exact = self.rows.iter().filter(|r| r.bit_exact).count();
        println!("\nparity-summary: {exact}/{}", self.rows.len());
        exact == self.rows.len()
    }
}
