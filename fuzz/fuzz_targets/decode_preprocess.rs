//! Arbitrary bytes -> decode -> the gemma4 and gemma4_unified encoder inputs. Every input must
//! end in `Ok` or a typed `Err`: a panic, an abort or an out-of-memory is a finding.
//!
//! The pixel limit is lowered (4 Mpx) so that a header announcing a large but legal image is
//! rejected instead of exhausting the fuzzer's memory; the budget (1..=32 soft tokens, small so the fuzzer stays fast) comes
//! from the last byte so the size formula and the resize see many shapes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use preprocess::{DecodeOptions, Limits, Preprocessor, ProcessorConfig, SoftTokenBudget, decode};

fuzz_target!(|data: &[u8]| {
    let options = DecodeOptions { limits: Limits { max_pixels: 1 << 22 }, apply_exif_orientation: true };
    let Ok(image) = decode(data, &options) else { return };
    let Ok(budget) = SoftTokenBudget::new(data.last().map_or(1, |&b| u32::from(b % 32) + 1)) else { return };
    let Ok(processor) = Preprocessor::new(ProcessorConfig::default().with_max_soft_tokens(Some(budget))) else {
        return;
    };
    let tokens = budget.get() as usize;
    if let Ok(pixels) = processor.gemma4_image(&image) {
        assert_eq!(pixels.data.len(), 3 * pixels.height * pixels.width);
        assert!(pixels.soft_tokens <= tokens);
    }
    if let Ok(unified) = processor.gemma4_unified_image(&image) {
        assert_eq!(unified.patches.data.len(), tokens * 6912);
        assert!(unified.soft_tokens <= tokens);
    }
});
