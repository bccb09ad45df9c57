//! CCITT bilevel data as libtiff 4.7's fax codec decodes it for Pillow (tif_fax3.c, tif_fax3.h):
//! modified Huffman run lengths (`Fax3DecodeRLE`, compression 2), Group 3 one-dimensional
//! (`Fax3Decode1D`, 3) and two-dimensional (`Fax3Decode2D`, 3 with T4Options bit 0; in
//! `group3.rs`) and Group 4 (`Fax4Decode`, 4), into 1-bit rows, MSB first, a set bit black, step
//! for step, damaged data included:
//!
//! - a bad code word ends its row: the runs decoded so far are completed to the row's width and
//!   filled, and decoding goes on with the next row (Group 3 first looks for the next EOL);
//! - Group 3 data whose EOL search runs off the end is decoded again from the strip's start
//!   without EOLs, into the rows still to come (libtiff's `RETRY_WITHOUT_EOL_1D`), and the
//!   codec keeps that mode for the later strips;
//! - Group 4 data that ends (an EOFB, an EOL, the end of the strip) fills the row it is in and
//!   leaves the strip's later rows as they were, which is success when a row came before;
//! - running out of data in a Group 3 or modified Huffman row, or a row of more changes than
//!   libtiff's run arrays hold, is libtiff's failure, so Pillow's refusal: [`Error::Malformed`].
//!
//! Pillow reads each strip (or tile) into one buffer that it allocates once, zeroes only its
//! first image row's bytes, and reuses for every segment (`_decodeStrip` in TiffDecode.c): rows
//! that libtiff leaves undecoded hold what the previous segment left there. [`Fax`] keeps that
//! buffer and which of its rows hold known bytes; a segment whose copied rows include a row
//! never written is refused with [`Error::Unsupported`] (the bytes are whatever the allocator
//! gave Pillow), never returned with other pixels.
//!
//! The code tables are built from T.4's code lists the way libtiff's `mkg3states` builds them:
//! each entry indexed by the next 7, 12 or 13 bits read LSB first (the first bit in bit 0).

mod bits;
mod codes;
mod group3;

use crate::{Error, Result};
use bits::Bits;
use codes::{State, tables};

const FORMAT: &str = "TIFF";

/// Which of libtiff's fax decoders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Compression 2: `Fax3DecodeRLE` in mode NOEOL | BYTEALIGN.
    ModifiedHuffman,
    /// Compression 3 without 2-D coding: `Fax3Decode1D`.
    Group3,
    /// Compression 3 with 2-D coding (T4Options bit 0): `Fax3Decode2D`.
    Group3TwoD,
    /// Compression 4: `Fax4Decode`.
    Group4,
}

impl Scheme {
    /// Whether rows are coded against the one before (libtiff's `needsRefLine`: twice the run
    /// array, half of it the reference line).
    fn needs_reference_line(self) -> bool {
        matches!(self, Scheme::Group3TwoD | Scheme::Group4)
    }
}

/// Where libtiff's decoder returns -1, which makes Pillow refuse the file.
fn fail(detail: impl ToString) -> Error {
    Error::malformed(FORMAT, detail)
}

/// How one colour's run in horizontal mode ended.
enum Run {
    /// A terminating code.
    Done,
    /// A code that is not one of this colour's: the row ends.
    Bad,
    /// The data ended.
    End,
}

/// One row's run array being built (`thisrun`, `pa`, `a0`, `RunLength`).
struct Row {
    this: usize,
    pa: usize,
    a0: i32,
    run_length: i32,
}

/// The codec's state for one image (libtiff's `Fax3CodecState` of one TIFF handle) and Pillow's
/// strip buffer.
#[derive(Debug)]
pub struct Fax {
    scheme: Scheme,
    lastx: i32,
    row_bytes: usize,
    nruns: usize,
    runs: Vec<u32>,
    cur: usize,
    reference: usize,
    /// `FAXMODE_NOEOL`, which a Group 3 retry sets for the rest of the image.
    no_eol: bool,
    /// Pillow's strip buffer and, per row, whether its bytes are known.
    buffer: Vec<u8>,
    known: Vec<bool>,
}

impl Fax {
    /// The state for segments `seg_width` pixels wide and `seg_rows` rows high, in an image
    /// `image_width` pixels wide (Pillow zeroes that many bits of its buffer before the first
    /// segment).
    pub fn new(scheme: Scheme, seg_width: usize, seg_rows: usize, image_width: usize) -> Result<Fax> {
        let too_wide = || Error::malformed(FORMAT, format!("CCITT rows of {seg_width} pixels"));
        let lastx = i32::try_from(seg_width).map_err(|_| too_wide())?;
        let row_bytes = seg_width.div_ceil(8);
        let mut nruns = (seg_width + 1).next_multiple_of(32);
        if scheme.needs_reference_line() {
            nruns *= 2;
        }
        let buffer_len = row_bytes.checked_mul(seg_rows).ok_or_else(too_wide)?;
        let mut known = vec![false; seg_rows];
        let zeroed = image_width.div_ceil(8);
        for (r, k) in known.iter_mut().enumerate() {
            *k = row_bytes == 0 || (r + 1) * row_bytes <= zeroed;
        }
        Ok(Fax {
            scheme,
            lastx,
            row_bytes,
            nruns,
            runs: vec![0; 2 * nruns],
            cur: 0,
            reference: nruns,
            no_eol: scheme == Scheme::ModifiedHuffman,
            buffer: vec![0; buffer_len],
            known,
        })
    }

    /// Decodes one strip or tile of `rows` rows from `data` (FillOrder 1) into Pillow's buffer
    /// and copies those rows to `out` (`rows` rows of the segment's row bytes).
    pub fn decode(&mut self, data: &[u8], rows: usize, out: &mut [u8]) -> Result<()> {
        // Fax3PreDecode: the reference line white.
        if self.scheme.needs_reference_line() {
            self.cur = 0;
            self.reference = self.nruns;
            self.runs[self.reference] = self.lastx as u32;
            self.runs[self.reference + 1] = 0;
        }
        let rows = rows.min(self.known.len());
        let result = match self.scheme {
            Scheme::ModifiedHuffman => self.decode_rle(data, rows),
            Scheme::Group3 => self.decode_group3(data, rows, false),
            Scheme::Group3TwoD => self.decode_group3(data, rows, true),
            Scheme::Group4 => self.decode_g4(data, rows),
        };
        result?;
        if let Some(r) = self.known[..rows].iter().position(|k| !k) {
            return Err(Error::unsupported(
                FORMAT,
                format!("CCITT data ends before row {r} of its segment, whose bytes Pillow leaves uninitialised"),
            ));
        }
        let n = (rows * self.row_bytes).min(out.len());
        out[..n].copy_from_slice(&self.buffer[..n]);
        Ok(())
    }

    /// `SETVALUE(x)`.
    fn set_value(&mut self, row: &mut Row, x: u32) -> Result<()> {
        if row.pa >= row.this + self.nruns {
            return Err(fail("CCITT row of more changes than libtiff's run array holds"));
        }
        self.runs[row.pa] = (row.run_length as u32).wrapping_add(x);
        row.pa += 1;
        row.a0 = row.a0.wrapping_add(x as i32);
        row.run_length = 0;
        Ok(())
    }

    /// `CLEANUP_RUNS()`: the runs completed or cut to the row's width.
    fn cleanup(&mut self, row: &mut Row) -> Result<()> {
        if row.run_length != 0 {
            self.set_value(row, 0)?;
        }
        let lastx = self.lastx;
        if row.a0 != lastx {
            while row.a0 > lastx && row.pa > row.this {
                row.pa -= 1;
                row.a0 = row.a0.wrapping_sub(self.runs[row.pa] as i32);
            }
            if row.a0 < lastx {
                if row.a0 < 0 {
                    row.a0 = 0;
                }
                if (row.pa - row.this) & 1 != 0 {
                    self.set_value(row, 0)?;
                }
                self.set_value(row, (lastx - row.a0) as u32)?;
            } else if row.a0 > lastx {
                self.set_value(row, lastx as u32)?;
                self.set_value(row, 0)?;
            }
        }
        Ok(())
    }

    /// `_TIFFFax3fillruns` into row `y` of the buffer: white runs cleared, black runs set, each
    /// run cut at the row's width (in the run array too, which Group 4 keeps as reference).
    fn fill_row(&mut self, y: usize, this: usize, pa: usize) -> Result<()> {
        let mut end = pa;
        if (end - this) & 1 != 0 {
            let slot = self.runs.get_mut(end).ok_or_else(unknown_runs)?;
            *slot = 0;
            end += 1;
        }
        let lastx = self.lastx as u32;
        let Some(line) = self.buffer.get_mut(y * self.row_bytes..(y + 1) * self.row_bytes) else {
            return Ok(());
        };
        let mut x = 0u32;
        for i in (this..end).step_by(2) {
            for (k, black) in [(i, false), (i + 1, true)] {
                let mut run = self.runs[k];
                if x.wrapping_add(run) > lastx || run > lastx {
                    run = lastx - x;
                    self.runs[k] = run;
                }
                for p in x..x + run {
                    let (byte, bit) = ((p / 8) as usize, 0x80u8 >> (p % 8));
                    if black {
                        line[byte] |= bit;
                    } else {
                        line[byte] &= !bit;
                    }
                }
                x += self.runs[k];
            }
        }
        self.known[y] = true;
        Ok(())
    }

    /// `EXPAND1D`: one row of white and black runs; `Ok(true)` when the row ended (a code
    /// completed it, a bad code or an EOL cut it), `Ok(false)` at the end of the data.
    fn expand_1d(&mut self, bits: &mut Bits<'_>, row: &mut Row, eol_count: &mut u32) -> Result<bool> {
        let t = tables();
        loop {
            // White, then black, each make-up codes until a terminating one.
            for black in [false, true] {
                let (wid, table, term, makeup) = if black {
                    (13, &t.black[..], State::TermB, State::MakeUpB)
                } else {
                    (12, &t.white[..], State::TermW, State::MakeUpW)
                };
                loop {
                    let Some(e) = bits.lookup(wid, table) else {
                        self.cleanup(row)?;
                        return Ok(false);
                    };
                    match e.state {
                        State::Eol => {
                            *eol_count = 1;
                            self.cleanup(row)?;
                            return Ok(true);
                        }
                        s if s == term => {
                            self.set_value(row, e.param)?;
                            break;
                        }
                        s if s == makeup || s == State::MakeUp => {
                            row.a0 = (row.a0 as u32).wrapping_add(e.param) as i32;
                            row.run_length = (row.run_length as u32).wrapping_add(e.param) as i32;
                        }
                        _ => {
                            self.cleanup(row)?;
                            return Ok(true);
                        }
                    }
                }
                if row.a0 >= self.lastx {
                    self.cleanup(row)?;
                    return Ok(true);
                }
            }
            if self.runs[row.pa - 1] == 0 && self.runs[row.pa - 2] == 0 {
                row.pa -= 2;
            }
        }
    }

    /// `Fax3DecodeRLE`: rows of one-dimensional codes, each starting on a byte.
    fn decode_rle(&mut self, data: &[u8], rows: usize) -> Result<()> {
        let mut bits = Bits { data, at: 0, acc: 0, avail: 0 };
        let mut eol_count = 0;
        for y in 0..rows {
            let mut row = Row { this: self.cur, pa: self.cur, a0: 0, run_length: 0 };
            if !self.expand_1d(&mut bits, &mut row, &mut eol_count)? {
                return Err(fail(format!("CCITT modified Huffman data ends in row {y}")));
            }
            self.fill_row(y, row.this, row.pa)?;
            let n = bits.avail & 7;
            bits.clear(n);
        }
        Ok(())
    }

    /// One colour's run in horizontal mode.
    fn horizontal_run(&mut self, bits: &mut Bits<'_>, row: &mut Row, black: bool) -> Result<Run> {
        let t = tables();
        let (wid, table, term, makeup) = if black {
            (13, &t.black[..], State::TermB, State::MakeUpB)
        } else {
            (12, &t.white[..], State::TermW, State::MakeUpW)
        };
        loop {
            let Some(e) = bits.lookup(wid, table) else { return Ok(Run::End) };
            match e.state {
                s if s == term => {
                    self.set_value(row, e.param)?;
                    return Ok(Run::Done);
                }
                s if s == makeup || s == State::MakeUp => {
                    row.a0 = (row.a0 as u32).wrapping_add(e.param) as i32;
                    row.run_length = (row.run_length as u32).wrapping_add(e.param) as i32;
                }
                _ => return Ok(Run::Bad),
            }
        }
    }

    /// `EXPAND2D` against the reference line; `Ok(true)` when the row ended, `Ok(false)` at the
    /// end of the data (runs cleaned up either way).
    fn expand_2d(&mut self, bits: &mut Bits<'_>, row: &mut Row, eol_count: &mut u32) -> Result<bool> {
        let t = tables();
        let lastx = self.lastx;
        let limit = self.reference + self.nruns;
        let mut pb = self.reference;
        let mut b1 = self.runs[pb] as i32;
        pb += 1;
        // CHECK_b1: b1 moved past a0 along the reference line.
        macro_rules! check_b1 {
            () => {
                if row.pa != row.this {
                    while b1 <= row.a0 && b1 < lastx {
                        if pb + 1 >= limit {
                            return Err(fail("CCITT reference line overrun"));
                        }
                        b1 = b1.wrapping_add(self.runs[pb].wrapping_add(self.runs[pb + 1]) as i32);
                        pb += 2;
                    }
                }
            };
        }
        let ended_early = |this: &mut Self, row: &mut Row| -> Result<bool> {
            this.cleanup(row)?;
            Ok(false)
        };
        while row.a0 < lastx {
            if row.pa >= row.this + self.nruns {
                return Err(fail("CCITT row of more changes than libtiff's run array holds"));
            }
            let Some(e) = bits.lookup(7, &t.main) else { return ended_early(self, row) };
            match e.state {
                State::Pass => {
                    check_b1!();
                    if pb + 1 >= limit {
                        return Err(fail("CCITT reference line overrun"));
                    }
                    b1 = b1.wrapping_add(self.runs[pb] as i32);
                    pb += 1;
                    row.run_length = (row.run_length as u32).wrapping_add(b1.wrapping_sub(row.a0) as u32) as i32;
                    row.a0 = b1;
                    b1 = b1.wrapping_add(self.runs[pb] as i32);
                    pb += 1;
                }
                State::Horiz => {
                    let black_first = (row.pa - row.this) & 1 != 0;
                    for black in [black_first, !black_first] {
                        match self.horizontal_run(bits, row, black)? {
                            Run::Done => {}
                            Run::Bad => {
                                self.cleanup(row)?;
                                return Ok(true);
                            }
                            Run::End => return ended_early(self, row),
                        }
                    }
                    check_b1!();
                }
                State::V0 | State::Vr => {
                    check_b1!();
                    let param = if e.state == State::Vr { e.param } else { 0 };
                    self.set_value(row, (b1.wrapping_sub(row.a0) as u32).wrapping_add(param))?;
                    if pb >= limit {
                        return Err(fail("CCITT reference line overrun"));
                    }
                    b1 = b1.wrapping_add(self.runs[pb] as i32);
                    pb += 1;
                }
                State::Vl => {
                    check_b1!();
                    if b1 < (row.a0 as u32).wrapping_add(e.param) as i32 {
                        self.cleanup(row)?;
                        return Ok(true);
                    }
                    self.set_value(row, (b1.wrapping_sub(row.a0) as u32).wrapping_sub(e.param))?;
                    pb = pb.checked_sub(1).ok_or_else(unknown_runs)?;
                    b1 = b1.wrapping_sub(self.runs[pb] as i32);
                }
                State::Ext | State::Eol => {
                    self.runs[row.pa] = lastx.wrapping_sub(row.a0) as u32;
                    row.pa += 1;
                    if e.state == State::Eol {
                        if !bits.need8(4) {
                            return ended_early(self, row);
                        }
                        bits.clear(4);
                        *eol_count = 1;
                    }
                    self.cleanup(row)?;
                    return Ok(true);
                }
                _ => {
                    self.cleanup(row)?;
                    return Ok(true);
                }
            }
        }
        if row.run_length != 0 {
            if row.run_length.wrapping_add(row.a0) < lastx {
                // A final V0 is expected.
                if !bits.need8(1) {
                    return ended_early(self, row);
                }
                if bits.get(1) == 0 {
                    self.cleanup(row)?;
                    return Ok(true);
                }
                bits.clear(1);
            }
            self.set_value(row, 0)?;
        }
        self.cleanup(row)?;
        Ok(true)
    }

    /// `Fax4Decode`: two-dimensional rows, each against the one before (white above the first).
    fn decode_g4(&mut self, data: &[u8], rows: usize) -> Result<()> {
        let mut bits = Bits { data, at: 0, acc: 0, avail: 0 };
        let mut eol_count = 0u32;
        for y in 0..rows {
            let mut row = Row { this: self.cur, pa: self.cur, a0: 0, run_length: 0 };
            let whole = self.expand_2d(&mut bits, &mut row, &mut eol_count)?;
            if !whole || eol_count != 0 {
                // EOFG4: this row filled, the strip's later rows left as they are.
                self.fill_row(y, row.this, row.pa)?;
                return if y != 0 { Ok(()) } else { Err(fail("CCITT Group 4 data ends in its strip's first row")) };
            }
            self.fill_row(y, row.this, row.pa)?;
            // The imaginary change that ends the reference line.
            self.set_value(&mut row, 0)?;
            std::mem::swap(&mut self.cur, &mut self.reference);
        }
        Ok(())
    }
}

/// A run read outside libtiff's run arrays (memory next to them): the bits cannot be known.
fn unknown_runs() -> Error {
    Error::unsupported(FORMAT, "CCITT data that makes libtiff read outside its run arrays")
}
