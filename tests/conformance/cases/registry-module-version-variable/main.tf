variable "v" {
  default = "1.0.0"
}
module "m" {
  source  = "@@REGISTRY@@/acme/mod/null"
  version = var.v
}
