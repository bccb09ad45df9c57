//! The fax codes as libtiff's `mkg3states` tabulates them (tif_fax3sm.c): T.4's code lists, and
//! per table every index of the next 7 (modes), 12 (white runs) or 13 (black runs) bits read LSB
//! first mapped to the code those bits start with.

use std::sync::OnceLock;

/// A table entry's state (`mkg3states`' `S_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Null,
    Pass,
    Horiz,
    V0,
    Vr,
    Vl,
    Ext,
    TermW,
    TermB,
    MakeUpW,
    MakeUpB,
    MakeUp,
    Eol,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub(super) state: State,
    pub(super) width: u8,
    pub(super) param: u32,
}

const NULL: Entry = Entry { state: State::Null, width: 0, param: 0 };

pub(super) struct Tables {
    pub(super) main: Vec<Entry>,
    pub(super) white: Vec<Entry>,
    pub(super) black: Vec<Entry>,
}

/// A code as T.4 prints it (first bit first) and what it stands for.
type Code = (&'static str, u32);

const TERM_WHITE: [&str; 64] = [
    "00110101", "000111", "0111", "1000", "1011", "1100", "1110", "1111", "10011", "10100", "00111", "01000", "001000",
    "000011", "110100", "110101", "101010", "101011", "0100111", "0001100", "0001000", "0010111", "0000011", "0000100",
    "0101000", "0101011", "0010011", "0100100", "0011000", "00000010", "00000011", "00011010", "00011011", "00010010",
    "00010011", "00010100", "00010101", "00010110", "00010111", "00101000", "00101001", "00101010", "00101011",
    "00101100", "00101101", "00000100", "00000101", "00001010", "00001011", "01010010", "01010011", "01010100",
    "01010101", "00100100", "00100101", "01011000", "01011001", "01011010", "01011011", "01001010", "01001011",
    "00110010", "00110011", "00110100",
];

const TERM_BLACK: [&str; 64] = [
    "0000110111",
    "010",
    "11",
    "10",
    "011",
    "0011",
    "0010",
    "00011",
    "000101",
    "000100",
    "0000100",
    "0000101",
    "0000111",
    "00000100",
    "00000111",
    "000011000",
    "0000010111",
    "0000011000",
    "0000001000",
    "00001100111",
    "00001101000",
    "00001101100",
    "00000110111",
    "00000101000",
    "00000010111",
    "00000011000",
    "000011001010",
    "000011001011",
    "000011001100",
    "000011001101",
    "000001101000",
    "000001101001",
    "000001101010",
    "000001101011",
    "000011010010",
    "000011010011",
    "000011010100",
    "000011010101",
    "000011010110",
    "000011010111",
    "000001101100",
    "000001101101",
    "000011011010",
    "000011011011",
    "000001010100",
    "000001010101",
    "000001010110",
    "000001010111",
    "000001100100",
    "000001100101",
    "000001010010",
    "000001010011",
    "000000100100",
    "000000110111",
    "000000111000",
    "000000100111",
    "000000101000",
    "000001011000",
    "000001011001",
    "000000101011",
    "000000101100",
    "000001011010",
    "000001100110",
    "000001100111",
];

/// White make-up codes for 64, 128, …, 1728.
const MAKEUP_WHITE: [&str; 27] = [
    "11011",
    "10010",
    "010111",
    "0110111",
    "00110110",
    "00110111",
    "01100100",
    "01100101",
    "01101000",
    "01100111",
    "011001100",
    "011001101",
    "011010010",
    "011010011",
    "011010100",
    "011010101",
    "011010110",
    "011010111",
    "011011000",
    "011011001",
    "011011010",
    "011011011",
    "010011000",
    "010011001",
    "010011010",
    "011000",
    "010011011",
];

/// Black make-up codes for 64, 128, …, 1728.
const MAKEUP_BLACK: [&str; 27] = [
    "0000001111",
    "000011001000",
    "000011001001",
    "000001011011",
    "000000110011",
    "000000110100",
    "000000110101",
    "0000001101100",
    "0000001101101",
    "0000001001010",
    "0000001001011",
    "0000001001100",
    "0000001001101",
    "0000001110010",
    "0000001110011",
    "0000001110100",
    "0000001110101",
    "0000001110110",
    "0000001110111",
    "0000001010010",
    "0000001010011",
    "0000001010100",
    "0000001010101",
    "0000001011010",
    "0000001011011",
    "0000001100100",
    "0000001100101",
];

/// The extended make-up codes of both colours, 1792 to 2560.
const MAKEUP_SHARED: [&str; 13] = [
    "00000001000",
    "00000001100",
    "00000001101",
    "000000010010",
    "000000010011",
    "000000010100",
    "000000010101",
    "000000010110",
    "000000010111",
    "000000011100",
    "000000011101",
    "000000011110",
    "000000011111",
];

/// `mkg3states`' `FillTable`: every index whose low bits are `code` (read first bit first).
fn fill(table: &mut [Entry], codes: &[Code], state: State) {
    for &(bits, param) in codes {
        let width = bits.len() as u32;
        let code = bits.bytes().enumerate().fold(0usize, |c, (i, b)| c | (usize::from(b == b'1') << i));
        for index in (code..table.len()).step_by(1 << width) {
            table[index] = Entry { state, width: width as u8, param };
        }
    }
}

/// The three tables, built once.
pub(super) fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let numbered = |codes: &'static [&'static str], first: u32, step: u32| -> Vec<Code> {
            codes.iter().enumerate().map(|(i, &c)| (c, first + step * i as u32)).collect()
        };
        let mut main = vec![NULL; 128];
        fill(&mut main, &[("0001", 0)], State::Pass);
        fill(&mut main, &[("001", 0)], State::Horiz);
        fill(&mut main, &[("1", 0)], State::V0);
        fill(&mut main, &[("011", 1), ("000011", 2), ("0000011", 3)], State::Vr);
        fill(&mut main, &[("010", 1), ("000010", 2), ("0000010", 3)], State::Vl);
        fill(&mut main, &[("0000001", 0)], State::Ext);
        fill(&mut main, &[("0000000", 0)], State::Eol);
        let mut white = vec![NULL; 1 << 12];
        fill(&mut white, &numbered(&MAKEUP_WHITE, 64, 64), State::MakeUpW);
        fill(&mut white, &numbered(&MAKEUP_SHARED, 1792, 64), State::MakeUp);
        fill(&mut white, &numbered(&TERM_WHITE, 0, 1), State::TermW);
        fill(&mut white, &[("00000000000", 0)], State::Eol);
        let mut black = vec![NULL; 1 << 13];
        fill(&mut black, &numbered(&MAKEUP_BLACK, 64, 64), State::MakeUpB);
        fill(&mut black, &numbered(&MAKEUP_SHARED, 1792, 64), State::MakeUp);
        fill(&mut black, &numbered(&TERM_BLACK, 0, 1), State::TermB);
        fill(&mut black, &[("00000000000", 0)], State::Eol);
        Tables { main, white, black }
    })
}
