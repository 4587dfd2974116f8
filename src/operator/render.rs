//! How `zero tasks` shows records and reports to a person (tables, `key: value` lines) and to a
//! script (JSON, the record's own field names).

use std::io::{self, Write};
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::runtime::{GcReport, Stopped, TaskRecord};

/// Writes `value` as pretty JSON and a newline.
pub(crate) fn json(value: &impl Serialize, out: &mut impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
}

/// The `list` table: one task per line, aligned columns, the command or name last (it is the
/// one column of unbounded width).
pub(crate) fn table(records: &[TaskRecord], out: &mut impl Write) -> io::Result<()> {
    if records.is_empty() {
        return writeln!(out, "no tasks");
    }
    let header = [
        "ID", "KIND", "STATUS", "EXIT", "STARTED", "DURATION", "RUN", "NAME",
    ];
    let rows: Vec<[String; 8]> = records
        .iter()
        .map(|record| {
            [
                record.id.to_string(),
                record.kind.as_str().to_string(),
                record.status.as_str().to_string(),
                exit(record),
                started(record),
                duration(record),
                record.run_id.to_string(),
                record.kind.label().to_string(),
            ]
        })
        .collect();
    aligned(header, &rows, out)
}

/// `header` and `rows` as aligned columns, the last one (of unbounded width) unpadded.
pub(crate) fn aligned<const N: usize>(
    header: [&str; N],
    rows: &[[String; N]],
    out: &mut impl Write,
) -> io::Result<()> {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header = header.map(str::to_string);
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(widths).take(N - 1) {
            line.push_str(&format!("{cell:<width$}  "));
        }
        line.push_str(&row[N - 1]);
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// `show`: the record as aligned `key: value` lines, empty fields left out.
pub(crate) fn show(record: &TaskRecord, out: &mut impl Write) -> io::Result<()> {
    let optional = |value: Option<String>| value.unwrap_or_default();
    let lines = [
        ("id", record.id.to_string()),
        ("kind", record.kind.as_str().to_string()),
        (
            match record.kind {
                crate::runtime::TaskKind::Specialist { .. } => "name",
                crate::runtime::TaskKind::Shell { .. } => "command",
            },
            record.kind.label().to_string(),
        ),
        ("description", optional(record.description.clone())),
        ("status", record.status.as_str().to_string()),
        (
            "exit code",
            optional(record.exit_code.map(|c| c.to_string())),
        ),
        ("signal", optional(record.signal.map(|s| s.to_string()))),
        ("reason", optional(record.reason.clone())),
        ("run", record.run_id.to_string()),
        ("pid", optional(record.pid.map(|p| p.to_string()))),
        ("started", started(record)),
        (
            "ended",
            optional(record.ended_at.as_deref().and_then(timestamp)),
        ),
        ("duration", duration(record)),
        ("output", record.output_path.display().to_string()),
    ];
    for (key, value) in lines.iter().filter(|(_, value)| !value.is_empty()) {
        writeln!(out, "{:<12} {value}", format!("{key}:"))?;
    }
    Ok(())
}

/// `stop`: what became of the task.
pub(crate) fn stopped(stopped: &Stopped, out: &mut impl Write) -> io::Result<()> {
    let record = &stopped.record;
    let status = record.status.as_str();
    if stopped.stopped_here {
        return writeln!(out, "{}: {status}", record.id);
    }
    let why = match (&record.reason, record.exit_code, record.signal) {
        (Some(reason), _, _) => format!(" ({reason})"),
        (None, Some(code), _) => format!(" (exit code {code})"),
        (None, None, Some(signal)) => format!(" (signal {signal})"),
        (None, None, None) => String::new(),
    };
    writeln!(out, "{}: already over: {status}{why}", record.id)
}

/// `gc`: what went (or would go).
pub(crate) fn gc(report: &GcReport, dry_run: bool, out: &mut impl Write) -> io::Result<()> {
    let verb = if dry_run { "would delete" } else { "deleted" };
    for record in &report.tasks {
        writeln!(
            out,
            "{verb} {} ({}, {})",
            record.id,
            record.status.as_str(),
            record.kind.label()
        )?;
    }
    for leftover in &report.leftovers {
        writeln!(out, "{verb} {}", leftover.display())?;
    }
    writeln!(
        out,
        "{verb} {} task(s) and {} run leftover(s), {} bytes",
        report.tasks.len(),
        report.leftovers.len(),
        report.bytes
    )
}

/// `gc --json`: ids and paths rather than whole records.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GcJson {
    dry_run: bool,
    tasks: Vec<String>,
    leftovers: Vec<PathBuf>,
    bytes: u64,
}

impl GcJson {
    /// The JSON shape of `report`.
    pub(crate) fn new(report: &GcReport, dry_run: bool) -> Self {
        GcJson {
            dry_run,
            tasks: report.tasks.iter().map(|r| r.id.to_string()).collect(),
            leftovers: report.leftovers.clone(),
            bytes: report.bytes,
        }
    }
}

/// The exit code, or the signal, or `-`.
fn exit(record: &TaskRecord) -> String {
    match (record.exit_code, record.signal) {
        (Some(code), _) => code.to_string(),
        (None, Some(signal)) => format!("sig {signal}"),
        (None, None) => "-".to_string(),
    }
}

fn started(record: &TaskRecord) -> String {
    timestamp(&record.started_at).unwrap_or_else(|| record.started_at.clone())
}

/// An RFC 3339 time as `YYYY-MM-DD HH:MM:SS` (UTC).
pub(crate) fn timestamp(text: &str) -> Option<String> {
    Some(parse(text)?.format("%Y-%m-%d %H:%M:%S").to_string())
}

fn parse(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|time| time.with_timezone(&Utc))
}

/// From start to end, or to now while running; `-` when unknown (ended without an end time).
fn duration(record: &TaskRecord) -> String {
    let end = match &record.ended_at {
        Some(ended) => parse(ended),
        None if record.status.is_terminal() => None,
        None => Some(Utc::now()),
    };
    match (parse(&record.started_at), end) {
        (Some(start), Some(end)) => human((end - start).num_milliseconds().max(0)),
        _ => "-".to_string(),
    }
}

/// Milliseconds as `850ms`, `12.3s`, `3m04s`, `2h05m` or `3d04h`.
fn human(millis: i64) -> String {
    let seconds = millis / 1000;
    match seconds {
        0 => format!("{millis}ms"),
        1..60 => format!("{}.{}s", seconds, (millis % 1000) / 100),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        3600..86_400 => format!("{}h{:02}m", seconds / 3600, seconds % 3600 / 60),
        _ => format!("{}d{:02}h", seconds / 86_400, seconds % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(human(850), "850ms");
        assert_eq!(human(12_345), "12.3s");
        assert_eq!(human(184_000), "3m04s");
        assert_eq!(human(7_500_000), "2h05m");
        assert_eq!(human(273_600_000), "3d04h");
    }
}
