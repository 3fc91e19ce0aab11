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
