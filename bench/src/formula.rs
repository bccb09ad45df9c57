//! FLOP formulas written once, as text that is both printed in BENCHMARKS.md and evaluated:
//! sums of products of numbers and named dimensions, with parentheses and `²`
//! (`2·P·C·D + L·4·H·P²·d`). `·` and `*` multiply.

use project::Result;

/// A formula's text; [`Formula::eval`] computes it for given dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Formula(pub &'static str);

impl Formula {
    /// The formula's value with each dimension name looked up in `dims`.
    pub fn eval(&self, dims: &dyn Fn(&str) -> Option<f64>) -> Result<f64> {
        let mut parser = Parser { text: self.0, at: 0, dims };
        let value = parser.sum()?;
        parser.skip_spaces();
        if parser.at != self.0.len() {
            return Err(parser.error("unexpected text"));
        }
        Ok(value)
    }
}

impl std::fmt::Display for Formula {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
    dims: &'a dyn Fn(&str) -> Option<f64>,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn skip_spaces(&mut self) {
        let trimmed = self.rest().trim_start();
        self.at = self.text.len() - trimmed.len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_spaces();
        if self.rest().starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn error(&self, what: &str) -> String {
        format!("formula `{}`: {what} at byte {}", self.text, self.at)
    }

    fn sum(&mut self) -> Result<f64> {
        let mut value = self.product()?;
        while self.eat("+") {
            value += self.product()?;
        }
        Ok(value)
    }

    fn product(&mut self) -> Result<f64> {
        let mut value = self.power()?;
        while self.eat("·") || self.eat("*") {
            value *= self.power()?;
        }
        Ok(value)
    }

    fn power(&mut self) -> Result<f64> {
        let value = self.atom()?;
        Ok(if self.eat("²") { value * value } else { value })
    }

    fn atom(&mut self) -> Result<f64> {
        if self.eat("(") {
            let value = self.sum()?;
            return if self.eat(")") { Ok(value) } else { Err(self.error("missing `)`")) };
        }
        self.skip_spaces();
        let rest = self.rest();
        let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(rest.len());
        let token = &rest[..len];
        if token.is_empty() {
            return Err(self.error("expected a number or a name"));
        }
        let value = if token.starts_with(|c: char| c.is_ascii_digit()) {
            token.parse::<f64>().map_err(|_| self.error(&format!("bad number `{token}`")))?
        } else {
            (self.dims)(token).ok_or_else(|| self.error(&format!("unknown dimension `{token}`")))?
        };
        self.at += len;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(name: &str) -> Option<f64> {
        match name {
            "P" => Some(3.0),
            "d" => Some(2.0),
            "H_kv" => Some(5.0),
            _ => None,
        }
    }

    #[test]
    fn evaluates_sums_products_powers_and_parentheses() {
        assert_eq!(Formula("2·P·d + 4·P²·d").eval(&dims).unwrap(), 12.0 + 72.0);
        assert_eq!(Formula("2 * (P + H_kv)·d").eval(&dims).unwrap(), 32.0);
        assert_eq!(Formula("0.5·P").eval(&dims).unwrap(), 1.5);
    }

    #[test]
    fn rejects_unknown_names_and_broken_text() {
        assert!(Formula("2·Q").eval(&dims).unwrap_err().contains("unknown dimension `Q`"));
        assert!(Formula("(P + d").eval(&dims).is_err());
        assert!(Formula("P d").eval(&dims).is_err());
        assert!(Formula("").eval(&dims).is_err());
    }
}
