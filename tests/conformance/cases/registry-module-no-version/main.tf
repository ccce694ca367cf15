module "m" {
  source  = "@@REGISTRY@@/acme/mod/null"
}
