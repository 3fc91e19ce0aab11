//! Reading the NAB corpus (CSV `timestamp,value` + `labels/combined_windows.json`).

use std::collections::BTreeMap;
use std::path::Path;

/// One NAB file.
pub struct NabSeries {
    pub name: String,
    pub timestamps: Vec<i64>,
    pub values: Vec<f64>,
    pub windows: Vec<(usize, usize)>,
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` to Unix seconds.
pub fn parse_ts(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = s.split_once(' ')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (y, mo, da) = (d.next()??, d.next()??, d.next()??);
    let time = time.split('.').next()?;
    let mut t = time.split(':').map(|x| x.parse::<i64>().ok());
    let (h, mi, se) = (t.next()??, t.next()??, t.next()??);
    Some(days_from_civil(y, mo, da) * 86_400 + h * 3600 + mi * 60 + se)
}

pub fn load(root: &Path) -> Result<Vec<NabSeries>, String> {
    let labels_text = std::fs::read_to_string(root.join("labels/combined_windows.json"))
        .map_err(|e| e.to_string())?;
    let labels: BTreeMap<String, Vec<Vec<String>>> =
        serde_json::from_str(&labels_text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (name, wins) in labels {
        let text = std::fs::read_to_string(root.join("data").join(&name))
            .map_err(|e| format!("{name}: {e}"))?;
        let mut timestamps = Vec::new();
        let mut values = Vec::new();
        for line in text.lines().skip(1) {
            let Some((ts, v)) = line.split_once(',') else {
                continue;
            };
            let (Some(ts), Ok(v)) = (parse_ts(ts), v.trim().parse::<f64>()) else {
                continue;
            };
            timestamps.push(ts);
            values.push(v);
        }
        let mut windows = Vec::new();
        for w in wins {
            let (Some(a), Some(b)) = (
                w.first().and_then(|s| parse_ts(s)),
                w.get(1).and_then(|s| parse_ts(s)),
            ) else {
                continue;
            };
            let start = timestamps.partition_point(|t| *t < a);
            let end = timestamps.partition_point(|t| *t <= b);
            if end > start {
                windows.push((start, end - 1));
            }
        }
        out.push(NabSeries {
            name,
            timestamps,
            values,
            windows,
        });
    }
    Ok(out)
}

/// Anomaly scores a published NAB detector wrote for `series` (NAB's
/// `results/<detector>/<dir>/<detector>_<file>.csv`, column `anomaly_score`), aligned by row.
pub fn load_published(
    results: &Path,
    detector: &str,
    series: &NabSeries,
) -> Result<Vec<f64>, String> {
    load_published_column(results, detector, series, "anomaly_score")
}

/// Column `column` of a published NAB detector's results for `series` (e.g. `raw_score`).
pub fn load_published_column(
    results: &Path,
    detector: &str,
    series: &NabSeries,
    column: &str,
) -> Result<Vec<f64>, String> {
    let (dir, file) = series.name.rsplit_once('/').unwrap_or(("", &series.name));
    let path = results
        .join(detector)
        .join(dir)
        .join(format!("{detector}_{file}"));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header = lines.next().ok_or("empty results file")?;
    let col = header
        .split(',')
        .position(|h| h.trim() == column)
        .ok_or_else(|| format!("{}: no {column} column", path.display()))?;
    let mut scores = Vec::with_capacity(series.values.len());
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        let ts = cells.first().and_then(|c| parse_ts(c));
        if ts != series.timestamps.get(i).copied() {
            return Err(format!(
                "{}: row {i} does not match the corpus",
                path.display()
            ));
        }
        let v = cells
            .get(col)
            .and_then(|c| c.trim().parse::<f64>().ok())
            .ok_or_else(|| format!("{}: row {i}: bad {column}", path.display()))?;
        scores.push(v);
    }
    if scores.len() != series.values.len() {
        return Err(format!(
            "{}: {} rows, corpus has {}",
            path.display(),
            scores.len(),
            series.values.len()
        ));
    }
    Ok(scores)
}
