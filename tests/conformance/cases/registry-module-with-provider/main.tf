module "m" {
  source  = "@@REGISTRY@@/acme/withnull/null"
  version = "1.0.0"
}
