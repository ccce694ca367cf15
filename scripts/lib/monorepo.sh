# Sourced by the module benchmarks (module-lock, recursive, module-mirror): the monorepo they
# share. Expects `bench` (the benchmark's directory, with `pkg/`, `repos/` and `co/` made),
# `repos` (`$bench/repos`), `n` (roots) and `f` (data files per package); leaves the bare
# repositories in `$repos`, the loopback module registry running (`registry_pid`, `port`,
# its requests counted by `request_count`) with `TF_CLI_CONFIG_FILE` naming it, and the
# roots' sources in `$bench/co/src` (their names in `roots`).
#
# N roots, each calling 3 to 6 modules: git packages (local bare repositories,
# `git::file://…?ref=vX`) and registry modules (scripts/lib/module_registry.py over plain
# HTTP, through a CLI-config `host` block, whose downloads name those repositories), with
# nested calls inside the packages (registry → registry, git → git, git → registry → git)
# and a local module inside one. No providers: modules only.

# package NAME MAIN_TF TAG...: a bare repository $repos/NAME.git with one commit per TAG
# (main.tf is MAIN_TF, version.txt the tag) and F data files of 1 KiB.
package() {
    local name="$1" main="$2" tag
    shift 2
    local src="$bench/pkg/$name"
    mkdir -p "$src/data"
    git -C "$src" init -q -b main .
    for i in $(seq 1 "$f"); do head -c 768 /dev/urandom | base64 >"$src/data/f$i.txt"; done
    printf '%s' "$main" >"$src/main.tf"
    for tag in "$@"; do
        echo "$tag" >"$src/version.txt"
        git -C "$src" add -A && git -C "$src" commit -qm "$tag" && git -C "$src" tag "$tag"
    done
    git clone -q --bare "$src" "$repos/$name.git"
}
leaf='variable "tag" {
  default = "x"
}
output "id" {
  value = "${path.module}:${var.tag}"
}
'
package label "$leaf" v1.0.0 v1.1.0
package dns "$leaf" v1.0.0
mkdir -p "$bench/pkg/net/modules/subnet"
printf '%s' "$leaf" >"$bench/pkg/net/modules/subnet/main.tf"
package net 'module "label" {
  source  = "acme/label/null"
  version = "~> 1.0"
}
module "subnet" {
  source = "./modules/subnet"
}
output "id" {
  value = module.label.id
}
' v1.0.0 v1.1.0
package storage "module \"label\" {
  source = \"git::file://$repos/label.git?ref=v1.1.0\"
}
" v1.0.0
package compute 'module "storage" {
  source  = "acme/storage/null"
  version = ">= 1.0.0"
}
' v1.0.0

# The registry: acme/{label,net,storage}/null, every tag a version.
cat >"$bench/registry.json" <<EOF
{
  "acme/label/null": {"repo": "$repos/label.git", "versions": {"1.0.0": "v1.0.0", "1.1.0": "v1.1.0"}},
  "acme/net/null": {"repo": "$repos/net.git", "versions": {"1.0.0": "v1.0.0", "1.1.0": "v1.1.0"}},
  "acme/storage/null": {"repo": "$repos/storage.git", "versions": {"1.0.0": "v1.0.0"}}
}
EOF
requests="$bench/registry-requests.log"
python3 -B scripts/lib/module_registry.py "$bench/registry.json" "$bench/registry.port" "$requests" &
registry_pid=$!
for _ in $(seq 1 100); do [[ -s "$bench/registry.port" ]] && break; sleep 0.05; done
[[ -s "$bench/registry.port" ]] || die "the loopback registry did not start"
port=$(cat "$bench/registry.port")
python3 -B -c 'import sys; sys.path.insert(0, "scripts/lib"); import module_registry as r; print(r.host_blocks(int(sys.argv[1])), end="")' \
    "$port" >"$bench/cli.tfrc"
export TF_CLI_CONFIG_FILE="$bench/cli.tfrc"
request_count() { wc -l <"$requests"; }

# The monorepo's sources: root NN calls 3 to 6 modules.
roots=()
for i in $(seq 1 "$n"); do
    root=$(printf 'r%03d' "$i")
    roots+=("$root")
    dir="$bench/co/src/$root"
    mkdir -p "$dir"
    {
        printf 'module "net" {\n  source  = "acme/net/null"\n  version = "~> 1.0"\n}\n'
        printf 'module "storage" {\n  source = "git::file://%s/storage.git?ref=v1.0.0"\n}\n' "$repos"
        printf 'module "label" {\n  source  = "acme/label/null"\n  version = "1.1.0"\n}\n'
        ((i % 2 == 0)) && printf 'module "compute" {\n  source = "git::file://%s/compute.git?ref=v1.0.0"\n}\n' "$repos"
        ((i % 3 == 0)) && printf 'module "dns" {\n  source = "git::file://%s/dns.git?ref=v1.0.0"\n  tag    = "%s"\n}\n' "$repos" "$i"
        ((i % 5 == 0)) && printf 'module "label_old" {\n  source = "git::file://%s/label.git?ref=v1.0.0"\n}\n' "$repos"
        true
    } >"$dir/main.tf"
done
