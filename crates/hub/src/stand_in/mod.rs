//! A stand-in for the Hugging Face Hub on 127.0.0.1, for tests (the `stand-in` feature): it
//! speaks the routes this crate uses, as the Hub answers them, and injects faults.
//!
//! - `GET /api/models/{org}/{name}/revision/{revision}`: the commit and the files with their
//!   sizes (and LFS SHA-256s); 401 or 404 with the Hub's `X-Error-Code`.
//! - `GET /{org}/{name}/resolve/{revision}/{path}`: a plain file with `ETag` and
//!   `X-Repo-Commit`; an LFS file as a 302 to `/cdn/{sha256}` with `X-Linked-Etag`,
//!   `X-Linked-Size` and `X-Repo-Commit`, as the Hub redirects weights to its content store
//!   (another origin, so the token is not sent there).
//! - `GET /cdn/{sha256}` (on the content store's own port): the content, with `Range` (`bytes=a-b`, `bytes=a-`) and `ETag`.
//! - `GET /_stand_in/served`: what it served so far, as JSON (for tests in other processes).
//!
//! Every answer closes its connection. Not a general HTTP server: one request line, headers,
//! no request body.

mod hosted;
mod seeded;

pub use hosted::{Fault, HostedFile, HostedRepo, Request, Served, commit_id};
pub use seeded::SeededCheckpoint;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};

#[derive(Debug, Default)]
struct State {
    /// The content store's base URL.
    content_store: String,
    repos: BTreeMap<String, HostedRepo>,
    faults: BTreeMap<String, Fault>,
    served: Served,
}

/// A running stand-in. It serves until dropped (its listener thread then ends with the process).
#[derive(Debug)]
pub struct StandIn {
    endpoint: String,
    state: Arc<Mutex<State>>,
}

impl StandIn {
    /// Starts serving on a free port of 127.0.0.1, and the content store on another (another
    /// origin, as the Hub's is another host).
    pub fn start() -> std::io::Result<StandIn> {
        let hub = TcpListener::bind("127.0.0.1:0")?;
        let content_store = TcpListener::bind("127.0.0.1:0")?;
        let endpoint = format!("http://{}", hub.local_addr()?);
        let state = State { content_store: format!("http://{}", content_store.local_addr()?), ..State::default() };
        let state = Arc::new(Mutex::new(state));
        for listener in [hub, content_store] {
            let shared = Arc::clone(&state);
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let state = Arc::clone(&shared);
                    std::thread::spawn(move || {
                        let _ = serve(stream, &state);
                    });
                }
            });
        }
        Ok(StandIn { endpoint, state })
    }

    /// Its base URL, for `HF_ENDPOINT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hosts `files` as a new commit of `repo` on `branch`; returns the commit id.
    pub fn host(&self, repo: &str, branch: &str, files: BTreeMap<String, HostedFile>) -> String {
        let mut state = self.state();
        let hosted = state.repos.entry(repo.to_owned()).or_default();
        let commit = commit_id(&files, &format!("{repo}@{branch}#{}", hosted.commits.len()));
        hosted.commits.insert(commit.clone(), files);
        hosted.branches.insert(branch.to_owned(), commit.clone());
        commit
    }

    /// Requires `token` for every request to `repo`.
    pub fn require_token(&self, repo: &str, token: &str) {
        self.state().repos.entry(repo.to_owned()).or_default().token = Some(token.to_owned());
    }

    /// Injects `fault` into the content answers of `file` (`org/name/path`), or clears it.
    pub fn set_fault(&self, file: &str, fault: Option<Fault>) {
        let mut state = self.state();
        match fault {
            Some(fault) => state.faults.insert(file.to_owned(), fault),
            None => state.faults.remove(file),
        };
    }

    /// What it served so far.
    pub fn served(&self) -> Served {
        self.state().served.clone()
    }

    /// Forgets what it served.
    pub fn reset_served(&self) {
        self.state().served = Served::default();
    }
}

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Arc<Vec<u8>>,
    /// The part of `body` to send.
    span: std::ops::Range<usize>,
    /// Counted as content of this file.
    content_of: Option<String>,
}

impl Answer {
    fn status(status: u16, code: Option<&str>) -> Answer {
        let headers = code.map(|c| vec![("X-Error-Code".to_owned(), c.to_owned())]).unwrap_or_default();
        Answer { status, headers, body: Arc::new(Vec::new()), span: 0..0, content_of: None }
    }

    fn json(value: serde_json::Value) -> Answer {
        let body = Arc::new(value.to_string().into_bytes());
        let span = 0..body.len();
        let headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
        Answer { status: 200, headers, body, span, content_of: None }
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut range = None;
    let mut authorization = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "range" => range = Some(value.trim().to_owned()),
                "authorization" => authorization = Some(value.trim().to_owned()),
                _ => {}
            }
        }
    }
    let path = target.split('?').next().unwrap_or("/").to_owned();
    let mut guard = state.lock().unwrap_or_else(PoisonError::into_inner);
    // Its own report is not a request to the Hub: asking twice must not count the first ask.
    if path != SERVED_ROUTE {
        guard.served.requests.push(Request {
            path: path.clone(),
            range: range.clone(),
            authorized: authorization.is_some(),
        });
    }
    let token = authorization.as_deref().and_then(|a| a.strip_prefix("Bearer ")).map(str::to_owned);
    let answer = route(&guard, &path, range.as_deref(), token.as_deref());
    let fault = answer.content_of.as_ref().and_then(|f| guard.faults.get(f).cloned());
    let (answer, drop_after) = apply(answer, fault, &mut guard.faults);
    let sent = drop_after.map_or(answer.span.len() as u64, |d| d.min(answer.span.len() as u64));
    if let Some(file) = &answer.content_of {
        *guard.served.content_bytes.entry(file.clone()).or_default() += sent;
    }
    drop(guard);
    let mut stream = stream;
    let mut head = format!("HTTP/1.1 {} {}\r\n", answer.status, reason(answer.status));
    for (name, value) in &answer.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes())?;
    let body = &answer.body[answer.span.start..answer.span.start + sent as usize];
    stream.write_all(body)?;
    stream.flush()?;
    stream.shutdown(std::net::Shutdown::Both)
}

/// Applies a fault; returns the answer and, for [`Fault::Drop`], how many body bytes to send.
fn apply(mut answer: Answer, fault: Option<Fault>, faults: &mut BTreeMap<String, Fault>) -> (Answer, Option<u64>) {
    let declared = answer.span.len() as i64;
    let mut drop_after = None;
    match fault {
        Some(Fault::Drop { after, times }) if answer.status / 100 == 2 => {
            drop_after = Some(after);
            let file = answer.content_of.clone().unwrap_or_default();
            if times <= 1 {
                faults.remove(&file);
            } else {
                faults.insert(file, Fault::Drop { after, times: times - 1 });
            }
        }
        Some(Fault::LyingLength { delta }) if answer.status / 100 == 2 => {
            answer.headers.push(("Content-Length".to_owned(), (declared + delta).max(0).to_string()));
            return (answer, None);
        }
        Some(Fault::Status(status)) => return (Answer::status(status, None), None),
        _ => {}
    }
    answer.headers.push(("Content-Length".to_owned(), declared.to_string()));
    (answer, drop_after)
}

/// The route of the stand-in's own report of what it served (not counted as served).
const SERVED_ROUTE: &str = "/_stand_in/served";

fn route(state: &State, path: &str, range: Option<&str>, token: Option<&str>) -> Answer {
    if path == SERVED_ROUTE {
        let served = &state.served;
        return Answer::json(serde_json::json!({
            "content_bytes": served.content_bytes,
            "metadata_requests": served.metadata_requests(),
            "content_requests": served.content_requests(),
        }));
    }
    if let Some(sha) = path.strip_prefix("/cdn/") {
        let found = state.repos.iter().find_map(|(repo, hosted)| {
            hosted.commits.values().find_map(|files| {
                files.iter().find(|(_, f)| f.lfs && f.sha256() == sha).map(|(p, f)| (format!("{repo}/{p}"), f.clone()))
            })
        });
        return match found {
            Some((name, file)) => content(&file, range, &name, Vec::new(), state.faults.get(&name)),
            None => Answer::status(404, None),
        };
    }
    let parts: Vec<String> = path.trim_start_matches('/').split('/').map(decode).collect();
    let (repo, rest) = match parts.as_slice() {
        [api, models, org, name, rest @ ..] if api == "api" && models == "models" => (format!("{org}/{name}"), rest),
        [org, name, rest @ ..] => (format!("{org}/{name}"), rest),
        _ => return Answer::status(404, None),
    };
    let Some(hosted) = state.repos.get(&repo) else {
        return Answer::status(if token.is_some() { 404 } else { 401 }, Some("RepoNotFound"));
    };
    if let Some(required) = &hosted.token
        && token != Some(required.as_str())
    {
        return Answer::status(if token.is_some() { 403 } else { 401 }, Some("GatedRepo"));
    }
    let find = |revision: &str| {
        let commit = hosted.branches.get(revision).map(String::as_str).unwrap_or(revision);
        hosted.commits.get(commit).map(|files| (commit.to_owned(), files))
    };
    if path.starts_with("/api/") {
        let [revision_word, revision] = rest else { return Answer::status(404, None) };
        let Some((commit, files)) = find(revision).filter(|_| revision_word == "revision") else {
            return Answer::status(404, Some("RevisionNotFound"));
        };
        let siblings: Vec<serde_json::Value> = files
            .iter()
            .map(|(p, f)| match f.lfs {
                true => serde_json::json!({"rfilename": p, "size": f.bytes.len(),
                    "lfs": {"sha256": f.sha256(), "size": f.bytes.len(), "pointerSize": 134}}),
                false => serde_json::json!({"rfilename": p, "size": f.bytes.len()}),
            })
            .collect();
        return Answer::json(serde_json::json!({"id": repo, "sha": commit, "siblings": siblings}));
    }
    let [resolve, revision, file @ ..] = rest else { return Answer::status(404, None) };
    if resolve != "resolve" {
        return Answer::status(404, None);
    }
    let Some((commit, files)) = find(revision) else { return Answer::status(404, Some("RevisionNotFound")) };
    let file_path = file.join("/");
    let Some(hosted_file) = files.get(&file_path) else { return Answer::status(404, Some("EntryNotFound")) };
    let name = format!("{repo}/{file_path}");
    let mut headers = vec![("X-Repo-Commit".to_owned(), commit)];
    if hosted_file.lfs {
        headers.push(("X-Linked-Etag".to_owned(), format!("\"{}\"", hosted_file.etag())));
        headers.push(("X-Linked-Size".to_owned(), hosted_file.bytes.len().to_string()));
        headers.push(("Location".to_owned(), format!("{}/cdn/{}", state.content_store, hosted_file.sha256())));
        let faulty = matches!(state.faults.get(&name), Some(Fault::Status(_)));
        let mut answer = Answer::status(302, None);
        answer.headers = headers;
        if faulty {
            answer.content_of = Some(name);
        }
        return answer;
    }
    content(hosted_file, range, &name, headers, state.faults.get(&name))
}

/// A file's content, or the range asked for (unless the fault ignores ranges).
fn content(
    file: &HostedFile,
    range: Option<&str>,
    name: &str,
    mut headers: Vec<(String, String)>,
    fault: Option<&Fault>,
) -> Answer {
    headers.push(("ETag".to_owned(), format!("\"{}\"", file.etag())));
    headers.push(("Accept-Ranges".to_owned(), "bytes".to_owned()));
    let len = file.bytes.len();
    let asked = range.filter(|_| fault != Some(&Fault::IgnoreRange)).and_then(parse_range);
    let (status, span) = match asked {
        None => (200, 0..len),
        Some((start, _)) if start >= len => return Answer::status(416, None),
        Some((start, end)) => {
            let end = end.map_or(len, |e| (e + 1).min(len));
            headers.push(("Content-Range".to_owned(), format!("bytes {start}-{}/{len}", end - 1)));
            (206, start..end)
        }
    };
    Answer { status, headers, body: Arc::clone(&file.bytes), span, content_of: Some(name.to_owned()) }
}

fn parse_range(value: &str) -> Option<(usize, Option<usize>)> {
    let (start, end) = value.strip_prefix("bytes=")?.split_once('-')?;
    Some((start.parse().ok()?, if end.is_empty() { None } else { Some(end.parse().ok()?) }))
}

fn decode(part: &str) -> String {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (
            bytes[i],
            bytes.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()),
        ) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        302 => "Found",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        416 => "Range Not Satisfiable",
        _ => "Status",
    }
}
