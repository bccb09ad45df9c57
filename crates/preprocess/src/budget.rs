//! [`SoftTokenBudget`]: the image budget in soft tokens, checked once where it enters (a
//! command-line flag, a Python argument, a processor config), and [`BudgetError`], the one
//! error that says which bound a budget breaks.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

/// A soft-token budget per image (or per video frame): at least 1, at most `u32::MAX`. The
/// bound that depends on a processor's geometry (the resized image's pixels) is checked by
/// [`Preprocessor::new`](crate::Preprocessor::new) and
/// [`Preprocessor::with_budget`](crate::Preprocessor::with_budget) as a [`BudgetError`]; the one
/// that depends on an encoder (its attention's memory) by the encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "u32", into = "u32")]
pub struct SoftTokenBudget(NonZeroU32);

impl SoftTokenBudget {
    /// The reference processor's default, 280.
    pub const DEFAULT: SoftTokenBudget = SoftTokenBudget(NonZeroU32::new(280).expect("280 is positive"));

    /// The budget of `tokens` soft tokens; [`BudgetError::NotPositive`] for 0.
    pub fn new(tokens: u32) -> Result<Self, BudgetError> {
        NonZeroU32::new(tokens).map(SoftTokenBudget).ok_or(BudgetError::NotPositive { budget: 0 })
    }

    /// The number of soft tokens.
    pub fn get(self) -> u32 {
        self.0.get()
    }
}

impl Default for SoftTokenBudget {
    fn default() -> Self {
        SoftTokenBudget::DEFAULT
    }
}

impl fmt::Display for SoftTokenBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl TryFrom<u32> for SoftTokenBudget {
    type Error = BudgetError;
    fn try_from(tokens: u32) -> Result<Self, BudgetError> {
        SoftTokenBudget::new(tokens)
    }
}

/// A caller's integer (Python's `max_soft_tokens=`, a parsed flag): below 1 is
/// [`BudgetError::NotPositive`], above `u32::MAX` [`BudgetError::TooLarge`].
impl TryFrom<i64> for SoftTokenBudget {
    type Error = BudgetError;
    fn try_from(tokens: i64) -> Result<Self, BudgetError> {
        if tokens < 1 {
            return Err(BudgetError::NotPositive { budget: tokens });
        }
        u32::try_from(tokens).map_err(|_| BudgetError::TooLarge { budget: tokens }).and_then(SoftTokenBudget::new)
    }
}

/// A decimal integer (a command-line flag): not one is [`BudgetError::NotANumber`], then as
/// [`TryFrom<i64>`].
impl FromStr for SoftTokenBudget {
    type Err = BudgetError;
    fn from_str(text: &str) -> Result<Self, BudgetError> {
        let tokens: i64 = text.trim().parse().map_err(|_| BudgetError::NotANumber { text: text.to_owned() })?;
        SoftTokenBudget::try_from(tokens)
    }
}

impl PartialEq<u32> for SoftTokenBudget {
    fn eq(&self, tokens: &u32) -> bool {
        self.get() == *tokens
    }
}

impl From<SoftTokenBudget> for u32 {
    fn from(budget: SoftTokenBudget) -> u32 {
        budget.get()
    }
}

/// A budget that breaks one of its bounds; the message names the value and the bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// Text that is not a whole number.
    #[error("`{text}` is not a positive integer")]
    NotANumber { text: String },
    /// Below one soft token.
    #[error("a budget of {budget} soft tokens: it must be at least 1")]
    NotPositive { budget: i64 },
    /// More soft tokens than 32 bits count.
    #[error("a budget of {budget} soft tokens: it must be at most {}", u32::MAX)]
    TooLarge { budget: i64 },
    /// A video's budget per frame outside the video processors' presets.
    #[error("a video's budget of {budget} soft tokens per frame: it must be one of {allowed:?}")]
    NotAVideoBudget { budget: u32, allowed: &'static [u32] },
    /// The images resized to this budget could have more pixels than the decoder's limit
    /// ([`Limits::PILLOW_BOMB_PIXELS`](crate::Limits::PILLOW_BOMB_PIXELS)).
    #[error(
        "a budget of {budget} soft tokens resizes images to up to {pixels} pixels ({patches} patches of \
         {patch_size}x{patch_size}), more than the limit of {limit} pixels"
    )]
    Pixels { budget: u32, pixels: u128, patches: u64, patch_size: u32, limit: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_at_least_one_and_fits_in_32_bits() {
        assert_eq!(SoftTokenBudget::new(6).map(SoftTokenBudget::get), Ok(6));
        assert_eq!(SoftTokenBudget::default().get(), 280);
        assert_eq!(SoftTokenBudget::try_from(u32::MAX as i64).map(SoftTokenBudget::get), Ok(u32::MAX));
        for (value, message) in [
            (0_i64, "a budget of 0 soft tokens: it must be at least 1"),
            (-3, "a budget of -3 soft tokens: it must be at least 1"),
            (1 << 32, "a budget of 4294967296 soft tokens: it must be at most 4294967295"),
        ] {
            assert_eq!(SoftTokenBudget::try_from(value).unwrap_err().to_string(), message);
            assert_eq!(value.to_string().parse::<SoftTokenBudget>().unwrap_err().to_string(), message);
        }
        assert_eq!("70".parse::<SoftTokenBudget>().map(SoftTokenBudget::get), Ok(70));
        assert_eq!("many".parse::<SoftTokenBudget>().unwrap_err().to_string(), "`many` is not a positive integer");
    }

    #[test]
    fn a_budget_reads_and_writes_as_a_number() {
        let budget: SoftTokenBudget = serde_json::from_str("70").unwrap();
        assert_eq!((budget.get(), serde_json::to_string(&budget).unwrap()), (70, "70".to_owned()));
        let zero = serde_json::from_str::<SoftTokenBudget>("0").unwrap_err().to_string();
        assert!(zero.contains("a budget of 0 soft tokens: it must be at least 1"), "{zero}");
        assert!(serde_json::from_str::<SoftTokenBudget>("-1").is_err());
    }
}
