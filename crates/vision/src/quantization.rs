//! Quantized vision modules: `config.json`'s `quantization` section and how mlx-vlm 0.7.10
//! (`utils.load_model_weights`) decides, module by module, which linears of a checkpoint are
//! `nn.QuantizedLinear` and with which parameters.

use crate::{Error, Family, Result, SanitizedStore};
use layers::{Quantization, QuantizationMode, QuantizationPlan, WeightStore};
use serde::Serialize;
use std::collections::BTreeMap;

/// The quantization section of `config.json` (`quantization`, else `quantization_config`),
/// as far as the vision side is concerned: the checkpoint-wide defaults and the per-module
/// entries whose key is a vision module path (`vision_tower.…`, `embed_vision.…`,
/// `vision_embedder.…`); entries of the language model are not kept.
///
/// Values are kept as written; they are checked when a module uses them
/// (`plan`), so a text-only setting never refuses a checkpoint whose vision is dense.
///
/// mlx-vlm's converter writes the section under both names; mlx-vlm 0.7.10 itself quantizes
/// MLX-format checkpoints from `quantization` only (a lone `quantization_config` without a
/// `quant_method` leaves every module dense there, and the stored `scales` then fail its strict
/// load). A lone `quantization_config` is read here as the same section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuantizationConfig {
    /// `group_size` (`None`: absent or null, MLX's default for the mode).
    pub group_size: Option<i32>,
    /// `bits` (`None`: absent or null, MLX's default for the mode).
    pub bits: Option<i32>,
    /// `mode` (`None`: absent, `"affine"`).
    pub mode: Option<String>,
    /// Per-module entries below the vision prefixes, by module path.
    pub modules: BTreeMap<String, ModuleQuantization>,
}

/// A per-module entry of the quantization section.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ModuleQuantization {
    /// `false`: the module stays dense.
    Dense(bool),
    /// `{"group_size": …, "bits": …, "mode": …}`, handed to `to_quantized` as is: a missing
    /// field takes MLX's default for the mode, not the checkpoint-wide value.
    Params { group_size: Option<i32>, bits: Option<i32>, mode: Option<String> },
}

/// Module path prefixes of the vision side.
const VISION_MODULES: [&str; 3] = ["vision_tower.", "embed_vision.", "vision_embedder."];

impl QuantizationConfig {
    /// Reads the section from a parsed `config.json` (`None` when it has neither key, or the
    /// value is null). `Err((field, why))` for values of the wrong type.
    pub(crate) fn from_json(json: &serde_json::Value) -> std::result::Result<Option<Self>, (String, String)> {
        let (field, section) = match (json.get("quantization"), json.get("quantization_config")) {
            (Some(q), _) if !q.is_null() => ("quantization", q),
            (_, Some(q)) if !q.is_null() => ("quantization_config", q),
            _ => return Ok(None),
        };
        let Some(section) = section.as_object() else {
            return Err((field.to_owned(), "not an object".into()));
        };
        let int = |key: &str, value: Option<&serde_json::Value>| match value {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| (format!("{field}.{key}"), format!("{v} is not an integer"))),
        };
        let text = |key: &str, value: Option<&serde_json::Value>| match value {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err((format!("{field}.{key}"), format!("{v} is not a string"))),
        };
        let mut modules = BTreeMap::new();
        for (key, value) in section {
            if !VISION_MODULES.iter().any(|p| key.starts_with(p)) {
                continue;
            }
            let entry = match value {
                serde_json::Value::Bool(false) => ModuleQuantization::Dense(false),
                serde_json::Value::Object(params) => ModuleQuantization::Params {
                    group_size: int(&format!("{key}.group_size"), params.get("group_size"))?,
                    bits: int(&format!("{key}.bits"), params.get("bits"))?,
                    mode: text(&format!("{key}.mode"), params.get("mode"))?,
                },
                // The reference ignores any other value (`True`, numbers) for a module path.
                _ => continue,
            };
            modules.insert(key.clone(), entry);
        }
        Ok(Some(QuantizationConfig {
            group_size: int("group_size", section.get("group_size"))?,
            bits: int("bits", section.get("bits"))?,
            mode: text("mode", section.get("mode"))?,
            modules,
        }))
    }
}

/// Which vision modules of the checkpoint are quantized, and how, as mlx-vlm 0.7.10's
/// `load_model_weights` decides it (1-bit modules by [`one_bit`]'s rule, the others by
/// `nn.quantize` with its class predicate):
/// - a module is quantized exactly when the checkpoint holds `<module>.scales`;
/// - with a per-module entry `{…}` under its path, with that entry's parameters alone (missing
///   ones take MLX's defaults for the entry's mode, `affine` if none);
/// - otherwise with the section's `group_size`, `bits` and `mode`.
///
/// Everything that makes the reference fail to load is an [`Error::Quantization`] naming the
/// module: `scales` without a quantization section, a module set to `false` or left dense by
/// the reference's "weight size divisible by 64" rule yet stored quantized, an entry for a
/// stored dense linear (unless `vision_config.skip_vision`), parameters MLX refuses, and the
/// family's [`unquantizable_linear`](Family::unquantizable_linear) stored quantized (gemma4's
/// patch embedder: the reference casts the pixels to its weight's uint32 dtype). Which linears
/// can be quantized is the family's [`runs_quantized`](Family::runs_quantized).
pub(crate) fn plan(
    family: &dyn Family,
    config: Option<&QuantizationConfig>,
    skip_vision: bool,
    store: &SanitizedStore,
) -> Result<QuantizationPlan> {
    let error = |module: &str, detail: String| Error::Quantization { module: module.to_owned(), detail };
    let mut modules = BTreeMap::new();
    for name in store.names() {
        let Some(module) = name.strip_suffix(".scales") else { continue };
        if Some(module) == family.unquantizable_linear() {
            return Err(error(
                module,
                "the patch embedder is stored quantized, which mlx-vlm cannot run (it casts the pixels to the \
                 weight's dtype, uint32)"
                    .into(),
            ));
        }
        if !family.runs_quantized(module) {
            // Not a linear of the encoder: left for the unused-tensor check to name.
            continue;
        }
        if let Some(quantization) = one_bit(module, config)? {
            modules.insert(module.to_owned(), quantization);
            continue;
        }
        let params = match (config, config.and_then(|c| c.modules.get(module))) {
            (None, _) => {
                return Err(error(module, "stored quantized, but config.json has no `quantization` section".into()));
            }
            (Some(_), Some(ModuleQuantization::Dense(_))) => {
                return Err(error(
                    module,
                    "stored quantized, but config.json's quantization sets it to false (dense)".into(),
                ));
            }
            (Some(_), Some(ModuleQuantization::Params { group_size, bits, mode })) => {
                (*group_size, *bits, mode.as_deref())
            }
            (Some(c), None) => {
                check_size_rule(module, store, c)?;
                (c.group_size, c.bits, c.mode.as_deref())
            }
        };
        let (group_size, bits, mode) = params;
        let mode: QuantizationMode = mode.unwrap_or("affine").parse().map_err(|e: String| error(module, e))?;
        let (bits, group_size) = (count(module, "bits", bits)?, count(module, "group_size", group_size)?);
        let quantization =
            Quantization::with_defaults(mode, bits, group_size).map_err(|e| error(module, e.to_string()))?;
        modules.insert(module.to_owned(), quantization);
    }
    if let Some(config) = config
        && !skip_vision
    {
        for (module, entry) in &config.modules {
            let is_linear = family.runs_quantized(module) || Some(module.as_str()) == family.unquantizable_linear();
            let dense = is_linear && store.contains(&format!("{module}.weight")) && !modules.contains_key(module);
            if dense && matches!(entry, ModuleQuantization::Params { .. }) {
                return Err(error(
                    module,
                    "config.json's quantization lists it, but the checkpoint stores it dense (no `scales`)".into(),
                ));
            }
        }
    }
    Ok(QuantizationPlan::new(modules))
}

/// How mlx-vlm 0.7.10 loads a quantized `module` whose parameters, the section's updated by the
/// module's entry (`_quantization_for_path`), have 1 bit: as its own `OneBitLinear`
/// (`replace_one_bit_modules`, before `nn.quantize`, whose class predicate then skips it), affine
/// only, in groups of the merged `group_size` (default 64: 32, 64 or 128). `None` for a module
/// of more bits. A module so replaced whose entry is `false`, or `{…}` without `bits`, makes the
/// predicate fail in the reference, and is an error here too.
fn one_bit(module: &str, config: Option<&QuantizationConfig>) -> Result<Option<Quantization>> {
    let error = |detail: String| Error::Quantization { module: module.to_owned(), detail };
    let Some(config) = config else { return Ok(None) };
    let entry = config.modules.get(module);
    let (group_size, bits, mode) = match entry {
        Some(ModuleQuantization::Params { group_size, bits, mode }) => {
            (group_size.or(config.group_size), bits.or(config.bits), mode.as_ref().or(config.mode.as_ref()))
        }
        _ => (config.group_size, config.bits, config.mode.as_ref()),
    };
    if bits != Some(1) {
        return Ok(None);
    }
    match entry {
        Some(ModuleQuantization::Dense(_)) => {
            return Err(error("stored quantized, but config.json's quantization sets it to false (dense)".into()));
        }
        Some(ModuleQuantization::Params { bits: None, .. }) => {
            return Err(error(
                "1-bit by the section's `bits`, but its entry in config.json's quantization names no `bits`: \
                 mlx-vlm loads it as a OneBitLinear and then fails to quantize that"
                    .into(),
            ));
        }
        _ => {}
    }
    let mode = mode.map_or("affine", String::as_str);
    if mode != "affine" {
        return Err(error(format!("a 1-bit module must use affine mode, got `{mode}`")));
    }
    let group_size = count(module, "group_size", group_size)?.unwrap_or(64);
    let quantization = Quantization::affine(1, group_size).map_err(|e| error(e.to_string()))?;
    Ok(Some(quantization))
}

/// A config's `group_size` or `bits` (`name`) for `module` as a count: a negative one, which
/// MLX refuses, is an [`Error::Quantization`].
fn count(module: &str, name: &str, value: Option<i32>) -> Result<Option<usize>> {
    value
        .map(|v| {
            usize::try_from(v).map_err(|_| Error::Quantization {
                module: module.to_owned(),
                detail: format!("`{name}` is {v}: MLX quantizes with positive sizes only"),
            })
        })
        .transpose()
}

/// The reference quantizes a module without a per-module entry only if its weight has a
/// multiple of 64 elements (`m.weight.size % 64`); a quantized one outside that rule cannot
/// load there.
fn check_size_rule(module: &str, store: &SanitizedStore, config: &QuantizationConfig) -> Result<()> {
    let Ok(info) = store.info(&format!("{module}.weight")) else { return Ok(()) };
    let mode = config.mode.as_deref().unwrap_or("affine").parse::<QuantizationMode>().ok();
    let bits = config.bits.or(mode.map(|m| Quantization::default_for(m).bits() as i32)).unwrap_or(4);
    if let [out, packed] = info.shape[..]
        && bits > 0
    {
        let elements = i64::from(out) * i64::from(packed) * 32 / i64::from(bits);
        if elements % 64 != 0 {
            return Err(Error::Quantization {
                module: module.to_owned(),
                detail: format!(
                    "stored quantized, but mlx-vlm leaves a linear of {elements} weights (not a multiple of 64) dense"
                ),
            });
        }
    }
    Ok(())
}
