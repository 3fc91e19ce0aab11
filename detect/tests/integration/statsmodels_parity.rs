//! Parity with statsmodels: Granger causality (all four statistics and p-values per lag) and
//! ADF (statistic, p-value, used lag, nobs) on >= 30 deterministic datasets produced by
//! `tests/python/granger_parity.py`.
//!
//! The interpreter comes from `SIGHTLINE_PYTHON` (a Python with
//! `tests/python/requirements.txt` installed). Without it the test prints a loud skip
//! message and passes, unless `SIGHTLINE_REQUIRE_PYTHON=1`, in which case it fails (CI sets
//! both).
use serde_json::Value;
use sightline_detect::adf::{AdfOptions, adfuller};
use sightline_detect::granger::granger_tests;
use std::path::Path;
use std::process::Command;

const REL_TOL: f64 = 1e-8;
const P_ABS_TOL: f64 = 1e-12;

#[derive(Default)]
struct MaxErr {
    worst_rel: f64,
    worst_abs_p: f64,
    compared: usize,
}

impl MaxErr {
    fn check(
        &mut self,
        what: &str,
        ours: f64,
        theirs: f64,
        is_p: bool,
        failures: &mut Vec<String>,
    ) {
        self.compared += 1;
        let diff = (ours - theirs).abs();
        let rel = if theirs == 0.0 {
            if diff == 0.0 { 0.0 } else { f64::INFINITY }
        } else {
            diff / theirs.abs()
        };
        let ok = diff == 0.0 || rel <= REL_TOL || (is_p && diff <= P_ABS_TOL);
        if is_p && rel > REL_TOL {
            self.worst_abs_p = self.worst_abs_p.max(diff);
        } else {
            self.worst_rel = self.worst_rel.max(rel);
        }
        if !ok || !ours.is_finite() {
            failures.push(format!(
                "{what}: ours {ours:e} statsmodels {theirs:e} (rel {rel:e})"
            ));
        }
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().expect("number")
}

fn series(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(f).collect()
}

#[test]
fn granger_and_adf_match_statsmodels() {
    let Some(python) = std::env::var_os("SIGHTLINE_PYTHON") else {
        let required = std::env::var("SIGHTLINE_REQUIRE_PYTHON").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "SIGHTLINE_REQUIRE_PYTHON=1 but SIGHTLINE_PYTHON is not set: cannot run the statsmodels parity test"
        );
        eprintln!(
            "\n{}\n!!! SKIPPED statsmodels parity test: set SIGHTLINE_PYTHON to a Python with\n!!! detect/tests/python/requirements.txt installed (SIGHTLINE_REQUIRE_PYTHON=1 makes this fatal)\n{}\n",
            "!".repeat(78),
            "!".repeat(78)
        );
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/granger_parity.py");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("parity.json");
    let status = Command::new(&python)
        .arg(&script)
        .arg(&out)
        .status()
        .expect("run python");
    assert!(status.success(), "reference script failed: {status}");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(&out).expect("read json")).expect("parse json");
    let datasets = doc["datasets"].as_array().expect("datasets");
    assert!(datasets.len() >= 30, "only {} datasets", datasets.len());

    let mut failures = Vec::new();
    let (mut stat_err, mut p_err, mut adf_stat_err, mut adf_p_err) = (
        MaxErr::default(),
        MaxErr::default(),
        MaxErr::default(),
        MaxErr::default(),
    );
    let mut refused_both = 0;
    for d in datasets {
        let name = d["name"].as_str().unwrap_or("?");
        let cause = series(&d["cause"]);
        let effect = series(&d["effect"]);
        let max_lag = d["max_lag"].as_u64().expect("max_lag") as usize;
        let reference = &d["granger"];
        match (
            granger_tests(&cause, &effect, max_lag),
            reference.get("error"),
        ) {
            (Err(_), Some(_)) => refused_both += 1,
            (Ok(_), Some(e)) => {
                failures.push(format!("{name}: statsmodels refused ({e}) but we did not"))
            }
            (Err(e), None) => {
                failures.push(format!("{name}: we refused ({e}) but statsmodels did not"))
            }
            (Ok(ours), None) => {
                let lags = reference["lags"].as_array().expect("lags");
                assert_eq!(lags.len(), ours.lags.len(), "{name}");
                for (o, r) in ours.lags.iter().zip(lags) {
                    let tag = |t: &str| format!("{name} lag {} {t}", o.lag);
                    let (sf, sc, lr, pf) = (
                        &r["ssr_ftest"],
                        &r["ssr_chi2test"],
                        &r["lrtest"],
                        &r["params_ftest"],
                    );
                    stat_err.check(
                        &tag("ssr_ftest F"),
                        o.ssr_ftest.f,
                        f(&sf[0]),
                        false,
                        &mut failures,
                    );
                    p_err.check(
                        &tag("ssr_ftest p"),
                        o.ssr_ftest.p,
                        f(&sf[1]),
                        true,
                        &mut failures,
                    );
                    assert_eq!(o.ssr_ftest.df_denom as f64, f(&sf[2]), "{name}");
                    assert_eq!(o.ssr_ftest.df_num as f64, f(&sf[3]), "{name}");
                    stat_err.check(
                        &tag("ssr_chi2test chi2"),
                        o.ssr_chi2test.chi2,
                        f(&sc[0]),
                        false,
                        &mut failures,
                    );
                    p_err.check(
                        &tag("ssr_chi2test p"),
                        o.ssr_chi2test.p,
                        f(&sc[1]),
                        true,
                        &mut failures,
                    );
                    assert_eq!(o.ssr_chi2test.df as f64, f(&sc[2]), "{name}");
                    stat_err.check(
                        &tag("lrtest chi2"),
                        o.lrtest.chi2,
                        f(&lr[0]),
                        false,
                        &mut failures,
                    );
                    p_err.check(&tag("lrtest p"), o.lrtest.p, f(&lr[1]), true, &mut failures);
                    assert_eq!(o.lrtest.df as f64, f(&lr[2]), "{name}");
                    stat_err.check(
                        &tag("params_ftest F"),
                        o.params_ftest.f,
                        f(&pf[0]),
                        false,
                        &mut failures,
                    );
                    p_err.check(
                        &tag("params_ftest p"),
                        o.params_ftest.p,
                        f(&pf[1]),
                        true,
                        &mut failures,
                    );
                    assert_eq!(o.params_ftest.df_denom as f64, f(&pf[2]), "{name}");
                    assert_eq!(o.params_ftest.df_num as f64, f(&pf[3]), "{name}");
                }
            }
        }
        for (role, s) in [("cause", &cause), ("effect", &effect)] {
            let reference = &d["adf"][role];
            match (adfuller(s, &AdfOptions::default()), reference.get("error")) {
                (Err(_), Some(_)) => {}
                (Ok(_), Some(e)) => failures.push(format!(
                    "{name} {role}: adfuller refused ({e}) but we did not"
                )),
                (Err(e), None) => failures.push(format!(
                    "{name} {role}: we refused ({e}) but adfuller did not"
                )),
                (Ok(o), None) => {
                    let tag = format!("{name} {role} adf");
                    if o.used_lag as u64 != reference["usedlag"].as_u64().unwrap_or(u64::MAX) {
                        failures.push(format!(
                            "{tag}: usedlag ours {} statsmodels {}",
                            o.used_lag, reference["usedlag"]
                        ));
                        continue;
                    }
                    assert_eq!(
                        o.nobs as u64,
                        reference["nobs"].as_u64().unwrap_or(0),
                        "{tag}"
                    );
                    adf_stat_err.check(
                        &format!("{tag} statistic"),
                        o.statistic,
                        f(&reference["statistic"]),
                        false,
                        &mut failures,
                    );
                    adf_p_err.check(
                        &format!("{tag} pvalue"),
                        o.pvalue,
                        f(&reference["pvalue"]),
                        true,
                        &mut failures,
                    );
                    adf_stat_err.check(
                        &format!("{tag} icbest"),
                        o.icbest.unwrap_or(f64::NAN),
                        f(&reference["icbest"]),
                        false,
                        &mut failures,
                    );
                    let cv = &reference["critical_values"];
                    adf_stat_err.check(
                        &format!("{tag} crit 5%"),
                        o.critical_values.five_pct,
                        f(&cv["5%"]),
                        false,
                        &mut failures,
                    );
                }
            }
        }
    }
    eprintln!(
        "statsmodels parity ({}, {} datasets, {refused_both} refused by both):",
        doc["versions"],
        datasets.len()
    );
    eprintln!(
        "  granger statistics: {} compared, max rel err {:e}",
        stat_err.compared, stat_err.worst_rel
    );
    eprintln!(
        "  granger p-values:   {} compared, max rel err {:e}, max abs err where rel > tol {:e}",
        p_err.compared, p_err.worst_rel, p_err.worst_abs_p
    );
    eprintln!(
        "  adf statistic/ic/crit: {} compared, max rel err {:e}",
        adf_stat_err.compared, adf_stat_err.worst_rel
    );
    eprintln!(
        "  adf p-values:       {} compared, max rel err {:e}, max abs err where rel > tol {:e}",
        adf_p_err.compared, adf_p_err.worst_rel, adf_p_err.worst_abs_p
    );
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(stat_err.compared >= 30 * 4, "too few comparisons");
}
