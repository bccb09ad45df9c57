//! Matmul FLOPs of one encode (2 per multiply-add), the numerator of the GFLOP/s columns. Each
//! model family's count is written once, as [`Formula`] terms that [`count`] evaluates and
//! [`describe`] prints into BENCHMARKS.md.
//!
//! Not counted: the reference's one-hot position-embedding and pooling matmuls (a gather and a
//! mean in other implementations). Every side of a row is credited the same FLOPs, the
//! reference's: for the unified embedder that includes the padding rows mlx-vlm computes.

use super::Model;
use crate::formula::Formula;
use project::Result;

/// One product (or group of products) of an encode.
#[derive(Debug, Clone, Copy)]
pub struct Term {
    pub formula: Formula,
    pub what: &'static str,
}

/// A name in the formulas: its letter, what it stands for, and the key of `bench_e2e.py
/// make`'s model line it is read from (`None`: derived in [`count`]).
struct Dimension {
    letter: &'static str,
    meaning: &'static str,
    key: Option<&'static str>,
}

/// The gemma4 vision tower (per image) and its embedding projection.
pub const GEMMA4: &[Term] = &[
    Term { formula: Formula("2·P·C·D"), what: "patch projection" },
    Term { formula: Formula("L·2·P·D·(2·H·d + 2·K·d)"), what: "q, k, v, o" },
    Term { formula: Formula("L·6·P·D·I"), what: "gate, up, down" },
    Term { formula: Formula("L·4·H·P²·d"), what: "QKᵀ and PV" },
    Term { formula: Formula("2·S·D·T"), what: "embedding projection" },
];

const GEMMA4_DIMS: &[Dimension] = &[
    Dimension { letter: "S", meaning: "soft tokens", key: None },
    Dimension { letter: "P", meaning: "patches (S × pool²)", key: None },
    Dimension { letter: "C", meaning: "patch width (3 × 16²)", key: Some("patch_dim") },
    Dimension { letter: "D", meaning: "hidden width", key: Some("hidden") },
    Dimension { letter: "L", meaning: "layers", key: Some("layers") },
    Dimension { letter: "H", meaning: "query heads", key: Some("heads") },
    Dimension { letter: "K", meaning: "key/value heads", key: Some("kv_heads") },
    Dimension { letter: "d", meaning: "head width", key: Some("head_dim") },
    Dimension { letter: "I", meaning: "MLP width", key: Some("intermediate") },
    Dimension { letter: "T", meaning: "text width", key: Some("text_hidden") },
];

/// The softmax's exponentials of the gemma4 tower (per image): one per score.
pub const GEMMA4_EXPS: Formula = Formula("L·H·P²");

/// The gemma4_unified embedder (per image).
pub const UNIFIED: &[Term] = &[
    Term { formula: Formula("2·N·C·E"), what: "patch projection" },
    Term { formula: Formula("2·N·O·T"), what: "embedding projection" },
];

const UNIFIED_DIMS: &[Dimension] = &[
    Dimension { letter: "N", meaning: "budget rows (padding rows are computed)", key: None },
    Dimension { letter: "C", meaning: "patch width (3 × 48²)", key: Some("patch_dim") },
    Dimension { letter: "E", meaning: "embedding width", key: Some("embed") },
    Dimension { letter: "O", meaning: "output width", key: Some("output") },
    Dimension { letter: "T", meaning: "text width", key: Some("text_hidden") },
];

fn family(model: &Model) -> (&'static [Term], &'static [Dimension]) {
    if model.unified { (UNIFIED, UNIFIED_DIMS) } else { (GEMMA4, GEMMA4_DIMS) }
}

/// Matmul FLOPs of one call encoding `images` same-size images of `soft_tokens` soft tokens in
/// all, at `budget`.
pub fn count(model: &Model, soft_tokens: f64, images: usize, budget: u32) -> Result<f64> {
    let (terms, _) = family(model);
    evaluate(model, terms.iter().map(|t| t.formula), soft_tokens, images, budget)
}

/// The softmax's exponentials of the same call ([`GEMMA4_EXPS`]; the unified embedder has no
/// attention).
pub fn exps(model: &Model, soft_tokens: f64, images: usize, budget: u32) -> Result<f64> {
    let formulas: &[Formula] = if model.unified { &[] } else { &[GEMMA4_EXPS] };
    evaluate(model, formulas.iter().copied(), soft_tokens, images, budget)
}

/// The sum of `formulas` per image, times the images.
fn evaluate(
    model: &Model,
    formulas: impl Iterator<Item = Formula>,
    soft_tokens: f64,
    images: usize,
    budget: u32,
) -> Result<f64> {
    let (_, dims) = family(model);
    let images = images.max(1) as f64;
    let per_image = soft_tokens / images;
    let pool = if model.unified { 1.0 } else { dim(model, "pool")? };
    let value = |letter: &str| -> Option<f64> {
        match letter {
            "S" => Some(per_image),
            "P" => Some(per_image * pool * pool),
            "N" => Some(f64::from(budget)),
            other => dims.iter().find(|d| d.letter == other).and_then(|d| d.key).and_then(|key| model.dim(key)),
        }
    };
    let mut total = 0.0;
    for formula in formulas {
        total += formula.eval(&value).map_err(|e| format!("{}: {e}", model.name))?;
    }
    Ok(images * total)
}

fn dim(model: &Model, key: &str) -> Result<f64> {
    model.dim(key).ok_or_else(|| format!("bench_e2e.py make: no `{key}` for {}", model.name))
}

/// "`2·P·C·D` (patch projection) + … with S soft tokens, …": a family's formula and legend.
pub fn describe(unified: bool) -> String {
    let (terms, dims) = if unified { (UNIFIED, UNIFIED_DIMS) } else { (GEMMA4, GEMMA4_DIMS) };
    let sum: Vec<String> = terms.iter().map(|t| format!("`{}` ({})", t.formula, t.what)).collect();
    let legend: Vec<String> = dims.iter().map(|d| format!("{} {}", d.letter, d.meaning)).collect();
    format!("{}, with {}", sum.join(" + "), legend.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(line: &str) -> Model {
        super::super::parse_models(line).unwrap().remove(0)
    }

    fn e2b() -> Model {
        model(
            r#"{"model": "e2b", "model_type": "gemma4", "dir": "m", "text_hidden": 1536, "hidden": 768, "intermediate": 3072, "layers": 16, "heads": 12, "kv_heads": 12, "head_dim": 64, "patch_dim": 768, "pool": 3, "standardize": 0}"#,
        )
    }

    #[test]
    fn e2b_flops_at_2520_patches_are_the_issue_s_1_07_tflop() {
        let flops = count(&e2b(), 280.0, 1, 280).unwrap();
        let (p, d, i, h, hd, t) = (2520.0f64, 768.0, 3072.0, 12.0, 64.0, 1536.0);
        let attention = 4.0 * (2.0 * p * d * h * hd) + 2.0 * (2.0 * h * p * p * hd);
        let mlp = 3.0 * (2.0 * p * d * i);
        let expected = 2.0 * p * 768.0 * d + 16.0 * (attention + mlp) + 2.0 * 280.0 * d * t;
        assert_eq!(flops, expected);
        assert!((1.07e12..1.08e12).contains(&flops), "{flops}");
    }

    #[test]
    fn the_exps_are_one_per_score_and_none_in_the_unified_embedder() {
        assert_eq!(exps(&e2b(), 280.0, 1, 280).unwrap(), 16.0 * 12.0 * 2520.0 * 2520.0);
        assert_eq!(exps(&e2b(), 2.0 * 280.0, 2, 280).unwrap(), 2.0 * 16.0 * 12.0 * 2520.0 * 2520.0);
        let unified = model(r#"{"model": "u", "model_type": "gemma4_unified", "dir": "m", "patch_dim": 1}"#);
        assert_eq!(exps(&unified, 63.0, 1, 70).unwrap(), 0.0);
    }

    #[test]
    fn several_images_count_attention_per_image() {
        let one = count(&e2b(), 266.0, 1, 280).unwrap();
        assert_eq!(count(&e2b(), 8.0 * 266.0, 8, 280).unwrap(), 8.0 * one);
    }

    #[test]
    fn unified_flops_count_the_padded_rows() {
        let model = model(
            r#"{"model": "unified-12b", "model_type": "gemma4_unified", "dir": "m", "text_hidden": 3840, "patch_dim": 6912, "embed": 3840, "output": 3840}"#,
        );
        assert!(model.unified);
        assert_eq!(count(&model, 63.0, 1, 70).unwrap(), 2.0 * 70.0 * 6912.0 * 3840.0 + 2.0 * 70.0 * 3840.0 * 3840.0);
    }

    #[test]
    fn missing_dimensions_are_errors() {
        let model = model(r#"{"model": "x", "model_type": "gemma4", "dir": "m", "pool": 3}"#);
        assert!(count(&model, 10.0, 1, 70).unwrap_err().contains("unknown dimension"));
    }

    #[test]
    fn descriptions_print_every_term_and_letter() {
        let text = describe(false);
        assert!(text.starts_with("`2·P·C·D` (patch projection) + `L·2·P·D·(2·H·d + 2·K·d)` (q, k, v, o)"));
        assert!(text.contains("K key/value heads"));
        assert!(describe(true).contains("`2·N·O·T` (embedding projection)"));
    }
}
