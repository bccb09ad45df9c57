//! The inputs every model runs on: an image (or 8 of one size, for throughput) at a budget.

/// An input of every model: images (one, or several of one size for throughput) at a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// `IMAGE@BUDGET`, or `IMAGExCOUNT@BUDGET` for a throughput case.
    pub id: &'static str,
    /// What the image column says (the photograph's name and size).
    pub image: &'static str,
    /// Image files (under the bench's images/), encoded in one call.
    pub images: &'static [&'static str],
    pub budget: u32,
}

const BATCH: &[&str] = &[
    "batch_640x480_0.jpg",
    "batch_640x480_1.jpg",
    "batch_640x480_2.jpg",
    "batch_640x480_3.jpg",
    "batch_640x480_4.jpg",
    "batch_640x480_5.jpg",
    "batch_640x480_6.jpg",
    "batch_640x480_7.jpg",
];

/// Every case, in table order.
pub const CASES: &[Case] = &[
    Case { id: "photo_640x480@70", image: "photo_640x480", images: &["photo_640x480.jpg"], budget: 70 },
    Case { id: "photo_640x480@280", image: "photo_640x480", images: &["photo_640x480.jpg"], budget: 280 },
    Case { id: "photo_4000x3000@280", image: "photo_4000x3000", images: &["photo_4000x3000.jpg"], budget: 280 },
    Case { id: "photo_640x480x8@280", image: "photo_640x480", images: BATCH, budget: 280 },
];

impl Case {
    pub fn is_throughput(&self) -> bool {
        self.images.len() > 1
    }
}

/// The case of id `id` (the `--cases` value parser).
pub fn parse_case(id: &str) -> Result<&'static Case, String> {
    CASES.iter().find(|c| c.id == id).ok_or_else(|| {
        let ids: Vec<&str> = CASES.iter().map(|c| c.id).collect();
        format!("unknown case `{id}` (choose among {})", ids.join(", "))
    })
}
