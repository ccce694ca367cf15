//! [`Server`]: a loopback HTTP/1.1 server for the registry and network mirror tests.
//!
//! Binds `127.0.0.1:0`, serves a fixed table of `path → response` on its own thread (one
//! short-lived thread per connection, `Connection: close`), logs every request, and stops
//! on drop. Tests reach it from tstore and terraform through `host` blocks of the CLI
//! configuration (plain HTTP) or as a network mirror URL.
//!
//! Conditional requests: a `200` route with an `ETag` (and/or `Last-Modified`) header, set
//! through [`Server::route_with_headers`] or [`Server::route_versioned`], answers `304 Not
//! Modified` (no body) to a GET or HEAD whose `If-None-Match` names that tag (weak
//! comparison, or `*`), or, with no `If-None-Match`, whose `If-Modified-Since` is exactly the
//! route's `Last-Modified`. The request log records each answer's status.
//!
//! [`Server::route_fallback`] answers every path no route names (a protocol whose paths are
//! not known in advance). A request's body, when it announces one with `Content-Length`, is
//! read and kept in the log ([`Request::body`]).
//!
//! [`Server::start_tls`] serves the same table over HTTPS with a certificate signed by a
//! [`TestCa`] made at test time (terraform 1.0.3 requires https for service discovery and
//! network mirrors); give its [`Server::ca`] PEM to tstore and terraform as `SSL_CERT_FILE`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::tls::TestCa;

/// One canned response.
#[derive(Clone, Debug)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: String,
    /// Body.
    pub body: Vec<u8>,
    /// Extra response headers (`X-Terraform-Get`, `Location`, ...), in order.
    pub headers: Vec<(String, String)>,
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct Request {
    /// The method (`GET`, `HEAD`, ...).
    pub method: String,
    /// The request path (with query).
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The `If-None-Match` header, if any.
    pub if_none_match: Option<String>,
    /// The `If-Modified-Since` header, if any.
    pub if_modified_since: Option<String>,
    /// The status the server answered (`304` for a conditional GET of an unchanged route).
    pub status: u16,
    /// The body (`PUT`, `POST`), as announced by `Content-Length`; empty otherwise.
    pub body: Vec<u8>,
}

/// A route's answer: canned, or computed from the request (a token service's).
#[derive(Clone)]
enum Answer {
    Canned(Response),
    Computed(Arc<dyn Fn(&Request) -> Response + Send + Sync>),
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Canned(r) => r.fmt(f),
            Answer::Computed(_) => f.write_str("Computed"),
        }
    }
}

/// The answer for the paths no route names.
const FALLBACK: &str = "\0fallback";

type Routes = Arc<Mutex<HashMap<String, Answer>>>;

/// A running loopback server; stopped when dropped.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    routes: Routes,
    log: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    ca: Option<TestCa>,
}

impl Server {
    /// Start a server with no routes (every path answers 404).
    pub fn start() -> Server {
        Server::start_with(None)
    }

    /// Start an HTTPS server with no routes, its certificate signed by a new [`TestCa`]
    /// and valid for `127.0.0.1`, `localhost` and `extra_names` (which tests may use as
    /// hosts that resolve to the loopback address, e.g. `localhost`). [`Server::url`] is
    /// `https://127.0.0.1:PORT`.
    pub fn start_tls(extra_names: &[&str]) -> Server {
        Server::start_with(Some(TestCa::new(extra_names)))
    }

    fn start_with(ca: Option<TestCa>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let routes: Routes = Arc::default();
        let log: Arc<Mutex<Vec<Request>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (routes, log, stop) = (routes.clone(), log.clone(), stop.clone());
            let tls = ca.as_ref().map(|ca| ca.server_config.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (routes, log, tls) = (routes.clone(), log.clone(), tls.clone());
                    std::thread::spawn(move || {
                        let timeout = Some(std::time::Duration::from_secs(30));
                        if stream.set_read_timeout(timeout).is_err() {
                            return;
                        }
                        let mut stream = stream;
                        match tls {
                            None => {
                                let _ = serve(&mut stream, &routes, &log);
                            }
                            Some(config) => {
                                let Ok(conn) = rustls::ServerConnection::new(config) else {
                                    return;
                                };
                                let mut tls = rustls::StreamOwned::new(conn, stream);
                                if serve(&mut tls, &routes, &log).is_ok() {
                                    tls.conn.send_close_notify();
                                    let _ = tls.flush();
                                }
                            }
                        }
                    });
                }
            })
        };
        Server {
            addr,
            routes,
            log,
            stop,
            thread: Some(thread),
            ca,
        }
    }

    /// `http://127.0.0.1:PORT` (`https://` for [`Server::start_tls`]), without a trailing
    /// slash.
    pub fn url(&self) -> String {
        let scheme = if self.ca.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The port the server listens on (on `127.0.0.1`).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The CA that signed an HTTPS server's certificate; `None` for plain HTTP.
    pub fn ca(&self) -> Option<&TestCa> {
        self.ca.as_ref()
    }

    /// Serve `body` with status 200 at `path` (replacing any earlier route).
    pub fn route(&self, path: &str, content_type: &str, body: impl Into<Vec<u8>>) {
        self.route_status(path, 200, content_type, body);
    }

    /// Serve `body` with `status` at `path`.
    pub fn route_status(
        &self,
        path: &str,
        status: u16,
        content_type: &str,
        body: impl Into<Vec<u8>>,
    ) {
        self.routes.lock().unwrap().insert(
            path.to_owned(),
            Answer::Canned(Response {
                status,
                content_type: content_type.to_owned(),
                body: body.into(),
                headers: Vec::new(),
            }),
        );
    }

    /// Serve `status` with extra `headers` and `body` at `path`: e.g. the module registry's
    /// `204 No Content` + `X-Terraform-Get: ADDRESS` download answer, or a page answering
    /// `?terraform-get=1` with that header. A `HEAD` gets the same status and headers.
    pub fn route_with_headers(
        &self,
        path: &str,
        status: u16,
        headers: &[(&str, &str)],
        body: impl Into<Vec<u8>>,
    ) {
        let mut content_type = "text/plain".to_owned();
        let mut extra = Vec::new();
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("content-type") {
                content_type = (*value).to_owned();
            } else {
                extra.push(((*name).to_owned(), (*value).to_owned()));
            }
        }
        self.routes.lock().unwrap().insert(
            path.to_owned(),
            Answer::Canned(Response {
                status,
                content_type,
                body: body.into(),
                headers: extra,
            }),
        );
    }

    /// Answer requests for `path` (whatever their query) with what `answer` computes from
    /// each one: a token service, say. The request passed has `status` 0.
    pub fn route_fn(
        &self,
        path: &str,
        answer: impl Fn(&Request) -> Response + Send + Sync + 'static,
    ) {
        self.routes
            .lock()
            .unwrap()
            .insert(path.to_owned(), Answer::Computed(Arc::new(answer)));
    }

    /// Answer every request whose path no route names with what `answer` computes from it
    /// (instead of 404).
    pub fn route_fallback(&self, answer: impl Fn(&Request) -> Response + Send + Sync + 'static) {
        self.routes
            .lock()
            .unwrap()
            .insert(FALLBACK.to_owned(), Answer::Computed(Arc::new(answer)));
    }

    /// Answer every request with `status` from now on, whatever its path (an origin that
    /// went down: every route dropped).
    pub fn fail_all(&self, status: u16) {
        self.routes.lock().unwrap().clear();
        self.route_fallback(move |_| Response {
            status,
            content_type: "text/plain".into(),
            body: b"unavailable\n".to_vec(),
            headers: Vec::new(),
        });
    }

    /// Serve `body` with status 200 at `path` with a strong `ETag` derived from the bytes
    /// (so new bytes get a new tag) and, when given, `Last-Modified`; conditional requests
    /// for the same tag (or date) answer `304`. Returns the `ETag`.
    pub fn route_versioned(
        &self,
        path: &str,
        content_type: &str,
        body: impl Into<Vec<u8>>,
        last_modified: Option<&str>,
    ) -> String {
        let body = body.into();
        let etag = etag_of(&body);
        let mut headers = vec![("Content-Type", content_type), ("ETag", etag.as_str())];
        if let Some(lm) = last_modified {
            headers.push(("Last-Modified", lm));
        }
        self.route_with_headers(path, 200, &headers, body);
        etag
    }

    /// The body served at `path`, if any.
    pub fn body(&self, path: &str) -> Option<Vec<u8>> {
        self.routes.lock().unwrap().get(path).and_then(|a| match a {
            Answer::Canned(r) => Some(r.body.clone()),
            Answer::Computed(_) => None,
        })
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(
    stream: &mut (impl Read + Write),
    routes: &Routes,
    log: &Mutex<Vec<Request>>,
) -> std::io::Result<()> {
    // Once the head and the body it announces are read, the rest of the exchange is writing.
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let method = line.split_whitespace().next().unwrap_or("GET").to_owned();
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let (mut authorization, mut if_none_match, mut if_modified_since) = (None, None, None);
    let mut content_length = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let slot = match name.trim().to_ascii_lowercase().as_str() {
                "authorization" => &mut authorization,
                "if-none-match" => &mut if_none_match,
                "if-modified-since" => &mut if_modified_since,
                "content-length" => &mut content_length,
                _ => continue,
            };
            *slot = Some(value.trim().to_owned());
        }
    }
    let length = content_length
        .and_then(|l| l.parse::<u64>().ok())
        .unwrap_or(0);
    let mut body = Vec::new();
    (&mut reader).take(length).read_to_end(&mut body)?;
    let route_path = path.split('?').next().unwrap_or(&path).to_owned();
    let answer = {
        let routes = routes.lock().unwrap();
        routes
            .get(&route_path)
            .or_else(|| routes.get(FALLBACK))
            .cloned()
    };
    let mut request = Request {
        method: method.clone(),
        path: path.clone(),
        authorization,
        if_none_match,
        if_modified_since,
        status: 0,
        body,
    };
    let mut resp = match answer {
        Some(Answer::Canned(resp)) => resp,
        Some(Answer::Computed(answer)) => answer(&request),
        None => Response {
            status: 404,
            content_type: "application/json".into(),
            body: br#"{"errors":["Not Found"]}"#.to_vec(),
            headers: Vec::new(),
        },
    };
    if resp.status == 200
        && (method == "GET" || method == "HEAD")
        && not_modified(
            &resp,
            request.if_none_match.as_deref(),
            request.if_modified_since.as_deref(),
        )
    {
        resp.status = 304;
        resp.body.clear();
        resp.headers.retain(|(n, _)| {
            n.eq_ignore_ascii_case("etag") || n.eq_ignore_ascii_case("last-modified")
        });
    }
    request.status = resp.status;
    log.lock().unwrap().push(request);
    let mut head = format!("HTTP/1.1 {} {}\r\n", resp.status, reason(resp.status));
    // A 204 (and any 1xx/304) has no body and must not announce one.
    let bodyless = resp.status == 204 || resp.status == 304 || resp.status < 200;
    if !bodyless {
        head.push_str(&format!(
            "Content-Type: {}\r\nContent-Length: {}\r\n",
            resp.content_type,
            resp.body.len()
        ));
    }
    for (name, value) in &resp.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut out = head.into_bytes();
    if !bodyless && method != "HEAD" {
        out.extend_from_slice(&resp.body);
    }
    let stream = reader.get_mut();
    stream.write_all(&out)?;
    stream.flush()
}

/// A strong `ETag` for `body`: new bytes, new tag.
pub fn etag_of(body: &[u8]) -> String {
    use sha2::Digest as _;
    format!("\"{}\"", &hex::encode(sha2::Sha256::digest(body))[..16])
}

/// Whether a conditional request's validators match `resp` (RFC 9110 §13.1.1-2: weak
/// comparison for `If-None-Match`, which takes precedence over `If-Modified-Since`; dates are
/// compared as strings, which is enough for tests that send back what they were given).
fn not_modified(
    resp: &Response,
    if_none_match: Option<&str>,
    if_modified_since: Option<&str>,
) -> bool {
    let header = |name: &str| {
        resp.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let weak = |t: &str| t.trim().trim_start_matches("W/").to_owned();
    match (if_none_match, if_modified_since) {
        (Some(inm), _) => header("ETag").is_some_and(|etag| {
            inm.split(',')
                .any(|t| t.trim() == "*" || weak(t) == weak(etag))
        }),
        (None, Some(ims)) => header("Last-Modified").is_some_and(|lm| lm == ims),
        (None, None) => false,
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        401 => "Unauthorized",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => "X",
    }
}
