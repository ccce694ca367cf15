variable "a" {
  type    = string
  default = "x"
}
locals {
  b = upper(var.a)
}
output "c" {
  value = local.b
}
