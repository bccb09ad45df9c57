//! Arbitrary text -> `preprocess::ProcessorConfig::from_json` (a checkpoint's
//! `processor_config.json`) for both model families, then validation and `Preprocessor::new`.
//! Every input must end in `Ok` or a typed `Err`; a panic or an out-of-memory is a finding.
//!
//! An accepted processor must size any image without panicking: a few image sizes taken from
//! the input go through the resize-target formula (nothing is allocated for the image).
#![no_main]

use libfuzzer_sys::fuzz_target;
use preprocess::{Preprocessor, ProcessorConfig};
use vision::ModelType;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for model_type in ModelType::ALL {
        let layout = model_type.family().settings_layout();
        let Ok(config) = ProcessorConfig::from_json(text, layout) else { continue };
        let Ok(processor) = Preprocessor::new(config) else { continue };
        let c = processor.config();
        assert!(c.patch_size > 0 && c.pooling_kernel_size > 0 && c.max_soft_tokens.get() > 0);
        let sizes = [(1, 1), (13, 21), (1, 10_000), (10_000, 1), (4032, 3024), (len_of(data), 7)];
        for (height, width) in sizes {
            if let Ok((h, w)) = processor.target_size(height, width) {
                let side = u64::from(c.model_patch_size());
                assert!(h > 0 && w > 0, "{height}x{width} -> {h}x{w}");
                assert!(u64::from(h) % side == 0 && u64::from(w) % side == 0, "{h}x{w} not in {side}-pixel steps");
                // Never more patches than the budget allows.
                let patches = (u64::from(h) / u64::from(c.patch_size)) * (u64::from(w) / u64::from(c.patch_size));
                assert!(patches <= c.max_patches(), "{height}x{width} -> {h}x{w}: {patches} patches");
            }
        }
    }
});

fn len_of(data: &[u8]) -> u32 {
    (data.len() as u32).max(1)
}
