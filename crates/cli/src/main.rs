//! `gemma-vision`: Gemma 4 vision features from the command line.
//!
//! One module per subcommand; `gemma-vision <command> --help` describes each. On any error the
//! process exits with status 2 after printing exactly one line, `error: …`, on stderr, and
//! leaves no output file behind (outputs are written to a temporary file renamed into place).

mod args;
mod embed;
mod embed_progress;
mod encode;
mod error;
mod inspect;
mod preprocess;

pub use error::Error;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Gemma 4 vision features ("soft tokens"), bit for bit what mlx-vlm computes.
#[derive(Debug, Parser)]
#[command(name = "gemma-vision", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Encode(encode::EncodeArgs),
    Embed(embed::EmbedArgs),
    Preprocess(preprocess::PreprocessArgs),
    Inspect(inspect::InspectArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: clap's own text on stdout, success.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            return fail("expected a command: encode, embed, preprocess or inspect (see gemma-vision --help)");
        }
        Err(e) => return fail(&one_line(&e)),
    };
    let result = match &cli.command {
        Command::Encode(args) => encode::run(args),
        Command::Embed(args) => embed::run(args),
        Command::Preprocess(args) => preprocess::run(args),
        Command::Inspect(args) => inspect::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&error.to_string()),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {}", message.lines().next().unwrap_or_default());
    ExitCode::from(2)
}

/// clap's message without its usage and tip lines, folded onto one line.
fn one_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let message: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with("Usage:"))
        .filter(|line| !line.is_empty() && !line.starts_with("tip:"))
        .collect();
    let text = message.join(" ");
    text.strip_prefix("error: ").unwrap_or(&text).to_owned()
}
