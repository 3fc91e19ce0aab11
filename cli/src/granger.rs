//! `sightline granger`: Granger causality between two columns of a CSV file, printed as a
//! table (or JSON with `--json`), with the same numbers as statsmodels'
//! `grangercausalitytests`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sightline_detect::granger::{Differencing, GrangerRequest, GrangerResponse, granger};

/// Arguments of `sightline granger`.
#[derive(Debug, clap::Args)]
pub struct GrangerArgs {
    /// CSV file with a header row; values are numbers, one row per time step (oldest first).
    #[arg(long)]
    pub csv: PathBuf,
    /// Column holding the candidate cause (e.g. a quality metric).
    #[arg(long)]
    pub cause: String,
    /// Column holding the effect (e.g. a business KPI).
    #[arg(long)]
    pub effect: String,
    /// Test lags 1..=max-lag.
    #[arg(long, default_value_t = 4)]
    pub max_lag: usize,
    /// Difference both series until ADF finds them stationary (`auto`) or not at all (`none`,
    /// the statsmodels numbers on the raw series).
    #[arg(long, value_enum, default_value = "none")]
    pub difference: DifferenceArg,
    /// Print the full result as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `--difference` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum DifferenceArg {
    /// Test the series as given.
    None,
    /// Difference until stationary.
    Auto,
}

/// Reads two numeric columns of a CSV file (plain CSV: no quoted commas).
pub fn read_columns(path: &Path, a: &str, b: &str) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<String> = lines
        .next()
        .ok_or_else(|| anyhow::anyhow!("{} is empty", path.display()))?
        .split(',')
        .map(|h| h.trim().trim_matches('"').to_owned())
        .collect();
    let find = |name: &str| {
        header.iter().position(|h| h == name).ok_or_else(|| {
            anyhow::anyhow!(
                "no column {name:?} in {} (columns: {})",
                path.display(),
                header.join(", ")
            )
        })
    };
    let (ia, ib) = (find(a)?, find(b)?);
    let (mut xa, mut xb) = (Vec::new(), Vec::new());
    for (n, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let get = |i: usize, name: &str| -> anyhow::Result<f64> {
            let cell = cells
                .get(i)
                .ok_or_else(|| anyhow::anyhow!("row {} has no {name} cell", n + 2))?;
            cell.trim_matches('"')
                .parse::<f64>()
                .map_err(|_| anyhow::anyhow!("row {}: {name} = {cell:?} is not a number", n + 2))
        };
        xa.push(get(ia, a)?);
        xb.push(get(ib, b)?);
    }
    Ok((xa, xb))
}

/// Renders the human-readable table.
pub fn table(args: &GrangerArgs, r: &GrangerResponse) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Granger causality: does {:?} help predict {:?}? ({} observations{})",
        args.cause,
        args.effect,
        r.nobs,
        if r.differenced > 0 {
            format!(", differenced {}x", r.differenced)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "{:>4}  {:>10} {:>10}  {:>10} {:>10}  {:>10} {:>10}  {:>10} {:>10}  {:>8}",
        "lag", "ssr F", "p", "ssr chi2", "p", "LR chi2", "p", "params F", "p", "part. R2"
    );
    for l in &r.lags {
        let _ = writeln!(
            s,
            "{:>4}  {:>10.4} {:>10.3e}  {:>10.4} {:>10.3e}  {:>10.4} {:>10.3e}  {:>10.4} {:>10.3e}  {:>8.4}",
            l.lag,
            l.ssr_ftest.f,
            l.ssr_ftest.p,
            l.ssr_chi2test.chi2,
            l.ssr_chi2test.p,
            l.lrtest.chi2,
            l.lrtest.p,
            l.params_ftest.f,
            l.params_ftest.p,
            l.partial_r2
        );
    }
    let _ = writeln!(
        s,
        "selected lag: AIC {}, BIC {}",
        r.selected_lag.aic, r.selected_lag.bic
    );
    if let Some(last) = r.stationarity.last() {
        let verdict =
            |v: &sightline_detect::granger::StationarityVerdict| match (&v.adf, v.stationary) {
                (Some(adf), Some(st)) => format!(
                    "{} (ADF {:.3}, p {:.3})",
                    if st { "stationary" } else { "not stationary" },
                    adf.statistic,
                    adf.pvalue
                ),
                _ => format!("not tested ({})", v.error.as_deref().unwrap_or("unknown")),
            };
        let _ = writeln!(
            s,
            "stationarity: cause {}; effect {}",
            verdict(&last.cause),
            verdict(&last.effect)
        );
    }
    s
}

/// Runs the command; returns what to print.
pub fn run(args: &GrangerArgs) -> anyhow::Result<String> {
    let (cause, effect) = read_columns(&args.csv, &args.cause, &args.effect)?;
    let req = GrangerRequest {
        cause,
        effect,
        max_lag: args.max_lag,
        difference: match args.difference {
            DifferenceArg::None => Differencing::None,
            DifferenceArg::Auto => Differencing::Auto,
        },
        alpha: 0.05,
    };
    let res = granger(&req)?;
    if args.json {
        Ok(serde_json::to_string_pretty(&res)?)
    } else {
        Ok(table(args, &res))
    }
}
