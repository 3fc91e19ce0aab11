//! Print the hallucination-index evaluation table (index vs. length and mean-entropy baselines
//! on the generated labelled sets).
//!
//! `cargo run -p sightline-detect --example hallucination_eval --release [-- --dev] [-- --json]`
//! `--dev` evaluates the development split (the one the weights were adjusted on) instead.

use sightline_detect::eval::{dev_set, evaluate, evaluate_all, format_table, generate};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let results = if args.iter().any(|a| a == "--dev") {
        evaluate("dev", &generate(&dev_set())).map(|r| vec![r])
    } else {
        evaluate_all()
    };
    match results {
        Ok(r) if args.iter().any(|a| a == "--json") => {
            println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
        }
        Ok(r) => print!("{}", format_table(&r)),
        Err(e) => {
            eprintln!("evaluation failed: {e}");
            std::process::exit(1);
        }
    }
}
