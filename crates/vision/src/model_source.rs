//! What the encoders read of a published checkpoint, for fetching a model by name: the
//! [`hub::Selection`] every family's loader needs.

use crate::ModelType;
use preprocess::SettingsFile;

/// The files and tensors [`Checkpoint::open`](crate::Checkpoint::open) and the encoders read:
/// `config.json` and the processor settings files, and every tensor under a family's vision
/// prefixes, stored raw (`model.vision_tower.…`) or converted (`vision_tower.…`). A checkpoint
/// holding only these loads as the whole checkpoint does: the language model, audio tower and
/// the rest are never read.
pub fn encoder_selection() -> hub::Selection {
    let mut files = vec!["config.json".to_owned()];
    files.extend(SettingsFile::CANDIDATES.iter().map(|s| s.as_str().to_owned()));
    let mut tensor_prefixes: Vec<String> = ModelType::ALL
        .iter()
        .flat_map(|t| t.family().vision_prefixes())
        .flat_map(|prefix| [prefix.to_string(), format!("model.{prefix}")])
        .collect();
    tensor_prefixes.sort();
    tensor_prefixes.dedup();
    hub::Selection { files, tensor_prefixes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_familys_vision_tensors_are_selected_and_nothing_else() {
        let selection = encoder_selection();
        for name in [
            "model.vision_tower.encoder.layers.0.mlp.up_proj.weight",
            "vision_tower.patch_embedder.input_proj.weight",
            "model.embed_vision.embedding_projection.weight",
            "model.vision_embedder.patch_dense.weight",
        ] {
            assert!(selection.takes_tensor(name), "{name}");
        }
        for name in ["model.language_model.embed_tokens.weight", "model.audio_tower.x", "lm_head.weight"] {
            assert!(!selection.takes_tensor(name), "{name}");
        }
        assert_eq!(selection.files, ["config.json", "processor_config.json", "preprocessor_config.json"]);
    }
}
