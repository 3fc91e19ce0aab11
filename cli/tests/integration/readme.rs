//! The README's examples, copy-pasted: every ` ```sh ` block whose first line is
//! [`MARKER`] runs under bash, as written, against a running `sightline demo` (its address in
//! place of `localhost:4318`, the built `sightline` first on `PATH`). Every `curl` and
//! `sightline` command in it must succeed and answer something: JSON that is not an error
//! and, where it holds result arrays, not only empty ones; for `sightline query`, the same
//! command with `--json` is held to that too, so an empty table fails.

use std::process::Command;

use super::demo::Demo;

/// The first line of a README block that runs against the demo.
const MARKER: &str = "# against `sightline demo`";

/// The README's runnable blocks, with the line each starts on.
fn blocks(readme: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut lines = readme.lines().enumerate();
    while let Some((_, line)) = lines.next() {
        if line.trim_end() != "```sh" {
            continue;
        }
        let mut block = Vec::new();
        let mut start = 0;
        for (n, l) in lines.by_ref() {
            if l.trim_end() == "```" {
                break;
            }
            if block.is_empty() {
                start = n + 1;
            }
            block.push(l);
        }
        if block.first().is_some_and(|l| l.starts_with(MARKER)) {
            out.push((start, block.join("\n")));
        }
    }
    out
}

/// Wraps `curl` and `sightline` in checks; the README's text runs after it unchanged.
const PRELUDE: &str = r#"set -euo pipefail
fail() { echo "README example failed: $*" >&2; exit 1; }
# JSON that is not an error, and whose arrays (if it has any) are not all empty.
has_data() {
  jq -e 'if type == "object" and .status == "error" then false
         else ([.. | arrays] | length == 0) or ([.. | arrays | select(length > 0)] | length > 0)
         end' >/dev/null 2>&1 <<<"$1"
}
curl() {
  local out
  out=$(command curl --silent --show-error --fail-with-body "$@") || fail "curl $*: $out"
  has_data "$out" || fail "curl $*: nothing in ${out:0:600}"
  printf '%s\n' "$out"
}
sightline() {
  local out
  out=$(command sightline "$@") || fail "sightline $*"
  [ -n "$out" ] || fail "sightline $*: no output"
  case "$out" in "no "*) fail "sightline $*: $out" ;; esac
  case " $* " in *" --help "* | *" -h "*) ;; *)
    if [ "$1" = query ]; then
      local json
      json=$(command sightline "$@" --json) || fail "sightline $* --json"
      has_data "$json" || fail "sightline $*: nothing in ${json:0:600}"
    fi ;;
  esac
  printf '%s\n' "$out"
}
"#;

fn tool(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn readme_examples_run_against_the_demo() {
    if !tool("jq") || !tool("curl") {
        assert!(
            std::env::var("SIGHTLINE_REQUIRE_SHELL_TOOLS").as_deref() != Ok("1"),
            "SIGHTLINE_REQUIRE_SHELL_TOOLS=1 but jq or curl is missing"
        );
        eprintln!("\n*** SKIPPED: the README examples need jq and curl ***\n");
        return;
    }
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let blocks = blocks(&readme);
    assert!(
        blocks.len() >= 3,
        "README.md has {} blocks marked {MARKER:?}",
        blocks.len()
    );
    // Six hours of history ending now, as `sightline demo` makes them (a day by default).
    let mut demo = Demo::start(&["--days", "0.25", "--seed", "11"]);
    demo.wait_for_analysis();
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_sightline"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let work = tempfile::tempdir().unwrap();
    for (line, block) in &blocks {
        let script = format!(
            "{PRELUDE}\n{}\n",
            block.replace("localhost:4318", &demo.http_addr.to_string())
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(work.path())
            .env("PATH", &path)
            .env("SIGHTLINE_URL", format!("http://{}", demo.http_addr))
            .env_remove("SIGHTLINE_TOKEN")
            .env_remove("SIGHTLINE_TENANT")
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(
            out.status.success(),
            "README.md block at line {line} failed:\n{block}\n--- stderr\n{stderr}\n--- stdout\n{stdout}"
        );
        eprintln!(
            "README.md block at line {line}: ok ({} bytes out)",
            stdout.len()
        );
    }
    demo.stop();
}

#[test]
fn marked_blocks_are_found() {
    let text = "x\n```sh\n# against `sightline demo`: a\ncurl -s localhost:4318/x\n```\n```sh\ncargo build\n```\n";
    assert_eq!(
        blocks(text),
        vec![(
            3,
            "# against `sightline demo`: a\ncurl -s localhost:4318/x".to_owned()
        )]
    );
}
