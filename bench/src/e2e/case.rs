//! The inputs every model runs on: an image (or 8 of one size, for throughput) at a budget, and
//! the BENCHMARKS.md table each case belongs to.

/// An input of every model: images (one, or several of one size for throughput) at a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// `IMAGE@BUDGET`, or `IMAGExCOUNT@BUDGET` for a throughput case.
    pub id: &'static str,
    /// What the image column says (the photograph's name and size).
    pub image: &'static str,
    /// Image files (under the bench's images/), encoded in one call.
    pub images: &'static [&'static str],
    /// Width and height of each image file, in pixels (`bench_e2e.py make` writes them so).
    pub size: (u32, u32),
    pub budget: u32,
    pub table: Table,
}

/// Which section of BENCHMARKS.md a case's rows go to, each with its own stored measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// Section `e2e`: every side, mlx-vlm included, at the budgets up to 280.
    Standard,
    /// Section `e2e-high-budget`: the budgets documents and OCR ask for (560, 1120), where
    /// attention dominates. The stock mlx-vlm sides would take hours per encode here, so they do
    /// not run; ours stand in as the reference bits (parity's `long-1120` rows prove them equal).
    HighBudget,
}

impl Table {
    /// The BENCHMARKS.md section (and `bench/templates/` file) its rows are rendered into.
    pub fn section(self) -> &'static str {
        match self {
            Table::Standard => "e2e",
            Table::HighBudget => "e2e-high-budget",
        }
    }

    /// The command that measures its cases (all of them) and regenerates its section.
    pub fn command(self) -> String {
        match self {
            Table::Standard => "cargo xtask bench e2e".to_owned(),
            Table::HighBudget => {
                let ids: Vec<&str> = CASES.iter().filter(|c| c.table == self).map(|c| c.id).collect();
                format!("cargo xtask bench e2e --cases {}", ids.join(","))
            }
        }
    }

    /// The file under `target/bench/e2e/` keeping its measurements between runs.
    pub fn store_file(self) -> &'static str {
        match self {
            Table::Standard => "measurements.json",
            Table::HighBudget => "measurements-high-budget.json",
        }
    }
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

const SMALL: (u32, u32) = (640, 480);
const LARGE: (u32, u32) = (4000, 3000);

/// Every case, in table order.
pub const CASES: &[Case] = &[
    Case {
        id: "photo_640x480@70",
        image: "photo_640x480",
        images: &["photo_640x480.jpg"],
        size: SMALL,
        budget: 70,
        table: Table::Standard,
    },
    Case {
        id: "photo_640x480@280",
        image: "photo_640x480",
        images: &["photo_640x480.jpg"],
        size: SMALL,
        budget: 280,
        table: Table::Standard,
    },
    Case {
        id: "photo_4000x3000@280",
        image: "photo_4000x3000",
        images: &["photo_4000x3000.jpg"],
        size: LARGE,
        budget: 280,
        table: Table::Standard,
    },
    Case {
        id: "photo_640x480x8@280",
        image: "photo_640x480",
        images: BATCH,
        size: SMALL,
        budget: 280,
        table: Table::Standard,
    },
    Case {
        id: "photo_4000x3000@560",
        image: "photo_4000x3000",
        images: &["photo_4000x3000.jpg"],
        size: LARGE,
        budget: 560,
        table: Table::HighBudget,
    },
    Case {
        id: "photo_4000x3000@1120",
        image: "photo_4000x3000",
        images: &["photo_4000x3000.jpg"],
        size: LARGE,
        budget: 1120,
        table: Table::HighBudget,
    },
];

impl Case {
    pub fn is_throughput(&self) -> bool {
        self.images.len() > 1
    }

    /// `WxH`, as llama.cpp's driver takes `--source-size`.
    pub fn size_arg(&self) -> String {
        format!("{}x{}", self.size.0, self.size.1)
    }
}

/// The case of id `id` (the `--cases` value parser).
pub fn parse_case(id: &str) -> Result<&'static Case, String> {
    CASES.iter().find(|c| c.id == id).ok_or_else(|| {
        let ids: Vec<&str> = CASES.iter().map(|c| c.id).collect();
        format!("unknown case `{id}` (choose among {})", ids.join(", "))
    })
}
