module "m" {
  source  = "@@REGISTRY@@/acme/mod/null"
  version = "=1.2.0-rc.1"
}
