//! The Markdown tables of a BENCHMARKS.md section read back as cells: what the summary quotes
//! its figures from ([`summary`](super::summary)).
//!
//! A table is a run of lines starting with `|`, its first line the header and its second the
//! alignment row; cells are the text between the pipes, trimmed. Cells holding a pipe are not
//! supported (no section writes one).

/// One Markdown table: its header cells and its rows' cells, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table<'a> {
    pub header: Vec<&'a str>,
    pub rows: Vec<Vec<&'a str>>,
}

impl<'a> Table<'a> {
    /// The index of the first column whose header is `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| *h == name)
    }

    /// The cell of `row` under the first column headed `name`.
    pub fn cell(&self, row: &[&'a str], name: &str) -> Option<&'a str> {
        row.get(self.column(name)?).copied()
    }

    /// Whether the table has a column headed by each of `names`.
    pub fn has_columns(&self, names: &[&str]) -> bool {
        names.iter().all(|name| self.column(name).is_some())
    }
}

/// Every table of `text`, in order.
pub fn tables(text: &str) -> Vec<Table<'_>> {
    let mut tables = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.starts_with('|') {
            continue;
        }
        let header = cells(line);
        let Some(rule) = lines.next_if(|next| next.starts_with('|')) else { continue };
        if !cells(rule).iter().all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':'))) {
            continue;
        }
        let mut rows = Vec::new();
        while let Some(row) = lines.next_if(|next| next.starts_with('|')) {
            rows.push(cells(row));
        }
        tables.push(Table { header, rows });
    }
    tables
}

/// The trimmed cells of one table line.
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(str::trim).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_read_with_their_headers_and_rows() {
        let text = "Intro | not a table\n\n| a | b |\n|---|---:|\n| 1 | two |\n| 3 | 4 |\n\nText.\n\n| x |\n| --- |\n";
        let found = tables(text);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].header, ["a", "b"]);
        assert_eq!(found[0].rows, [vec!["1", "two"], vec!["3", "4"]]);
        assert_eq!(found[0].cell(&found[0].rows[1], "b"), Some("4"));
        assert_eq!(found[0].cell(&found[0].rows[1], "c"), None);
        assert!(found[1].rows.is_empty() && found[1].has_columns(&["x"]));
    }

    #[test]
    fn a_pipe_line_without_an_alignment_row_is_no_table() {
        assert!(tables("| a | b |\n| 1 | 2 |\n").is_empty());
    }
}
