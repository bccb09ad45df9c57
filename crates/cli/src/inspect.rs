//! `gemma-vision inspect`: what a checkpoint is and why an image gives the tokens it gives.

use crate::args::ModelArgs;
use clap::Args;
use vision::{EncoderOptions, Inspection, VisionConfig, VisionEncoder};

/// Describe a checkpoint as the encoder loads it.
///
/// Prints where the checkpoint came from (a directory, the Hugging Face cache, or fetched by
/// name: how many of its bytes), the model type and vision dimensions, the features' width and dtype, each quantized
/// module, the soft-token budget and where it comes from (and, with --image-size, what an
/// image of that size becomes), the tensors read and ignored, the cache identity and the MLX it
/// runs on. A
/// checkpoint the encoder refuses fails with the reason.
#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// An input image size, WIDTHxHEIGHT: show its resized size and soft tokens.
    #[arg(long, value_name = "WxH", value_parser = image_size)]
    image_size: Option<(u32, u32)>,
    /// Print the facts as JSON (the fields of `vision::Inspection`).
    #[arg(long)]
    json: bool,
}

pub fn run(args: &InspectArgs) -> Result<(), crate::Error> {
    let encoder = VisionEncoder::load(&args.model.model, EncoderOptions::default())?;
    let inspection = Inspection::of(&encoder, args.model.max_soft_tokens, args.image_size)?;
    if args.json {
        println!("{}", inspection.to_json());
    } else {
        print!("{}", text(&inspection));
    }
    Ok(())
}

/// The human-readable form: one fact per line, a label column then the value.
fn text(i: &Inspection) -> String {
    let mut lines: Vec<(&str, String)> = Vec::new();
    lines.push(("model", format!("{} ({})", i.model_dir.display(), i.model_type.as_str())));
    lines.push(("source", i.origin.to_string()));
    lines.push((
        "vision",
        match &i.vision {
            VisionConfig::Siglip(c) => format!(
                "SigLIP tower: {} layer{}, width {}, {} heads × {} ({} kv), MLP {}, patch {}, pool {}{}{}",
                c.num_hidden_layers,
                if c.num_hidden_layers == 1 { "" } else { "s" },
                c.hidden_size,
                c.num_attention_heads,
                c.head_dim,
                c.num_key_value_heads,
                c.intermediate_size,
                c.patch_size,
                c.pooling_kernel_size,
                if c.use_clipped_linears { ", clipped linears" } else { "" },
                if c.standardize { ", standardized" } else { "" },
            ),
            VisionConfig::Unified(c) => format!(
                "unified embedder: {}-pixel patches ({} values) → {}, position table {}",
                c.model_patch_size,
                c.patch_dim(),
                c.mm_embed_dim,
                c.mm_posemb_size
            ),
        },
    ));
    lines.push(("features", format!("{} wide, {} (compute: {})", i.feature_width, i.feature_dtype, i.compute_dtype)));
    let files = i.weight_files.len();
    let plural = if files == 1 { "" } else { "s" };
    lines.push((
        "weights",
        match &i.index_file {
            Some(index) => format!("{files} file{plural} named by {}", file_name(index)),
            None => format!(
                "{files} file{plural}: {}",
                i.weight_files.iter().map(|f| file_name(f)).collect::<Vec<_>>().join(", ")
            ),
        },
    ));
    if i.quantized_modules.is_empty() {
        lines.push(("quantized", "none".into()));
    }
    for (n, q) in i.quantized_modules.iter().enumerate() {
        let label = if n == 0 { "quantized" } else { "" };
        lines.push((label, format!("{}: {} {} bits, group {}", q.module, q.mode, q.bits, q.group_size)));
    }
    let b = &i.budget;
    lines.push((
        "budget",
        format!("{} soft tokens ({}), up to {} patches", b.max_soft_tokens, b.source.as_str(), b.max_patches),
    ));
    if let Some(image) = &i.image {
        lines.push((
            "image",
            format!(
                "{}x{} → {}x{}: {} soft tokens",
                image.input[0], image.input[1], image.resized[0], image.resized[1], image.soft_tokens
            ),
        ));
    }
    let t = &i.tensors;
    lines.push((
        "tensors",
        format!(
            "{} read ({} bytes); ignored: {} language model, {} audio, {} other",
            t.read, t.bytes_read, t.ignored.language_model, t.ignored.audio, t.ignored.other
        ),
    ));
    lines.push(("cache", i.cache_identity.clone()));
    lines.push(("mlx", format!("{} ({})", i.mlx.version, i.mlx.library.display())));
    lines.push(("kernels", i.kernels.clone()));
    lines.into_iter().map(|(label, value)| format!("{label:<10} {value}\n")).collect()
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// `WIDTHxHEIGHT`, both positive.
fn image_size(text: &str) -> Result<(u32, u32), String> {
    let parsed = text
        .split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse::<u32>().ok()?, h.trim().parse::<u32>().ok()?)));
    match parsed {
        Some((w, h)) if w > 0 && h > 0 => Ok((w, h)),
        _ => Err(format!("`{text}` is not WIDTHxHEIGHT with positive sizes (e.g. 640x480)")),
    }
}
