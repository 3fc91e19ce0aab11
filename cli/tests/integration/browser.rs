//! A headless Chromium for the web UI's tests, driven over the W3C WebDriver protocol
//! (Debian's `chromium` and `chromium-driver`; nothing downloads a browser). The tests mostly
//! read the page through [`Browser::eval`] (one script returning JSON) and wait with
//! [`Browser::wait_for`], so what they assert on is what the DOM shows.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use super::common::free_addr;

/// Where the browser and its driver are, when both are installed.
pub fn installed() -> Option<(PathBuf, PathBuf)> {
    let find = |names: &[&str]| {
        names
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .or_else(|| {
                names.iter().find_map(|n| {
                    let out = Command::new("which").arg(n).output().ok()?;
                    let p = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                    (!p.is_empty()).then(|| PathBuf::from(p))
                })
            })
    };
    let browser = find(&["/usr/bin/chromium", "chromium", "chromium-browser"])?;
    let driver = find(&["/usr/bin/chromedriver", "chromedriver"])?;
    Some((browser, driver))
}

/// One request to the driver; chromedriver keeps connections open whatever the request says,
/// so the answer is read by its `Content-Length`. Returns the status and the body.
fn webdriver(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut len = 0;
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut out = vec![0; len];
    r.read_exact(&mut out)?;
    Ok((status, out))
}

/// One browser session (its driver process is killed on drop).
pub struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
    shots: PathBuf,
}

impl Browser {
    /// Starts the driver and a headless session with a 1400x1000 window; screenshots go to
    /// `shots`.
    pub fn start(browser: &Path, driver: &Path, shots: &Path) -> Browser {
        let addr = free_addr();
        let child = Command::new(driver)
            .arg(format!("--port={}", addr.port()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromedriver");
        let t0 = Instant::now();
        while webdriver(addr, "GET", "/status", b"").is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": browser.to_string_lossy(),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,1000"]
            }
        }}});
        let mut b = Browser {
            driver: child,
            addr,
            session: String::new(),
            shots: shots.to_owned(),
        };
        let v = b.call("POST", "/session", Some(&caps));
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session in {v}"))
            .to_owned();
        std::fs::create_dir_all(shots).unwrap();
        b
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let (status, res) = webdriver(self.addr, method, path, body.as_bytes())
            .unwrap_or_else(|e| panic!("webdriver {method} {path}: {e}"));
        let v: Value = serde_json::from_slice(&res)
            .unwrap_or_else(|e| panic!("webdriver {method} {path}: {e}"));
        assert!(
            status == 200,
            "webdriver {method} {path}: HTTP {status} {v}"
        );
        v["value"].clone()
    }

    fn session_path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// Opens `url`.
    pub fn open(&self, url: &str) {
        self.call(
            "POST",
            &self.session_path("/url"),
            Some(&json!({"url": url})),
        );
    }

    /// Runs `script` (a function body; `return` a JSON-able value) in the page.
    pub fn eval(&self, script: &str) -> Value {
        self.call(
            "POST",
            &self.session_path("/execute/sync"),
            Some(&json!({"script": script, "args": []})),
        )
    }

    /// Waits (up to 30 s) until `script` returns something truthy, and returns it.
    pub fn wait_for(&self, what: &str, script: &str) -> Value {
        let t0 = Instant::now();
        loop {
            let v = self.eval(script);
            let truthy = !matches!(&v, Value::Null | Value::Bool(false))
                && v.as_array().is_none_or(|a| !a.is_empty())
                && v.as_str().is_none_or(|s| !s.is_empty());
            if truthy {
                return v;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                let text = self.eval("return document.body ? document.body.innerText : ''");
                let shot = self.screenshot(&format!("timeout-{}", what.replace(' ', "-")));
                panic!(
                    "timed out waiting for {what}; the page says:\n{}\n(screenshot {})",
                    text.as_str().unwrap_or(""),
                    shot.display()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Clicks the first element matching `css`.
    pub fn click(&self, css: &str) {
        let ok = self.eval(&format!(
            "const e = document.querySelector({}); if (!e) return false; e.click(); return true;",
            Value::String(css.to_owned())
        ));
        assert_eq!(ok, Value::Bool(true), "no element matches {css}");
    }

    /// Types `text` into the element matching `css` (replacing its value) through the real
    /// keyboard path, so the page's input handlers run.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.call(
            "POST",
            &self.session_path("/element"),
            Some(&json!({"using": "css selector", "value": css})),
        );
        let id = id
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element matches {css}"))
            .to_owned();
        self.call(
            "POST",
            &self.session_path(&format!("/element/{id}/clear")),
            Some(&json!({})),
        );
        self.call(
            "POST",
            &self.session_path(&format!("/element/{id}/value")),
            Some(&json!({"text": text})),
        );
    }

    /// Writes a PNG of the window to `<shots>/<name>.png` and returns its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let v = self.call("GET", &self.session_path("/screenshot"), None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or(""))
            .unwrap();
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = webdriver(
                self.addr,
                "DELETE",
                &format!("/session/{}", self.session),
                b"",
            );
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
