"""A module registry (the `modules.v1` protocol) on the loopback over plain HTTP, serving
local bare git repositories: what scripts/monorepo-check and scripts/bench/module-lock
install registry modules from, offline.

Each module address `NS/NAME/SYSTEM` (lowercase) maps to a bare repository and its versions
(version -> tag). The registry answers:

  GET /.well-known/terraform.json           {"modules.v1": "/v1/modules/"}
  GET /v1/modules/NS/NAME/SYSTEM/versions   every version of the module
  GET /v1/modules/NS/NAME/SYSTEM/V/download 204, X-Terraform-Get: git::file://REPO?ref=TAG

and 404 to anything else; while `offline` is set, 503 to everything. Every request is
counted (`requests`), and appended to a request log when one is given.

As a library: `serve(modules)` returns a running `Server`. As a program (for shell scripts):

  python3 scripts/lib/module_registry.py CONFIG_JSON PORT_FILE REQUEST_LOG

CONFIG_JSON: {"NS/NAME/SYSTEM": {"repo": "/abs/bare.git", "versions": {"1.0.0": "v1.0.0"}}}.
Writes the port to PORT_FILE once listening, one line per request (`METHOD PATH`) to
REQUEST_LOG, and serves until killed.
"""

import http.server
import json
import os
import socketserver
import sys
import threading


class Server(socketserver.ThreadingTCPServer):
    """The registry's listening socket and what it knows; `port` is where it listens."""

    daemon_threads = True

    def __init__(self, modules, request_log=None):
        super().__init__(("127.0.0.1", 0), Handler)
        # "ns/name/system" -> (bare repository path, {version: tag})
        self.modules = modules
        self.request_log = request_log
        self.offline = False
        self.requests = 0
        self.lock = threading.Lock()

    @property
    def port(self):
        return self.server_address[1]

    def count(self, method, path):
        with self.lock:
            self.requests += 1
            if self.request_log is not None:
                with open(self.request_log, "a") as f:
                    f.write(f"{method} {path}\n")


class Handler(http.server.BaseHTTPRequestHandler):
    """One request of the module registry protocol."""

    def log_message(self, *args):
        pass

    def reply(self, code, body=None, headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        data = json.dumps(body).encode() if body is not None else b""
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.server.count("GET", self.path)
        if self.server.offline:
            return self.reply(503, {"errors": ["offline"]})
        path = self.path.split("?")[0]
        if path == "/.well-known/terraform.json":
            return self.reply(200, {"modules.v1": "/v1/modules/"})
        parts = path.strip("/").split("/")
        if parts[:2] != ["v1", "modules"] or len(parts) < 6:
            return self.reply(404, {"errors": ["not found"]})
        module = self.server.modules.get("/".join(p.lower() for p in parts[2:5]))
        if module is None:
            return self.reply(404, {"errors": ["not found"]})
        bare, versions = module
        if parts[5] == "versions" and len(parts) == 6:
            listed = [{"version": v} for v in versions]
            return self.reply(200, {"modules": [{"versions": listed}]})
        if len(parts) == 7 and parts[6] == "download" and parts[5] in versions:
            get = f"git::file://{bare}?ref={versions[parts[5]]}"
            return self.reply(204, None, [("X-Terraform-Get", get)])
        return self.reply(404, {"errors": ["not found"]})


def serve(modules, request_log=None):
    """A registry serving `modules` ("ns/name/system" -> (bare repo, {version: tag})) in a
    background thread; stop it with `.shutdown()`."""
    server = Server(modules, request_log)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def host_blocks(port, hosts=("registry.terraform.io", "registry.opentofu.org")):
    """CLI-config `host` blocks that send `hosts`' module registry to the one at `port`."""
    return "".join(
        f'host "{host}" {{\n  services = {{\n'
        f'    "modules.v1" = "http://127.0.0.1:{port}/v1/modules/"\n  }}\n}}\n'
        for host in hosts
    )


def main():
    config, port_file, request_log = sys.argv[1:4]
    with open(config) as f:
        modules = {k.lower(): (v["repo"], v["versions"]) for k, v in json.load(f).items()}
    server = Server(modules, request_log)
    open(request_log, "a").close()
    with open(port_file + ".tmp", "w") as f:
        f.write(f"{server.port}\n")
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
