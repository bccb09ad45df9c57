//! Group 3 (compression 3) as libtiff 4.7 decodes it: `Fax3Decode1D` (every row one-dimensional)
//! and `Fax3Decode2D` (T4Options bit 0: a tag bit after each row's EOL says whether the row is
//! one-dimensional or coded against the one before), with `SYNC_EOL`'s search for each row's
//! EOL and its retry without EOLs.

use super::bits::Bits;
use super::{Fax, Row, fail};
use crate::Result;

/// What `SYNC_EOL` found before a row.
enum Sync {
    /// The row's EOL was skipped (or the codec reads no EOLs): decode the row.
    Row,
    /// No EOL after a run of zero bits: the codec now reads without EOLs, from the start of the
    /// data again (`goto RETRY_WITHOUT_EOL_*`).
    Retry,
}

impl Fax {
    /// `Fax3Decode1D` (`two_d` false) or `Fax3Decode2D`: rows each after an EOL (until none is
    /// found, then again from the start of the data without them, into the rows still to come).
    /// A 2-D coded row's runs become the next row's reference, whatever coding that row has.
    pub(super) fn decode_group3(&mut self, data: &[u8], rows: usize, two_d: bool) -> Result<()> {
        let mut y = 0;
        'retry: loop {
            let mut bits = Bits { data, at: 0, acc: 0, avail: 0 };
            let mut eol_count = 0u32;
            while y < rows {
                let mut row = Row { this: self.cur, pa: self.cur, a0: 0, run_length: 0 };
                if let Sync::Retry = self.sync_eol(&mut bits, &mut eol_count, y)? {
                    continue 'retry;
                }
                let one_d = if two_d {
                    // The 1D/2D tag bit.
                    if !bits.need8(1) {
                        return Err(fail(format!("CCITT Group 3 data ends before row {y}")));
                    }
                    let tag = bits.get(1);
                    bits.clear(1);
                    tag != 0
                } else {
                    true
                };
                let whole = if one_d {
                    self.expand_1d(&mut bits, &mut row, &mut eol_count)?
                } else {
                    self.expand_2d(&mut bits, &mut row, &mut eol_count)?
                };
                if !whole {
                    return Err(fail(format!("CCITT Group 3 data ends in row {y}")));
                }
                self.fill_row(y, row.this, row.pa)?;
                if two_d {
                    // The imaginary change that ends the reference line, where it fits.
                    if row.pa < row.this + self.nruns {
                        self.set_value(&mut row, 0)?;
                    }
                    std::mem::swap(&mut self.cur, &mut self.reference);
                }
                y += 1;
            }
            return Ok(());
        }
    }

    /// `SYNC_EOL`: unless the codec reads no EOLs, find 11 zero bits (unless an EOL was just
    /// read), skip zero bytes, then the zero bits up to and with the EOL's one. Data that ends
    /// in the search is libtiff's failure; zero bytes up to the end are no EOL at all.
    fn sync_eol(&mut self, bits: &mut Bits<'_>, eol_count: &mut u32, y: usize) -> Result<Sync> {
        if self.no_eol {
            return Ok(Sync::Row);
        }
        if *eol_count == 0 {
            loop {
                if !bits.need16(11) {
                    return Err(fail(format!("CCITT Group 3 data ends before row {y}")));
                }
                if bits.get(11) == 0 {
                    break;
                }
                bits.clear(1);
            }
        }
        loop {
            if !bits.need8(8) {
                self.no_eol = true;
                return Ok(Sync::Retry);
            }
            if bits.get(8) != 0 {
                break;
            }
            bits.clear(8);
        }
        while bits.get(1) == 0 {
            bits.clear(1);
        }
        bits.clear(1);
        *eol_count = 0;
        Ok(Sync::Row)
    }
}
