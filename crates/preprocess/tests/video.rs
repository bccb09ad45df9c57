//! The video processors' settings and steps: where the settings are read, the frames kept of a
//! long video (against values NumPy printed for `np.linspace(0, T - 1, n).round()`), and the
//! per-frame inputs of both encoders.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{
    BudgetError, Error, RgbImage, SettingsLayout, SoftTokenBudget, VIDEO_BUDGETS, VideoPreprocessor,
    VideoProcessorConfig,
};

/// gemma4's settings layout (what `vision`'s gemma4 family gives).
const GEMMA4: SettingsLayout =
    SettingsLayout { flat_image_settings: true, num_soft_tokens_alias: false, video_inherits_image_settings: false };
/// gemma4_unified's settings layout.
const GEMMA4_UNIFIED: SettingsLayout =
    SettingsLayout { flat_image_settings: false, num_soft_tokens_alias: true, video_inherits_image_settings: true };

fn gradient(width: u32, height: u32) -> RgbImage {
    let data = (0..height)
        .flat_map(|y| (0..width).flat_map(move |x| [(x * 7) as u8, (y * 5) as u8, ((x + y) * 3) as u8]))
        .collect();
    RgbImage::new(width, height, data).expect("consistent")
}

fn defaults(family: SettingsLayout) -> VideoProcessorConfig {
    VideoProcessorConfig::from_json("{}", family).expect("defaults")
}

#[test]
fn frames_are_sampled_as_numpy_linspace_rounds_them() {
    let cases: &[(usize, u32, &[usize])] = &[
        (7, 4, &[0, 2, 4, 6]),
        (5, 1, &[0]),
        // Ties go to the even neighbour: 2.5 → 2, 4.5 → 4.
        (6, 5, &[0, 1, 2, 4, 5]),
        (10, 3, &[0, 4, 9]),
        (11, 3, &[0, 5, 10]),
        (
            33,
            32,
            &[
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
                29, 30, 31, 32,
            ],
        ),
        (
            1000,
            32,
            &[
                0, 32, 64, 97, 129, 161, 193, 226, 258, 290, 322, 354, 387, 419, 451, 483, 516, 548, 580, 612, 645,
                677, 709, 741, 773, 806, 838, 870, 902, 935, 967, 999,
            ],
        ),
    ];
    for &(count, num_frames, expected) in cases {
        let config = VideoProcessorConfig { num_frames, ..defaults(GEMMA4) };
        assert_eq!(config.sampled_frames(count), expected, "{count} frames, {num_frames} kept");
    }
    // Short videos keep every frame.
    assert_eq!(defaults(GEMMA4).sampled_frames(3), [0, 1, 2]);
}

#[test]
fn settings_are_read_where_each_family_reads_them() {
    // gemma4 without a video section: the processor's defaults, whatever the images use.
    let images_only = r#"{"image_processor": {"patch_size": 4, "max_soft_tokens": 6, "do_normalize": true}}"#;
    let gemma4 = VideoProcessorConfig::from_json(images_only, GEMMA4).unwrap();
    assert_eq!(
        (gemma4.frame.patch_size, gemma4.frame.pooling_kernel_size, gemma4.frame.max_soft_tokens.get()),
        (16, 3, 70)
    );
    assert_eq!((gemma4.num_frames, gemma4.model_patch_size), (32, 48));
    assert!(!gemma4.frame.do_normalize);
    assert_eq!(
        (gemma4.frame.image_mean.as_deref(), gemma4.frame.image_std.as_deref()),
        (Some(&[0.0; 3][..]), Some(&[1.0; 3][..]))
    );
    // gemma4_unified without one: the image processor's patch and normalisation, the video budget.
    let unified = VideoProcessorConfig::from_json(images_only, GEMMA4_UNIFIED).unwrap();
    assert_eq!((unified.frame.patch_size, unified.frame.max_soft_tokens.get(), unified.model_patch_size), (4, 70, 12));
    assert!(unified.frame.do_normalize);
    // A video section wins in both; the unified one reads `num_soft_tokens` as the budget.
    let video = r#"{"image_processor": {"patch_size": 4},
                    "video_processor": {"patch_size": 8, "pooling_kernel_size": 2, "num_soft_tokens": 140,
                                        "num_frames": 4, "image_mean": null}}"#;
    let gemma4 = VideoProcessorConfig::from_json(video, GEMMA4).unwrap();
    assert_eq!((gemma4.frame.patch_size, gemma4.frame.max_soft_tokens.get(), gemma4.num_frames), (8, 70, 4));
    let unified = VideoProcessorConfig::from_json(video, GEMMA4_UNIFIED).unwrap();
    assert_eq!((unified.frame.max_soft_tokens.get(), unified.model_patch_size), (140, 16));
    assert_eq!(unified.frame.image_mean.as_deref(), Some(&[0.0; 3][..]));
}

#[test]
fn budgets_outside_the_video_processors_set_are_refused() {
    for tokens in [1, 69, 71, 281, 2240] {
        let budget = SoftTokenBudget::new(tokens).unwrap();
        let err = VideoPreprocessor::new(defaults(GEMMA4).with_max_soft_tokens(Some(budget))).unwrap_err();
        assert!(
            matches!(&err, Error::Budget(BudgetError::NotAVideoBudget { budget, .. }) if *budget == tokens),
            "{err:?}"
        );
        assert!(err.to_string().contains(&format!("{VIDEO_BUDGETS:?}")), "{err}");
    }
    // Settings read from a file are plain data: the processor checks them.
    for text in [r#"{"video_processor": {"max_soft_tokens": 100}}"#, r#"{"video_processor": {"num_frames": 0}}"#] {
        let read = VideoProcessorConfig::from_json(text, GEMMA4).unwrap();
        assert!(VideoPreprocessor::new(read).is_err(), "{text}");
    }
    for budget in VIDEO_BUDGETS {
        let budget = SoftTokenBudget::new(budget).unwrap();
        assert!(VideoPreprocessor::new(defaults(GEMMA4).with_max_soft_tokens(Some(budget))).is_ok());
    }
}

#[test]
fn frames_become_each_encoders_padded_patches() {
    let gemma4 = VideoPreprocessor::new(defaults(GEMMA4)).unwrap();
    let frame = gemma4.gemma4_frame(&gradient(64, 40)).unwrap();
    assert_eq!((frame.len, frame.dim, frame.patch), (630, 768, 16));
    assert!(frame.real <= 630 && frame.positions[2 * frame.real..].iter().all(|&v| v == -1));
    let unified = VideoPreprocessor::new(defaults(GEMMA4_UNIFIED)).unwrap();
    let frame = unified.gemma4_unified_frame(&gradient(64, 40)).unwrap();
    assert_eq!((frame.len, frame.dim, frame.patch), (70, 6912, 48));
    assert_eq!(frame.real, frame.grid.0 * frame.grid.1);
    // Both resize to the same size: the gemma4 frame's real patches are the unified frame's, cut 3×3.
    assert_eq!(gemma4.gemma4_frame(&gradient(64, 40)).unwrap().real, 9 * frame.real);
}

#[test]
fn a_video_keeps_its_sampled_frames_and_refuses_frames_of_two_sizes() {
    let config = VideoProcessorConfig { num_frames: 2, ..defaults(GEMMA4) };
    let video = VideoPreprocessor::new(config).unwrap();
    let frames: Vec<RgbImage> = (1..=3).map(|k| gradient(16 * k + 32, 40)).collect();
    let err = video.sample(&frames).unwrap_err();
    assert!(err.to_string().contains("frame 0 is 48x40, frame 1 is 64x40"), "{err}");
    let same: Vec<RgbImage> = (0..3).map(|_| gradient(48, 40)).collect();
    assert_eq!(video.sample(&same).unwrap().len(), 2);
    assert!(video.sample(&[]).is_err());
}
