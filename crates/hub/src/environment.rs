//! [`HubEnvironment`]: the endpoint, caches, token and modes, read once from the variables
//! the Hugging Face Hub's own clients read.

use crate::{Error, Result};
use std::fmt;
use std::path::{Path, PathBuf};

/// Where models come from and where they are kept, as `huggingface_hub` reads its settings:
///
/// | setting | variable | default |
/// | --- | --- | --- |
/// | endpoint | `HF_ENDPOINT` | `https://huggingface.co` |
/// | Hugging Face home | `HF_HOME` | `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface` |
/// | Hugging Face cache | `HF_HUB_CACHE` (or the older `HUGGINGFACE_HUB_CACHE`) | `$HF_HOME/hub` |
/// | token | `HF_TOKEN` (or the older `HUGGING_FACE_HUB_TOKEN`), else the token file | none |
/// | token file | `HF_TOKEN_PATH` | `$HF_HOME/token` (hf-hub's `Cache::token`) |
/// | never send a token unasked | `HF_HUB_DISABLE_IMPLICIT_TOKEN` | off |
/// | offline | `HF_HUB_OFFLINE` (or `TRANSFORMERS_OFFLINE`): `1`, `ON`, `YES`, `TRUE` | off |
/// | progress bars off | `HF_HUB_DISABLE_PROGRESS_BARS` | on (drawn only on a terminal) |
///
/// and one of this project's own: the vision-only checkpoints it fetched live in
/// `GEMMA_VISION_CACHE`, by default `$HF_HOME/gemma-vision`.
#[derive(Clone, PartialEq, Eq)]
pub struct HubEnvironment {
    /// The Hub's base URL, without a trailing `/`.
    pub endpoint: String,
    /// The Hugging Face cache (`models--org--name/{blobs,refs,snapshots}`).
    pub hf_cache: PathBuf,
    /// This project's store of vision-only checkpoints.
    pub store: PathBuf,
    /// The token sent with every request to the endpoint, if any.
    pub token: Option<Token>,
    /// No network: only what is on this machine.
    pub offline: bool,
    /// Whether progress bars may be drawn (they still are only on a terminal).
    pub progress: bool,
}

/// A Hub token. Never printed: its `Debug` and `Display` show only that there is one.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token from text, trimmed; `None` when nothing is left.
    pub fn new(text: &str) -> Option<Token> {
        let text = text.trim();
        (!text.is_empty()).then(|| Token(text.to_owned()))
    }

    pub(crate) fn secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(…)")
    }
}

impl HubEnvironment {
    /// Reads the variables of this process (see the table above).
    pub fn from_env() -> Result<HubEnvironment> {
        HubEnvironment::from_vars(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// Reads the settings through `var` (a variable's non-empty value, or `None`).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<HubEnvironment> {
        let hf_home = match var("HF_HOME") {
            Some(home) => PathBuf::from(home),
            None => user_cache(&var)?.join("huggingface"),
        };
        let hf_cache = var("HF_HUB_CACHE")
            .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
            .map_or_else(|| hf_home.join("hub"), PathBuf::from);
        let store = var("GEMMA_VISION_CACHE").map_or_else(|| hf_home.join("gemma-vision"), PathBuf::from);
        let endpoint = endpoint(var("HF_ENDPOINT"))?;
        let token = if truthy(var("HF_HUB_DISABLE_IMPLICIT_TOKEN")) {
            None
        } else {
            match var("HF_TOKEN").or_else(|| var("HUGGING_FACE_HUB_TOKEN")) {
                Some(token) => Token::new(&token),
                None => token_from_file(&var, &hf_home),
            }
        };
        Ok(HubEnvironment {
            endpoint,
            hf_cache,
            store,
            token,
            offline: truthy(var("HF_HUB_OFFLINE")) || truthy(var("TRANSFORMERS_OFFLINE")),
            progress: !truthy(var("HF_HUB_DISABLE_PROGRESS_BARS")),
        })
    }
}

impl fmt::Debug for HubEnvironment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HubEnvironment")
            .field("endpoint", &self.endpoint)
            .field("hf_cache", &self.hf_cache)
            .field("store", &self.store)
            .field("token", &self.token)
            .field("offline", &self.offline)
            .field("progress", &self.progress)
            .finish()
    }
}

/// `$XDG_CACHE_HOME`, else `~/.cache`.
fn user_cache(var: &impl Fn(&str) -> Option<String>) -> Result<PathBuf> {
    if let Some(cache) = var("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(cache));
    }
    match var("HOME") {
        Some(home) => Ok(Path::new(&home).join(".cache")),
        None => Err(Error::Environment {
            variable: "HF_HOME",
            detail: "unset, and neither XDG_CACHE_HOME nor HOME is set to find the Hugging Face home under".into(),
        }),
    }
}

/// The token file: `HF_TOKEN_PATH`, else hf-hub's `$HF_HOME/token`.
fn token_from_file(var: &impl Fn(&str) -> Option<String>, hf_home: &Path) -> Option<Token> {
    match var("HF_TOKEN_PATH") {
        Some(path) => std::fs::read_to_string(path).ok().and_then(|text| Token::new(&text)),
        None => hf_hub::Cache::new(hf_home.join("hub")).token().and_then(|text| Token::new(&text)),
    }
}

/// `huggingface_hub`'s truth values: `1`, `ON`, `YES`, `TRUE`, in any case.
fn truthy(value: Option<String>) -> bool {
    value.is_some_and(|v| ["1", "ON", "YES", "TRUE"].contains(&v.trim().to_ascii_uppercase().as_str()))
}

fn endpoint(value: Option<String>) -> Result<String> {
    let Some(value) = value else { return Ok("https://huggingface.co".to_owned()) };
    let trimmed = value.trim().trim_end_matches('/');
    if !(trimmed.starts_with("http://") || trimmed.starts_with("https://")) || trimmed.len() <= "https://".len() {
        return Err(Error::Environment {
            variable: "HF_ENDPOINT",
            detail: format!("`{value}` is not an http:// or https:// URL"),
        });
    }
    Ok(trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<HubEnvironment> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        HubEnvironment::from_vars(|name| vars.get(name).cloned())
    }

    #[test]
    fn defaults_follow_huggingface_hub() {
        let env = read(&[("HOME", "/home/u")]).unwrap();
        assert_eq!(env.endpoint, "https://huggingface.co");
        assert_eq!(env.hf_cache, Path::new("/home/u/.cache/huggingface/hub"));
        assert_eq!(env.store, Path::new("/home/u/.cache/huggingface/gemma-vision"));
        assert!(!env.offline && env.progress && env.token.is_none());
        let env = read(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]).unwrap();
        assert_eq!(env.hf_cache, Path::new("/x/huggingface/hub"));
    }

    #[test]
    fn variables_override() {
        let env = read(&[
            ("HF_HOME", "/hf"),
            ("HF_HUB_CACHE", "/cache"),
            ("GEMMA_VISION_CACHE", "/store"),
            ("HF_ENDPOINT", "http://127.0.0.1:9/"),
            ("HF_TOKEN", " hf_abc \n"),
            ("HF_HUB_OFFLINE", "yes"),
            ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
        ])
        .unwrap();
        assert_eq!(env.hf_cache, Path::new("/cache"));
        assert_eq!(env.store, Path::new("/store"));
        assert_eq!(env.endpoint, "http://127.0.0.1:9");
        assert_eq!(env.token.as_ref().map(Token::secret), Some("hf_abc"));
        assert!(env.offline && !env.progress);
        assert!(!format!("{env:?}").contains("hf_abc"), "the token is never printed");
        let env = read(&[("HF_HOME", "/hf"), ("HF_TOKEN", "t"), ("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")]).unwrap();
        assert!(env.token.is_none());
    }

    #[test]
    fn the_token_file_is_read() {
        let home = std::env::temp_dir().join(format!("hub-env-token-{}", std::process::id()));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("token"), "hf_file\n").unwrap();
        let env = read(&[("HF_HOME", home.to_str().unwrap())]).unwrap();
        assert_eq!(env.token.as_ref().map(Token::secret), Some("hf_file"));
        std::fs::write(home.join("other"), "hf_other").unwrap();
        let other = home.join("other");
        let env = read(&[("HF_HOME", home.to_str().unwrap()), ("HF_TOKEN_PATH", other.to_str().unwrap())]).unwrap();
        assert_eq!(env.token.as_ref().map(Token::secret), Some("hf_other"));
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(matches!(read(&[]), Err(Error::Environment { variable: "HF_HOME", .. })));
        let error = read(&[("HOME", "/h"), ("HF_ENDPOINT", "huggingface.co")]).unwrap_err();
        assert!(error.to_string().contains("HF_ENDPOINT"), "{error}");
    }
}
