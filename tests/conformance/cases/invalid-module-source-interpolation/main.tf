variable "s" {
  default = "m"
}
module "m" {
  source = "./${var.s}"
}
