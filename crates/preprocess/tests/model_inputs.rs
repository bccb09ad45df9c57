//! Encoder inputs: rescale arithmetic, patch layouts and positions, padding, processor
//! settings as the reference reads them.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{
    BudgetSource, Patches, PixelValues, Preprocessor, ProcessorConfig, RescaleTable, RgbImage, SettingsFile,
    SettingsLayout, VideoProcessorConfig,
};
use proptest::prelude::*;

/// gemma4's settings layout (what `vision`'s gemma4 family gives).
const GEMMA4: SettingsLayout =
    SettingsLayout { flat_image_settings: true, num_soft_tokens_alias: false, video_inherits_image_settings: false };
/// gemma4_unified's settings layout.
const GEMMA4_UNIFIED: SettingsLayout =
    SettingsLayout { flat_image_settings: false, num_soft_tokens_alias: true, video_inherits_image_settings: true };

fn gradient(w: u32, h: u32) -> RgbImage {
    let data = (0..w * h * 3).map(|i| (i * 37 % 251) as u8).collect();
    RgbImage::new(w, h, data).expect("image")
}

#[test]
fn rescale_is_a_float32_multiply_not_a_division() {
    let table = RescaleTable::new(&ProcessorConfig::default());
    let factor = (1.0f64 / 255.0) as f32;
    let mut differ_from_division = 0;
    for b in 0..=255u8 {
        assert_eq!(table.get(b, 0).to_bits(), (f32::from(b) * factor).to_bits());
        differ_from_division += usize::from(table.get(b, 1) != f32::from(b) / 255.0);
    }
    assert_eq!(differ_from_division, 126);
    assert_eq!(table.get(255, 2), 1.0);
}

#[test]
fn normalisation_is_per_channel_in_float32() {
    let config = ProcessorConfig {
        do_normalize: true,
        image_mean: Some(vec![0.5, 0.25, 0.0]),
        image_std: Some(vec![0.5, 2.0, 1.0]),
        ..Default::default()
    };
    let table = RescaleTable::new(&config);
    let x = f32::from(200u8) * (1.0f64 / 255.0) as f32;
    assert_eq!(table.get(200, 0), (x - 0.5) / 0.5);
    assert_eq!(table.get(200, 1), (x - 0.25) / 2.0);
    assert_eq!(table.get(200, 2), x);
}

#[test]
fn pixel_values_are_channels_first() {
    let image = gradient(5, 4);
    let config = ProcessorConfig::default();
    let pv = PixelValues::from_image(&image, &Preprocessor::new(config.clone()).expect("valid"));
    let table = RescaleTable::new(&config);
    assert_eq!((pv.height, pv.width, pv.data.len()), (4, 5, 60));
    for y in 0..4 {
        for x in 0..5 {
            for c in 0..3 {
                assert_eq!(pv.data[c * 20 + y * 5 + x], table.get(image.data()[(y * 5 + x) * 3 + c], c));
            }
        }
    }
}

#[test]
fn patch_features_are_row_column_channel() {
    // 4x6 image, 2x2 patches: grid 2 rows x 3 columns.
    let image = gradient(6, 4);
    let config = ProcessorConfig { do_rescale: false, ..Default::default() };
    let patches = Patches::from_image(&image, 2, 8, &config).expect("divisible");
    assert_eq!((patches.grid, patches.real, patches.dim, patches.len), ((2, 3), 6, 12, 8));
    for k in 0..6 {
        let (py, px) = (k / 3, k % 3);
        assert_eq!(&patches.positions[2 * k..2 * k + 2], &[px as i64, py as i64]);
        for r in 0..2 {
            for c in 0..2 {
                for ch in 0..3 {
                    let pixel = ((py * 2 + r) * 6 + px * 2 + c) * 3 + ch;
                    assert_eq!(patches.data[k * 12 + (r * 2 + c) * 3 + ch], f32::from(image.data()[pixel]));
                }
            }
        }
    }
    // Padding rows: zeros at (-1, -1).
    assert!(patches.data[6 * 12..].iter().all(|&v| v == 0.0));
    assert_eq!(&patches.positions[12..], &[-1, -1, -1, -1]);
    // Shorter than the patches: truncated, like `_pad_patches`.
    let short = Patches::from_image(&image, 2, 4, &config).expect("divisible");
    assert_eq!((short.real, short.data.len()), (4, 48));
    assert_eq!(&short.data[..], &patches.data[..48]);
    // Not divisible: a typed error.
    assert!(Patches::from_image(&image, 4, 8, &config).is_err());
}

#[test]
fn unified_input_pads_to_the_budget() {
    let processor = Preprocessor::new(
        ProcessorConfig::default().with_max_soft_tokens(Some(preprocess::SoftTokenBudget::new(70).unwrap())),
    )
    .expect("valid");
    let unified = processor.gemma4_unified_image(&gradient(64, 40)).expect("unified");
    let p = &unified.patches;
    assert_eq!((p.len, p.dim, p.patch), (70, 6912, 48));
    assert_eq!(unified.soft_tokens, p.grid.0 * p.grid.1);
    assert!(unified.soft_tokens <= 70 && unified.soft_tokens == p.real);
    assert!(p.positions[2 * p.real..].iter().all(|&v| v == -1));
    assert!(p.data[p.real * p.dim..].iter().all(|&v| v == 0.0));
    let video = processor.gemma4_video_frame(&gradient(64, 40)).expect("video frame");
    assert_eq!((video.len, video.dim, video.patch), (630, 768, 16));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn patchify_then_unpatchify_returns_the_image(gw in 1usize..6, gh in 1usize..6, patch in prop::sample::select(vec![1usize, 2, 16, 48]), extra in 0usize..3) {
        let image = gradient((gw * patch) as u32, (gh * patch) as u32);
        let config = ProcessorConfig::default();
        let patches = Patches::from_image(&image, patch, gw * gh + extra, &config).expect("divisible");
        let pv = PixelValues::from_image(&image, &Preprocessor::new(config).expect("valid"));
        prop_assert_eq!(patches.to_chw().unwrap(), pv.data);
    }
}

#[test]
fn settings_are_read_where_the_reference_reads_them() {
    let nested = r#"{"image_processor": {"image_processor_type": "Gemma4ImageProcessor", "max_soft_tokens": 560,
        "image_mean": [0, 0, 0], "image_std": [1, 1, 1], "resample": 3, "something_new": {"x": 1}},
        "processor_class": "Gemma4Processor", "image_seq_length": 280}"#;
    let c = ProcessorConfig::from_json(nested, GEMMA4).expect("nested");
    assert_eq!((c.max_soft_tokens.get(), c.patch_size, c.pooling_kernel_size), (560, 16, 3));
    assert_eq!(c.mean_std_f32(), ([0.0; 3], [1.0; 3]));

    let flat = r#"{"max_soft_tokens": 140, "do_normalize": true, "image_mean": null}"#;
    let c = ProcessorConfig::from_json(flat, GEMMA4).expect("flat");
    assert_eq!((c.max_soft_tokens.get(), c.do_normalize), (140, true));
    assert_eq!(c.mean_std_f32().0, [0.5; 3]);
    // The unified loader ignores flat files.
    assert_eq!(ProcessorConfig::from_json(flat, GEMMA4_UNIFIED).expect("ok").max_soft_tokens, 280);
    // A flat file naming its processor type is not read as flat settings by gemma4.
    let typed = r#"{"image_processor_type": "Gemma4ImageProcessor", "max_soft_tokens": 70}"#;
    assert_eq!(ProcessorConfig::from_json(typed, GEMMA4).expect("ok").max_soft_tokens, 280);
    // Unified: num_soft_tokens stands for max_soft_tokens.
    let alias = r#"{"image_processor": {"num_soft_tokens": 1120}}"#;
    assert_eq!(ProcessorConfig::from_json(alias, GEMMA4_UNIFIED).expect("ok").max_soft_tokens, 1120);
    assert_eq!(ProcessorConfig::from_json(alias, GEMMA4).expect("ok").max_soft_tokens, 280);
    // The caller's budget wins.
    assert_eq!(
        ProcessorConfig::default()
            .with_max_soft_tokens(Some(preprocess::SoftTokenBudget::new(70).unwrap()))
            .max_soft_tokens,
        70
    );
    assert_eq!(ProcessorConfig::default().with_max_soft_tokens(None).max_soft_tokens, 280);
    assert!(ProcessorConfig::from_json("{not json", GEMMA4).is_err());
    assert!(ProcessorConfig::from_json(r#"{"image_processor": {"patch_size": "big"}}"#, GEMMA4).is_err());
}

#[test]
fn settings_come_from_a_checkpoint_directory() {
    let dir = std::env::temp_dir().join(format!("preprocess-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    assert_eq!(ProcessorConfig::from_checkpoint_dir(&dir, GEMMA4).expect("defaults"), ProcessorConfig::default());
    let source = |config: ProcessorConfig| (config.max_soft_tokens.get(), config.budget_source);
    std::fs::write(dir.join("preprocessor_config.json"), r#"{"max_soft_tokens": 70}"#).expect("write");
    let flat = ProcessorConfig::from_checkpoint_dir(&dir, GEMMA4).expect("flat");
    assert_eq!(source(flat.clone()), (70, BudgetSource::PreprocessorConfig));
    assert_eq!(
        source(flat.with_max_soft_tokens(Some(preprocess::SoftTokenBudget::new(9).unwrap()))),
        (9, BudgetSource::Flag)
    );
    std::fs::write(dir.join("processor_config.json"), r#"{"image_processor": {"do_resize": true}}"#).expect("write");
    let unset = ProcessorConfig::from_checkpoint_dir(&dir, GEMMA4).expect("no budget");
    assert_eq!(source(unset), (280, BudgetSource::Default), "the first file found decides; it sets no budget");
    std::fs::write(dir.join("processor_config.json"), r#"{"image_processor": {"max_soft_tokens": 1120}}"#)
        .expect("write");
    let nested = ProcessorConfig::from_checkpoint_dir(&dir, GEMMA4).expect("nested");
    assert_eq!(source(nested), (1120, BudgetSource::ProcessorConfig));
    std::fs::write(dir.join("processor_config.json"), r#"{"image_processor": {"max_soft_tokens": 0}}"#).expect("write");
    assert!(matches!(ProcessorConfig::from_checkpoint_dir(&dir, GEMMA4), Err(preprocess::Error::Config { .. })));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_settings_file_serves_the_image_and_the_video_settings_and_each_refusal_names_it() {
    let dir = std::env::temp_dir().join(format!("preprocess-settings-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    assert_eq!(SettingsFile::find(&dir).expect("no file"), None);
    std::fs::write(dir.join("preprocessor_config.json"), r#"{"max_soft_tokens": 70}"#).expect("write");
    let processor = dir.join("processor_config.json");
    std::fs::write(
        &processor,
        r#"{"image_processor": {"max_soft_tokens": 560}, "video_processor": {"max_soft_tokens": 140}}"#,
    )
    .expect("write");
    let file = SettingsFile::find(&dir).expect("read").expect("found");
    assert_eq!((file.path(), file.source()), (processor.as_path(), BudgetSource::ProcessorConfig), "mlx-vlm's order");
    // The file is read once: what it says after that does not change what was read.
    std::fs::write(&processor, "{not json").expect("write");
    let image = ProcessorConfig::from_settings_file(Some(&file), GEMMA4).expect("image settings");
    assert_eq!((image.max_soft_tokens.get(), image.budget_source), (560, BudgetSource::ProcessorConfig));
    let video = VideoProcessorConfig::from_settings_file(Some(&file), GEMMA4).expect("video settings");
    assert_eq!((video.frame.max_soft_tokens.get(), video.frame.budget_source), (140, BudgetSource::ProcessorConfig));
    assert!(Preprocessor::from_settings_file(None, GEMMA4).is_ok(), "no file: the defaults");

    // Bad settings, each refused as an error naming the file they were read from.
    let refused = |text: &str| {
        std::fs::write(&processor, text).expect("write");
        let file = SettingsFile::find(&dir).expect("read").expect("found");
        let image = Preprocessor::from_settings_file(Some(&file), GEMMA4).err();
        let video = VideoProcessorConfig::from_settings_file(Some(&file), GEMMA4).err();
        [image, video].map(|e| match e {
            Some(preprocess::Error::Config { path, .. }) => path == processor,
            _ => false,
        })
    };
    assert_eq!(refused("{not json"), [true, true]);
    assert!(refused(r#"{"image_processor": {"patch_size": 0}}"#)[0], "checked by Preprocessor::new");
    assert!(refused(r#"{"video_processor": {"patch_size": "big"}}"#)[1]);
    let _ = std::fs::remove_dir_all(&dir);
}
