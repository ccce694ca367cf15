module "m" {
  source  = "@@REGISTRY@@/acme/mod/null"
  version = "v1.2.0-rc.1"
}
