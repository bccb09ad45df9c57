//! [`Client`]: blocking HTTP requests to the Hub's routes, with its redirects, ranges and error
//! statuses turned into this crate's errors.

use crate::error::Missing;
use crate::{Error, HubEnvironment, Result, Token};
use std::io::Read;
use std::ops::Range;
use std::time::Duration;

/// How many redirects one request may follow (the Hub sends one or two: a renamed repository,
/// then its content store).
const MAX_REDIRECTS: usize = 8;

/// A blocking client for one endpoint. The token goes only to the endpoint's own origin, never
/// to the hosts it redirects to (the content store's URLs carry their own signature), as
/// `huggingface_hub` does.
#[derive(Debug)]
pub struct Client {
    agent: ureq::Agent,
    endpoint: String,
    token: Option<Token>,
}

/// The answer to a GET, after its redirects.
#[derive(Debug)]
pub struct Reply {
    /// 200 or 206.
    pub status: u16,
    /// The URL that answered.
    pub url: String,
    /// `X-Repo-Commit` of the first hop (the Hub's), if sent.
    pub repo_commit: Option<String>,
    /// `X-Linked-Etag` of a hop, else the final `ETag`, unquoted (for an LFS file, its
    /// SHA-256; for a plain file, its git blob id).
    pub etag: Option<String>,
    /// `X-Linked-Size` of a hop, if sent: the file's size.
    pub linked_size: Option<u64>,
    /// `Content-Length` of the final answer.
    pub content_length: Option<u64>,
    /// `Content-Range` of a 206: the bytes sent and the file's size.
    pub content_range: Option<(Range<u64>, Option<u64>)>,
    body: ureq::Body,
}

impl Client {
    /// A client for `environment`'s endpoint and token. Connections time out after 10 s, a read
    /// that waits more than 60 s for a byte fails.
    pub fn new(environment: &HubEnvironment) -> Client {
        let agent = ureq::Agent::config_builder()
            .max_redirects(0)
            .max_redirects_will_error(false)
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_recv_response(Some(Duration::from_secs(60)))
            .timeout_per_read(Some(Duration::from_secs(60)))
            .user_agent(concat!("gemma-vision/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Client { agent, endpoint: environment.endpoint.clone(), token: environment.token.clone() }
    }

    /// The endpoint's base URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Whether a token is sent.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// GETs `url` (of the endpoint), following redirects, asking for `range` when given. A 200
    /// to a ranged request means the server ignored the range (the body is then the whole
    /// file). Statuses other than 200 and 206 become errors naming `model`; a 404 says what is
    /// missing from the Hub's `X-Error-Code`, else `missing`.
    pub fn get(&self, model: &str, url: &str, range: Option<Range<u64>>, missing: Missing) -> Result<Reply> {
        let mut url = url.to_owned();
        let mut repo_commit = None;
        let mut linked_etag = None;
        let mut linked_size = None;
        for _ in 0..=MAX_REDIRECTS {
            let mut request = self.agent.get(&url);
            if let Some(range) = &range {
                request = request.header("Range", format!("bytes={}-{}", range.start, range.end.saturating_sub(1)));
            }
            if let Some(token) = &self.token
                && same_origin(&url, &self.endpoint)
            {
                request = request.header("Authorization", format!("Bearer {}", token.secret()));
            }
            let response = request.call().map_err(|e| network(model, &url, e))?;
            let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
            repo_commit = repo_commit.or_else(|| header("x-repo-commit"));
            linked_etag = linked_etag.or_else(|| header("x-linked-etag").map(|e| unquote(&e)));
            linked_size = linked_size.or_else(|| header("x-linked-size").and_then(|s| s.parse().ok()));
            let status = response.status().as_u16();
            match status {
                200 | 206 => {
                    let content_range =
                        match status {
                            206 => Some(header("content-range").as_deref().and_then(parse_content_range).ok_or_else(
                                || Error::Malformed {
                                    model: model.to_owned(),
                                    what: url.clone(),
                                    detail: "a 206 answer without a valid Content-Range".into(),
                                },
                            )?),
                            _ => None,
                        };
                    let etag = linked_etag.or_else(|| header("etag").map(|e| unquote(&e)));
                    let content_length = header("content-length").and_then(|s| s.parse().ok());
                    return Ok(Reply {
                        status,
                        url,
                        repo_commit,
                        etag,
                        linked_size,
                        content_length,
                        content_range,
                        body: response.into_body(),
                    });
                }
                301 | 302 | 303 | 307 | 308 => {
                    let location = header("location").ok_or_else(|| Error::Malformed {
                        model: model.to_owned(),
                        what: url.clone(),
                        detail: format!("a {status} redirect without a Location"),
                    })?;
                    url = join(&url, &location);
                }
                401 | 403 => {
                    return Err(Error::Unauthorized { model: model.to_owned(), status, token_sent: self.has_token() });
                }
                404 => {
                    let missing = match header("x-error-code").as_deref() {
                        Some("RepoNotFound") => Missing::Repository,
                        Some("RevisionNotFound") => Missing::Revision,
                        _ => missing,
                    };
                    return Err(Error::NotFound { model: model.to_owned(), missing });
                }
                _ => {
                    let detail = header("x-error-message");
                    return Err(Error::Status { model: model.to_owned(), url, status, detail });
                }
            }
        }
        Err(Error::Status {
            model: model.to_owned(),
            url,
            status: 310,
            detail: Some(format!("more than {MAX_REDIRECTS} redirects")),
        })
    }
}

impl Reply {
    /// The body, read as it arrives.
    pub fn reader(self) -> impl Read {
        self.body.into_reader()
    }

    /// The whole body, which must hold exactly `expected` bytes when given, and at most `limit`.
    pub fn read_all(self, model: &str, expected: Option<u64>, limit: u64) -> Result<Vec<u8>> {
        let url = self.url.clone();
        let mut bytes = Vec::new();
        self.body.into_reader().take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| Error::Length {
            model: model.to_owned(),
            url: url.clone(),
            detail: format!("reading: {e}"),
        })?;
        let received = bytes.len() as u64;
        if received > limit {
            let detail = format!("more than {limit} bytes, the most this file may hold");
            return Err(Error::Length { model: model.to_owned(), url, detail });
        }
        if let Some(expected) = expected
            && received != expected
        {
            let detail = format!("received {received} bytes, expected {expected}");
            return Err(Error::Length { model: model.to_owned(), url, detail });
        }
        Ok(bytes)
    }
}

fn network(model: &str, url: &str, error: ureq::Error) -> Error {
    Error::Network { model: model.to_owned(), url: url.to_owned(), detail: error.to_string() }
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..].find('/').map_or(url.len(), |i| after_scheme + i);
    &url[..end]
}

fn same_origin(url: &str, endpoint: &str) -> bool {
    origin(url).eq_ignore_ascii_case(origin(endpoint))
}

/// A redirect's `Location` resolved against the URL that sent it.
fn join(url: &str, location: &str) -> String {
    if location.contains("://") {
        location.to_owned()
    } else if location.starts_with('/') {
        format!("{}{location}", origin(url))
    } else {
        let base = url.split(['?', '#']).next().unwrap_or(url);
        let dir = base.rfind('/').map_or(base, |i| &base[..=i]);
        format!("{dir}{location}")
    }
}

fn unquote(etag: &str) -> String {
    etag.trim().trim_start_matches("W/").trim_matches('"').to_owned()
}

/// `bytes a-b/total` (total may be `*`) into `a..b+1` and the total.
fn parse_content_range(value: &str) -> Option<(Range<u64>, Option<u64>)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    let (first, last): (u64, u64) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    if last < first {
        return None;
    }
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    Some((first..last + 1, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_resolve_against_their_url() {
        assert_eq!(join("http://a:1/x/y?z", "/cdn/1"), "http://a:1/cdn/1");
        assert_eq!(join("http://a:1/x/y", "https://b/c"), "https://b/c");
        assert_eq!(join("http://a:1/x/y", "z"), "http://a:1/x/z");
        assert!(same_origin("http://127.0.0.1:5/api", "http://127.0.0.1:5"));
        assert!(!same_origin("http://127.0.0.1:6/api", "http://127.0.0.1:5"));
    }

    #[test]
    fn content_ranges_parse() {
        assert_eq!(parse_content_range("bytes 0-7/100"), Some((0..8, Some(100))));
        assert_eq!(parse_content_range("bytes 5-5/*"), Some((5..6, None)));
        assert_eq!(parse_content_range("bytes 7-5/100"), None);
        assert_eq!(parse_content_range("items 0-1/2"), None);
        assert_eq!(unquote("W/\"abc\""), "abc");
    }
}
