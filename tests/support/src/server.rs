//! [`Server`]: a loopback HTTP/1.1 server for the registry and network mirror tests.
//!
//! Binds `127.0.0.1:0`, serves a fixed table of `path → response` on its own thread (one
//! short-lived thread per connection, `Connection: close`), logs every request, and stops
//! on drop. Tests reach it from tstore and terraform through `host` blocks of the CLI
//! configuration (plain HTTP) or as a network mirror URL.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One canned response.
#[derive(Clone, Debug)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: String,
    /// Body.
    pub body: Vec<u8>,
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct Request {
    /// The request path (with query).
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
}

type Routes = Arc<Mutex<HashMap<String, Response>>>;

/// A running loopback server; stopped when dropped.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    routes: Routes,
    log: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Start a server with no routes (every path answers 404).
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let routes: Routes = Arc::default();
        let log: Arc<Mutex<Vec<Request>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (routes, log, stop) = (routes.clone(), log.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (routes, log) = (routes.clone(), log.clone());
                    std::thread::spawn(move || {
                        let _ = serve(stream, &routes, &log);
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
        }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
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
            Response {
                status,
                content_type: content_type.to_owned(),
                body: body.into(),
            },
        );
    }

    /// The body served at `path`, if any.
    pub fn body(&self, path: &str) -> Option<Vec<u8>> {
        self.routes
            .lock()
            .unwrap()
            .get(path)
            .map(|r| r.body.clone())
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

fn serve(stream: TcpStream, routes: &Routes, log: &Mutex<Vec<Request>>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut authorization = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_owned());
            }
        }
    }
    log.lock().unwrap().push(Request {
        path: path.clone(),
        authorization,
    });
    let route_path = path.split('?').next().unwrap_or(&path).to_owned();
    let resp = routes
        .lock()
        .unwrap()
        .get(&route_path)
        .cloned()
        .unwrap_or(Response {
            status: 404,
            content_type: "application/json".into(),
            body: br#"{"errors":["Not Found"]}"#.to_vec(),
        });
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        resp.status,
        resp.content_type,
        resp.body.len()
    )?;
    stream.write_all(&resp.body)?;
    stream.flush()
}
