# Sourced by the benchmarks that need TLS on loopback or an OCI registry (oci, module-mirror).
#
#   loopback_tls DIR      a CA and a certificate for localhost in DIR (ca.pem, server.pem,
#                         server.key), trusted through SSL_CERT_FILE (exported)
#   free_port             a free loopback port
#   start_oci_registry DIR
#                         Debian's docker-registry serving DIR/registry over HTTPS with
#                         DIR's certificate on a free port; sets reg_port and reg_pid, logs
#                         to DIR/registry.log (a line per request), returns once /v2/ answers

loopback_tls() {
    local b="$1"
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bench-ca \
        -keyout "$b/ca.key" -out "$b/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
        -keyout "$b/server.key" -out "$b/server.csr" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$b/san.ext"
    openssl x509 -req -in "$b/server.csr" -CA "$b/ca.pem" -CAkey "$b/ca.key" -CAcreateserial \
        -days 1 -extfile "$b/san.ext" -out "$b/server.pem" 2>/dev/null
    export SSL_CERT_FILE="$b/ca.pem"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_oci_registry() {
    local b="$1"
    command -v docker-registry >/dev/null || die "docker-registry is missing (apt-get install docker-registry)"
    reg_port=$(free_port)
    cat >"$b/registry.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $b/registry
http:
  addr: 127.0.0.1:$reg_port
  secret: bench
  tls:
    certificate: $b/server.pem
    key: $b/server.key
EOF
    docker-registry serve "$b/registry.yml" >"$b/registry.log" 2>&1 &
    reg_pid=$!
    for _ in $(seq 100); do
        curl -sf --cacert "$b/ca.pem" "https://localhost:$reg_port/v2/" >/dev/null && return 0
        sleep 0.1
    done
    die "docker-registry did not answer on port $reg_port"
}
