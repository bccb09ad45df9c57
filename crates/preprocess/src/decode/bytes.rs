//! Fixed-width integers read from a byte slice at an offset, little- or big-endian: `None`
//! when the slice ends before the field does (no offset arithmetic can overflow).

/// The `u16` at `b[at..at + 2]`, little-endian.
pub(crate) fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(field(b, at)?))
}

/// The `u32` at `b[at..at + 4]`, little-endian.
pub(crate) fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(field(b, at)?))
}

/// The `u16` at `b[at..at + 2]`, big-endian.
pub(crate) fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(field(b, at)?))
}

/// The `u32` at `b[at..at + 4]`, big-endian.
pub(crate) fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(field(b, at)?))
}

fn field<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_in_either_order_and_stop_at_the_end() {
        let b = [0x01, 0x02, 0x03, 0x04, 0x05];
        assert_eq!(le16(&b, 0), Some(0x0201));
        assert_eq!(be16(&b, 3), Some(0x0405));
        assert_eq!(le32(&b, 1), Some(0x0504_0302));
        assert_eq!(be32(&b, 0), Some(0x0102_0304));
        assert_eq!(le32(&b, 2), None);
        assert_eq!(be16(&b, 4), None);
        assert_eq!(le16(&b, usize::MAX), None);
    }
}
