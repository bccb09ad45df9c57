//! libtiff's bit reader for the fax decoders (`NeedBits8`, `NeedBits16`, `GetBits`, `ClrBits` in
//! tif_fax3.h).

use super::codes::Entry;

/// libtiff's bit reader (`NeedBits8`/`NeedBits16`/`GetBits`/`ClrBits`): bytes enter the
/// accumulator bit-reversed (FillOrder 1 data, which is what the caller hands over), the first
/// bit in bit 0; past the data's end the missing bits read as zeros while any remain.
pub(super) struct Bits<'a> {
    pub(super) data: &'a [u8],
    pub(super) at: usize,
    pub(super) acc: u32,
    pub(super) avail: i32,
}

impl Bits<'_> {
    pub(super) fn push(&mut self) {
        self.acc |= u32::from(self.data[self.at].reverse_bits()) << self.avail;
        self.at += 1;
        self.avail += 8;
    }

    pub(super) fn end(&self) -> bool {
        self.at >= self.data.len()
    }

    /// `NeedBits8(n)`: false where libtiff jumps to its end-of-data label.
    pub(super) fn need8(&mut self, n: i32) -> bool {
        if self.avail < n {
            if self.end() {
                if self.avail == 0 {
                    return false;
                }
                self.avail = n;
            } else {
                self.push();
            }
        }
        true
    }

    /// `NeedBits16(n)`: [`need8`](Self::need8), then a second byte where the first did not
    /// give `n` bits.
    pub(super) fn need16(&mut self, n: i32) -> bool {
        if !self.need8(n) {
            return false;
        }
        if self.avail < n {
            if self.end() {
                self.avail = n;
            } else {
                self.push();
            }
        }
        true
    }

    pub(super) fn get(&self, n: i32) -> u32 {
        self.acc & ((1u32 << n) - 1)
    }

    pub(super) fn clear(&mut self, n: i32) {
        self.avail -= n;
        self.acc = self.acc.checked_shr(n as u32).unwrap_or(0);
    }

    /// `LOOKUP8`/`LOOKUP16`: the entry of the next `wid` bits, consumed by its width; `None` at
    /// the end of the data.
    pub(super) fn lookup(&mut self, wid: i32, table: &[Entry]) -> Option<Entry> {
        let ok = if wid <= 8 { self.need8(wid) } else { self.need16(wid) };
        if !ok {
            return None;
        }
        let entry = table[self.get(wid) as usize];
        self.clear(i32::from(entry.width));
        Some(entry)
    }
}
