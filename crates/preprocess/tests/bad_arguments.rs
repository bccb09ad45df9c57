//! Out-of-domain arguments to the public API (budgets, target sizes, padded lengths,
//! hand-built inputs) are typed errors, refused before anything proportional to them is
//! allocated; none panics.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::resize::{Coefficients, resize_bicubic_reference};
use preprocess::{
    BudgetError, Error, Limits, Patches, Preprocessor, ProcessorConfig, RgbImage, SettingsLayout, SoftTokenBudget,
    resize_bicubic,
};

/// gemma4's settings layout (what `vision`'s gemma4 family gives).
const GEMMA4: SettingsLayout =
    SettingsLayout { flat_image_settings: true, num_soft_tokens_alias: false, video_inherits_image_settings: false };
/// gemma4_unified's settings layout.
const GEMMA4_UNIFIED: SettingsLayout =
    SettingsLayout { flat_image_settings: false, num_soft_tokens_alias: true, video_inherits_image_settings: true };

fn image(width: u32, height: u32) -> RgbImage {
    let data = (0..width as usize * height as usize * 3).map(|i| (i * 7 % 256) as u8).collect();
    RgbImage::new(width, height, data).unwrap()
}

fn budget(max_soft_tokens: u32) -> preprocess::Result<Preprocessor> {
    let budget = SoftTokenBudget::new(max_soft_tokens)?;
    Preprocessor::new(ProcessorConfig::default().with_max_soft_tokens(Some(budget)))
}

#[test]
fn budgets_whose_images_exceed_the_pixel_limit_are_refused() {
    // Default geometry: 16-pixel patches pooled 3×3, 2 304 pixels per soft token at most.
    let largest = Limits::PILLOW_BOMB_PIXELS / 2304;
    assert_eq!(largest, 77_672);
    assert!(budget(largest as u32).is_ok());
    for too_many in [largest as u32 + 1, 1_000_000, u32::MAX] {
        match budget(too_many) {
            Err(err @ Error::Budget(BudgetError::Pixels { budget, limit: 178_956_970, .. })) => {
                assert_eq!(budget, too_many);
                let message = err.to_string();
                assert!(message.starts_with(&format!("a budget of {too_many} soft tokens")), "{message}");
                assert!(message.contains("more than the limit of 178956970 pixels"), "{message}");
            }
            other => panic!("budget {too_many}: {other:?}"),
        }
    }
    // A processor config with absurd patches is refused the same way.
    let wide = ProcessorConfig { patch_size: 1 << 20, ..ProcessorConfig::default() };
    assert!(matches!(Preprocessor::new(wide), Err(Error::Budget(BudgetError::Pixels { .. }))));
    // Found by fuzz/fuzz_targets/processor_config.rs: 280 · 3888888888² overflowed u64.
    for family in [GEMMA4, GEMMA4_UNIFIED] {
        let text = r#"{"image_processor": {"max_soft_tokens": 280, "pooling_kernel_size": 3888888888}}"#;
        let config = ProcessorConfig::from_json(text, family).unwrap();
        assert_eq!(config.max_patches(), u64::MAX, "saturates");
        assert!(matches!(Preprocessor::new(config), Err(Error::Budget(BudgetError::Pixels { .. }))));
    }
    let zero = budget(0).unwrap_err();
    assert!(matches!(zero, Error::Budget(BudgetError::NotPositive { budget: 0 })), "{zero:?}");
    assert_eq!(zero.to_string(), "a budget of 0 soft tokens: it must be at least 1");
    let zero = ProcessorConfig::from_json(r#"{"image_processor": {"max_soft_tokens": 0}}"#, GEMMA4);
    assert!(zero.unwrap_err().to_string().contains("a budget of 0 soft tokens: it must be at least 1"));
}

#[test]
fn resize_targets_past_the_pixel_limit_are_refused() {
    let small = image(3, 2);
    for resize in [resize_bicubic, resize_bicubic_reference] {
        match resize(&small, 100_000, 100_000) {
            Err(Error::TooManyPixels { width: 100_000, height: 100_000, pixels, max_pixels }) => {
                assert_eq!((pixels, max_pixels), (10_000_000_000, Limits::PILLOW_BOMB_PIXELS));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(resize(&small, u32::MAX, 1), Err(Error::TooManyPixels { .. })));
        assert!(resize(&small, 7, 5).is_ok());
    }
    assert!(matches!(Coefficients::bicubic(10, u32::MAX), Err(Error::InvalidArgument { what: "resize", .. })));
    assert!(matches!(Coefficients::bicubic(0, 4), Err(Error::InvalidArgument { what: "resize", .. })));
}

#[test]
fn padded_lengths_past_the_largest_image_are_refused() {
    let processor = budget(280).unwrap();
    let picture = image(48, 32);
    assert_eq!(processor.padded_patches(&picture, 10).unwrap().data.len(), 10 * 768);
    for len in [usize::MAX, 1 << 40, 3 * Limits::PILLOW_BOMB_PIXELS as usize / 768 + 1] {
        match processor.padded_patches(&picture, len) {
            Err(Error::InvalidArgument { what: "patchify", detail }) => {
                assert!(detail.starts_with(&format!("{len} rows of 768 values")), "{detail}");
            }
            other => panic!("len {len}: {other:?}"),
        }
    }
}

#[test]
fn inconsistent_hand_built_patches_are_refused() {
    let processor = budget(280).unwrap();
    let good = processor.padded_patches(&image(48, 32), 8).unwrap();
    assert_eq!(good.to_chw().unwrap().len(), 3 * 48 * 32);
    let broken: Vec<Patches> = vec![
        Patches { data: vec![0.0; 5], ..good.clone() },
        Patches { real: 9, ..good.clone() },
        Patches { grid: (1 << 40, 1 << 40), ..good.clone() },
        Patches { patch: 0, dim: 0, data: Vec::new(), ..good.clone() },
        Patches { grid: (100_000, 100_000), real: 0, ..good.clone() },
        Patches { patch: usize::MAX, ..good.clone() },
    ];
    for patches in broken {
        let err = patches.to_chw().unwrap_err();
        assert!(matches!(&err, Error::InvalidArgument { what: "patches", .. }), "{err:?}");
    }
}

#[test]
fn rows_past_the_last_are_none() {
    let picture = image(4, 3);
    assert_eq!(picture.row(2).unwrap().len(), 12);
    assert_eq!(picture.row(2), Some(&picture.data()[24..36]));
    assert!(picture.row(3).is_none());
    assert!(picture.row(usize::MAX).is_none());
}
