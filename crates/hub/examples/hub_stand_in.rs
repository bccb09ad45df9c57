//! The Hub stand-in as a process, for tests in other languages (the Python suite):
//!
//! ```text
//! hub_stand_in [--seeded ORG/NAME=MODEL_DIR]... [--plain ORG/NAME=DIR]... [--token ORG/NAME=TOKEN]...
//! ```
//!
//! `--seeded` hosts a [`SeededCheckpoint`] made from a model directory (two shards, 1 MiB of language
//! model tensors beside its own), `--plain` a directory's files as they are, each on `main`.
//! Prints the endpoint as its first line, then one line per hosted repository
//! (`ORG/NAME COMMIT`), and serves until its standard input closes.

extern crate gemma_vision_hub as hub;

use hub::stand_in::{HostedFile, SeededCheckpoint, StandIn};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stand_in = StandIn::start()?;
    let mut hosted = Vec::new();
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let [flag, value] = pair else { return Err(format!("`{}` takes a value", pair[0]).into()) };
        let (repo, what) = value.split_once('=').ok_or_else(|| format!("{flag} takes ORG/NAME=VALUE"))?;
        match flag.as_str() {
            "--seeded" => {
                let checkpoint = SeededCheckpoint::from_model_dir(Path::new(what), 2, 1 << 20, 1)?;
                hosted.push((repo.to_owned(), stand_in.host(repo, "main", checkpoint.hosted())));
            }
            "--plain" => {
                let mut files = BTreeMap::new();
                for entry in std::fs::read_dir(what)? {
                    let entry = entry?;
                    let name = entry.file_name().to_string_lossy().into_owned();
                    files.insert(name.clone(), HostedFile::new(&name, std::fs::read(entry.path())?));
                }
                hosted.push((repo.to_owned(), stand_in.host(repo, "main", files)));
            }
            "--token" => stand_in.require_token(repo, what),
            other => return Err(format!("unknown flag `{other}`").into()),
        }
    }
    println!("{}", stand_in.endpoint());
    for (repo, commit) in hosted {
        println!("{repo} {commit}");
    }
    let mut sink = Vec::new();
    std::io::stdin().read_to_end(&mut sink)?;
    Ok(())
}
