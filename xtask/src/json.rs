//! Reading values out of the flat JSON lines our benchmark and parity programs print (xtask is
//! std-only, so no JSON parser): numbers, strings without escapes, arrays of numbers.

/// The numbers of the array value of `"key"` in a JSON text (empty when absent).
pub fn json_numbers(text: &str, key: &str) -> Vec<f64> {
    let Some(rest) = value_after(text, key).and_then(|r| r.strip_prefix('[')) else { return Vec::new() };
    let body = &rest[..rest.find(']').unwrap_or(rest.len())];
    body.split(',').filter_map(|n| n.trim().parse().ok()).collect()
}

/// The first string value of `"key"` in a flat JSON text (no escapes in our values).
pub fn json_string(text: &str, key: &str) -> Option<String> {
    let rest = value_after(text, key)?.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_owned())
}

/// The first number value of `"key"` in a JSON text.
pub fn json_number(text: &str, key: &str) -> Option<f64> {
    let rest = value_after(text, key)?;
    let end = rest.find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c))).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The text right after `"key":` (whitespace trimmed), if the key occurs.
fn value_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let needle = format!("\"{key}\"");
    let rest = &text[text.find(&needle)? + needle.len()..];
    Some(rest.trim_start().strip_prefix(':')?.trim_start())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_numbers_strings_and_arrays() {
        let line = r#"{"side": "ours", "median": 11.28, "seconds": [12.5, 1e-3], "n": -2}"#;
        assert_eq!(json_string(line, "side").as_deref(), Some("ours"));
        assert_eq!(json_number(line, "median"), Some(11.28));
        assert_eq!(json_number(line, "n"), Some(-2.0));
        assert_eq!(json_numbers(line, "seconds"), vec![12.5, 1e-3]);
        assert_eq!(json_number(line, "missing"), None);
        assert!(json_numbers(line, "side").is_empty());
    }
}
