//! The one table the harness prints: a row per measured quantity, with median, min and max
//! over the runs, and the target it is held to.

use std::time::Duration;

/// What a row's samples measure, which decides how they are printed.
#[derive(Debug, Clone, Copy)]
pub enum Unit {
    /// Milliseconds.
    Ms,
    /// Mebibytes.
    MiB,
}

/// One line of the table: either samples, or a note saying why there are none.
pub struct Row {
    name: String,
    unit: Unit,
    samples: Vec<f64>,
    target: &'static str,
    note: Option<String>,
}

impl Row {
    /// A row with no samples yet.
    pub fn new(name: impl Into<String>, unit: Unit, target: &'static str) -> Row {
        Row {
            name: name.into(),
            unit,
            samples: Vec::new(),
            target,
            note: None,
        }
    }

    /// A row that could not be measured, and why.
    pub fn not_measured(name: impl Into<String>, target: &'static str, why: &str) -> Row {
        Row {
            note: Some(why.to_string()),
            ..Row::new(name, Unit::Ms, target)
        }
    }

    /// Adds a time sample.
    pub fn time(&mut self, sample: Duration) {
        self.samples.push(sample.as_secs_f64() * 1e3);
    }

    /// Adds a memory sample given in KiB.
    pub fn kib(&mut self, sample: u64) {
        self.samples.push(sample as f64 / 1024.0);
    }

    /// Adds a note printed after the numbers (what a reader must know to trust them).
    pub fn note(&mut self, note: impl Into<String>) {
        self.note = Some(note.into());
    }

    /// The median sample, if there is one.
    pub fn median(&self) -> Option<f64> {
        let mut sorted = self.samples.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(sorted[n / 2]),
            _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
        }
    }

    fn cells(&self) -> [String; 4] {
        let min = self.samples.iter().copied().reduce(f64::min);
        let max = self.samples.iter().copied().reduce(f64::max);
        let unit = match self.unit {
            Unit::Ms => "ms",
            Unit::MiB => "MiB",
        };
        let show = |value: Option<f64>| match value {
            Some(value) => format!("{value:.1} {unit}"),
            None => "n/a".to_string(),
        };
        [
            show(self.median()),
            show(min),
            show(max),
            self.samples.len().to_string(),
        ]
    }
}

/// Renders `rows` as a Markdown table (so it pastes straight into PERFORMANCE.md).
pub fn render(rows: &[Row]) -> String {
    let header = ["measurement", "median", "min", "max", "n", "target", "note"];
    let lines: Vec<[String; 7]> = rows
        .iter()
        .map(|row| {
            let [median, min, max, n] = row.cells();
            [
                row.name.clone(),
                median,
                min,
                max,
                n,
                row.target.to_string(),
                row.note.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            lines
                .iter()
                .map(|line| line[column].chars().count())
                .chain([header[column].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let format_line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut table = format_line(header.to_vec());
    let rule: Vec<String> = widths.iter().map(|width| "-".repeat(*width)).collect();
    table.push_str(&format_line(rule.iter().map(String::as_str).collect()));
    for line in &lines {
        table.push_str(&format_line(line.iter().map(String::as_str).collect()));
    }
    table
}
