//! The hallucination index on the generated labelled sets must reach AUROC >= 0.80 on the
//! standard set and beat both baselines (response length, mean token entropy) on every set,
//! on every metric we report. Print the table with
//! `cargo run -p sightline-detect --example hallucination_eval --release`.
use sightline_detect::eval::{evaluate_all, format_table};

#[test]
fn index_beats_baselines_on_every_generated_set() {
    let results = evaluate_all().expect("evaluation runs");
    eprintln!("{}", format_table(&results));
    assert!(results.len() >= 2);
    for r in &results {
        for (name, base) in [
            ("length", &r.length_baseline),
            ("mean entropy", &r.entropy_baseline),
        ] {
            assert!(
                r.index.auroc > base.auroc,
                "{}: AUROC {} <= {name} {}",
                r.set,
                r.index.auroc,
                base.auroc
            );
            assert!(
                r.index.auc_pr > base.auc_pr,
                "{}: AUC-PR {} <= {name} {}",
                r.set,
                r.index.auc_pr,
                base.auc_pr
            );
            assert!(
                r.index.precision_at_flag_rate > base.precision_at_flag_rate,
                "{}: P@10% {} <= {name} {}",
                r.set,
                r.index.precision_at_flag_rate,
                base.precision_at_flag_rate
            );
        }
        assert!(
            r.positives > r.examples / 4 && r.positives < r.examples * 3 / 4,
            "{}: label balance",
            r.set
        );
    }
    let main = results
        .iter()
        .find(|r| r.set == "generated")
        .expect("generated set");
    assert!(
        main.index.auroc >= 0.80,
        "AUROC {} < 0.80",
        main.index.auroc
    );
}
