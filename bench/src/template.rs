//! The prose of each BENCHMARKS.md section: a Markdown template under `bench/templates/`
//! whose `{{name}}` placeholders a bench command fills with its run's values (tables, machine,
//! load averages, counts). The words live in the template; the code supplies numbers.

use project::{Result, root};
use std::collections::BTreeSet;
use std::fs;

/// `bench/templates/<name>.md` with every placeholder replaced by its value.
///
/// Errors name the template and the placeholder when a placeholder has no value or a value has
/// no placeholder, so that template and code cannot drift apart silently.
pub fn render(name: &str, values: &[(&str, String)]) -> Result<String> {
    let path = root().join("bench/templates").join(format!("{name}.md"));
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    fill(&text, values).map_err(|e| format!("{}: {e}", path.display()))
}

/// `text` with each `{{name}}` replaced by `values`' entry of that name.
pub fn fill(text: &str, values: &[(&str, String)]) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut used = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or_else(|| format!("unclosed `{{{{` before `{}`", excerpt(after)))?;
        let name = after[..end].trim();
        let value = values
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value)
            .ok_or_else(|| format!("no value for the placeholder `{{{{{name}}}}}`"))?;
        out.push_str(value);
        used.insert(name.to_owned());
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    if let Some((unused, _)) = values.iter().find(|(key, _)| !used.contains(*key)) {
        return Err(format!("the value `{unused}` has no placeholder"));
    }
    Ok(out)
}

fn excerpt(text: &str) -> &str {
    let end = text.char_indices().nth(30).map_or(text.len(), |(i, _)| i);
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced_and_must_match_the_values() {
        let values = [("a", "1".to_owned()), ("b", "two".to_owned())];
        assert_eq!(fill("x {{a}} y {{ b }}{{a}}", &values).unwrap(), "x 1 y two1");
        assert!(fill("{{a}}", &values).unwrap_err().contains("`b` has no placeholder"));
        assert!(fill("{{a}} {{b}} {{c}}", &values).unwrap_err().contains("{{c}}"));
        assert!(fill("{{a", &values).is_err());
    }
}
